package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ollama/ollama/api"
)

// ErrNoDone means the model's answer ended before the server said it was done.
var ErrNoDone = errors.New("model response ended before it was done")

// ErrInputTooLong means the model server refused the prompt as longer than the model's context
// window: Ollama's 400 when truncation is off (see inputTooLong), or an OpenAI-compatible 400 with
// code context_length_exceeded. The server's error is wrapped beside it.
var ErrInputTooLong = errors.New("prompt longer than the model's context window")

// inputTooLong are the messages of Ollama's 400 for a prompt over num_ctx when truncation is off:
// its own (before v0.34, and still for embeddings), then llama-server's, which v0.34 passes on for
// chats (llm/llama_server.go Completion: the body of llama-server's 400, "request (N tokens)
// exceeds the available context size (M tokens), try increasing it"), then the one it sends when
// truncation is on but the model cannot shift its context.
var inputTooLong = []string{
	"input length exceeds the context length",
	"exceeds the available context size",
	"the prompt is longer than the context length",
}

// tooLong reports whether err is the server's refusal of a prompt over the window.
func tooLong(err error) bool {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.StatusCode == http.StatusBadRequest && ae.Code == "context_length_exceeded"
	}
	var se api.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusBadRequest {
		return false
	}
	for _, m := range inputTooLong {
		if strings.Contains(se.ErrorMessage, m) {
			return true
		}
	}
	return false
}

// Breakdown is where one model call's time went, as the server measured it, and how much of its
// prompt the server computed; the breakdowns of several calls add up field by field (Add).
type Breakdown struct {
	// LoadMS is the time spent loading the model (load_duration).
	LoadMS float64 `json:"load_ms"`
	// PrefillMS is the time spent evaluating the prompt's uncached tokens (prompt_eval_duration).
	PrefillMS float64 `json:"prefill_ms"`
	// DecodeMS is the time spent generating the answer (eval_duration).
	DecodeMS float64 `json:"decode_ms"`
	// RestMS is the rest of the server's time: total_duration − load − prefill − decode, never
	// below 0 (templating, tokenizing, queueing for a slot, parsing the answer).
	RestMS float64 `json:"rest_ms"`
	// UncachedTokens are the prompt tokens the server evaluated, not served from its prompt cache.
	UncachedTokens int `json:"uncached_prompt_tokens"`
}

// Add adds o to b.
func (b *Breakdown) Add(o Breakdown) {
	b.LoadMS += o.LoadMS
	b.PrefillMS += o.PrefillMS
	b.DecodeMS += o.DecodeMS
	b.RestMS += o.RestMS
	b.UncachedTokens += o.UncachedTokens
}

// Stats are one model call's costs, from the server's final message. A server that reports no
// durations (OpenAI-compatible servers) leaves them 0.
type Stats struct {
	// PromptTokens is the whole prompt (prompt_eval_count), cached tokens included: Ollama counts
	// them so since v0.34, and OpenAI's usage.prompt_tokens always has.
	PromptTokens int `json:"prompt_tokens"`
	// DecodeTokens are the tokens generated (eval_count).
	DecodeTokens int `json:"decode_tokens"`
	// TotalMS is the server's time for the call (total_duration).
	TotalMS float64 `json:"total_ms"`
	// Breakdown splits TotalMS. Its UncachedTokens is PromptTokens less the cached ones
	// (prompt_eval_cached_count, OpenAI's usage.prompt_tokens_details.cached_tokens); a server
	// that does not say how many were cached (Ollama before v0.34, most OpenAI-compatible
	// servers) has all of them uncached: UncachedTokens = PromptTokens.
	Breakdown
}

// StatsOf reads a final message's metrics.
func StatsOf(m api.Metrics) Stats {
	rest := max(m.TotalDuration-m.LoadDuration-m.PromptEvalDuration-m.EvalDuration, 0)
	s := Stats{
		PromptTokens: m.PromptEvalCount,
		DecodeTokens: m.EvalCount,
		TotalMS:      millis(m.TotalDuration),
		Breakdown: Breakdown{
			LoadMS:         millis(m.LoadDuration),
			PrefillMS:      millis(m.PromptEvalDuration),
			DecodeMS:       millis(m.EvalDuration),
			RestMS:         millis(rest),
			UncachedTokens: m.PromptEvalCount,
		},
	}
	if c := m.PromptEvalCachedCount; c != nil {
		s.UncachedTokens = max(m.PromptEvalCount-*c, 0)
	}
	return s
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Answer is one model call's whole answer and what it cost.
type Answer struct {
	Text, Thinking string
	ToolCalls      []api.ToolCall
	// Logprobs are the answer tokens' log probabilities, when the request asked for them.
	Logprobs []api.Logprob
	// DoneReason is the server's ("stop", "length", …).
	DoneReason string
	// Model is the model that answered, as the server names it (the request's when it does not).
	Model string
	Stats Stats
	// Wall is the call's wall time, as the caller saw it.
	Wall time.Duration
}

// CallOptions shape one Call; the zero value works.
type CallOptions struct {
	// MaxResponseBytes bounds the answer: its text, thinking, tool calls and logprobs, summed over
	// the messages of a stream (<= 0: DefaultMaxResponseBytes). Past it Call
	// stops reading and fails with ErrResponseTooLarge, whatever the Chatter bounds itself.
	MaxResponseBytes int
	// OnText, when set, receives each piece of answer text as it arrives.
	OnText func(string)
	// OnThinking, when set, receives each piece of the model's thinking as it arrives.
	OnThinking func(string)
}

// Call sends req through c and gathers the answer: text, thinking, tool calls and logprobs over
// every message, the final message's metrics. It fails
//   - with ctx's cause (context.Cause) when ctx ended;
//   - with ErrInputTooLong when the server refused the prompt as over the context window;
//   - with ErrResponseTooLarge past o.MaxResponseBytes;
//   - with ErrNoDone when the answer ended without the server's final message: never a silently
//     truncated answer.
//
// Errors are not prefixed with the model: callers say which model they called. The Answer holds
// what arrived, even on error.
func Call(ctx context.Context, c Chatter, req *api.ChatRequest, o CallOptions) (Answer, error) {
	// One allocation holds the whole state the response function fills in.
	g := &gathering{a: Answer{Model: req.Model}, o: o, meter: newMeter(o.MaxResponseBytes)}
	start := time.Now()
	err := c.Chat(ctx, req, g.add)
	a := g.a
	a.Wall = time.Since(start)
	a.Text, a.Thinking = g.text.String(), g.thinking.String()
	switch {
	case err != nil && ctx.Err() != nil:
		return a, context.Cause(ctx)
	case err != nil && tooLong(err):
		return a, fmt.Errorf("%w: %w", ErrInputTooLong, err)
	case err != nil:
		return a, err
	case !g.done:
		return a, ErrNoDone
	}
	return a, nil
}

// gathering is one Call's answer as its messages arrive.
type gathering struct {
	a              Answer
	o              CallOptions
	meter          Meter
	text, thinking joined
	done           bool
}

// add takes one message of the answer (the Chatter's response function).
func (g *gathering) add(r api.ChatResponse) error {
	if err := g.meter.Add(r.Message); err != nil {
		return err
	}
	if err := g.meter.addLogprobs(r.Logprobs); err != nil {
		return err
	}
	if r.Message.Content != "" {
		g.text.add(r.Message.Content)
		if g.o.OnText != nil {
			g.o.OnText(r.Message.Content)
		}
	}
	if r.Message.Thinking != "" {
		g.thinking.add(r.Message.Thinking)
		if g.o.OnThinking != nil {
			g.o.OnThinking(r.Message.Thinking)
		}
	}
	g.a.ToolCalls = append(g.a.ToolCalls, r.Message.ToolCalls...)
	g.a.Logprobs = append(g.a.Logprobs, r.Logprobs...)
	if r.Done {
		g.done = true
		g.a.DoneReason, g.a.Stats = r.DoneReason, StatsOf(r.Metrics)
		if r.Model != "" {
			g.a.Model = r.Model
		}
	}
	return nil
}

// joined concatenates pieces of text; a single piece (a whole non-streamed answer) is kept as
// it came, without a copy.
type joined struct {
	first string
	rest  strings.Builder // every piece, once there is more than one
	n     int
}

func (j *joined) add(s string) {
	switch j.n {
	case 0:
		j.first = s
	case 1:
		j.rest.WriteString(j.first)
		fallthrough
	default:
		j.rest.WriteString(s)
	}
	j.n++
}

func (j *joined) String() string {
	if j.n <= 1 {
		return j.first
	}
	return j.rest.String()
}
