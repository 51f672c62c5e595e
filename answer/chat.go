package answer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/access"
	"toolrouter/council"
	"toolrouter/observe"
	"toolrouter/prompts"
	"toolrouter/provider"
	"toolrouter/router"
	"toolrouter/schema"
)

// CouncilModel is the model name that has the council answer a chat completion.
const CouncilModel = "council"

// Completer makes one chat completion with the named model (NewCompleter makes one over the
// configured providers). Check says, before anything runs for the request, whether a model name
// can answer: nil, an error wrapping ErrUnknownModel, or another error when its provider could
// not say. Complete calls onDelta, when not nil, with each piece of the answer's text and
// thinking as it comes; it bounds the answer's size. A model its provider does not have is an
// error wrapping ErrUnknownModel.
type Completer interface {
	Check(ctx context.Context, model string) error
	Complete(ctx context.Context, req CompletionRequest, onDelta func(Delta)) (Completion, error)
}

// Delta is one piece of a streamed answer: text or thinking (one of them set).
type Delta struct {
	Text, Thinking string
}

// CompletionRequest is one completion: the model's name as the client gave it, the messages, the
// client's tools (nil: none), model options in Ollama's names (temperature, top_p, num_predict,
// stop, seed, frequency_penalty, presence_penalty), and Ollama's format and think (nil: not set).
type CompletionRequest struct {
	Model    string
	Messages []api.Message
	Tools    api.Tools
	Options  map[string]any
	// Format is Ollama's format: "json" or a JSON Schema.
	Format json.RawMessage
	// Think is Ollama's think: false, or a level "low", "medium", "high".
	Think *api.ThinkValue
	// KeepAlive is Ollama's keep_alive for the answering model (nil: ollama.keep_alive's).
	KeepAlive *api.Duration
}

// Completion is a finished completion.
type Completion struct {
	Text string
	// Thinking is the model's reasoning, apart from its answer ("" when it gave none).
	Thinking  string
	ToolCalls []api.ToolCall
	// FinishReason is OpenAI's: "stop", "length" or "tool_calls".
	FinishReason string
	// Stats are the call's tokens and server-side times (provider.Call's).
	Stats provider.Stats
}

// ChatRequest is a checked chat completion in Ollama's types: what a front door decoded.
type ChatRequest struct {
	Model    string
	Messages []api.Message
	// Last is the index in Messages of the last user message, the one routed.
	Last int
	// Tools are the client's own tools; not nil means the answer is chosen among them (client.go)
	// and nothing of the inventory is routed.
	Tools api.Tools
	// Schemas, when not nil, are Tools' parameters as the client sent them, by index (Ollama's
	// types keep only part of a schema); nil: Tools' own.
	Schemas []json.RawMessage
	// The client's tool_choice and parallel_tool_calls; the zero values are OpenAI's defaults:
	// the model chooses, "no tool" included, and may make several calls.
	// NoTools withholds Tools from the model (tool_choice "none"): it answers in text.
	NoTools bool
	// RequireTool leaves "no tool" out (tool_choice "required").
	RequireTool bool
	// ToolName, when set, is the one function called (a named tool_choice).
	ToolName string
	// OneCall allows one call (parallel_tool_calls false).
	OneCall bool
	Options map[string]any
	Format  json.RawMessage
	Think   *api.ThinkValue
	// KeepAlive is how long an Ollama answering model stays loaded (Ollama's keep_alive; nil:
	// ollama.keep_alive's).
	KeepAlive *api.Duration
}

// Tokens is a chat completion's token use (OpenAI's usage object).
type Tokens struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func tokens(prompt, completion int) Tokens {
	return Tokens{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
}

// CompletionUsage is the answering model's call: its tokens and the split of the server's time.
type CompletionUsage struct {
	Tokens
	provider.Breakdown
}

// Chat modes: how a chat completion was answered.
const (
	// ModeRouted: tools routed, the named model answered with their results as evidence.
	ModeRouted = "routed"
	// ModeCouncil: the council answered (model "council").
	ModeCouncil = "council"
)

// ChatTrace is how a chat completion was answered (the OpenAI door's x_toolrouter field).
type ChatTrace struct {
	Mode string `json:"mode"`
	// AnsweredBy, in ModeCouncil, says who wrote the answer: "council" (the chairman),
	// "fallback" (the chairman failed: a member's answer; see council.chairman_error) or
	// "approval_required".
	AnsweredBy string          `json:"answered_by,omitempty"`
	Routing    *router.Outcome `json:"routing,omitempty"`
	Council    *council.Result `json:"council,omitempty"`
	// CompletionUsage is the answering model's call, apart from the routing's (in routing.usage)
	// and the council's (in council.usage).
	CompletionUsage *CompletionUsage `json:"completion_usage,omitempty"`
}

// ChatResult is a chat completion's answer, and what it did for the request's report.
type ChatResult struct {
	Text string
	// Thinking is the answering model's reasoning.
	Thinking  string
	ToolCalls []api.ToolCall
	// Finish is OpenAI's finish_reason.
	Finish string
	Usage  Tokens
	Trace  ChatTrace
	// Answered is the council's answer, in ModeCouncil.
	Answered *Response
	// Calls are the model calls made beyond the routing's and the council's: the completion's.
	Calls []observe.ModelCall
}

// Chat answers chat completions: with calls of the client's own tools (client.go), by the
// council, or by the named model with the routed tools' results as evidence.
type Chat struct {
	Router    Router
	Answers   *Service
	Completer Completer // nil: only model "council" answers
	// MaxEvidenceBytes bounds each tool result the answering model is shown, as the council's;
	// negative shows results whole.
	MaxEvidenceBytes int
	// CheckTimeout bounds Check's question to the provider.
	CheckTimeout time.Duration
	// Deliberation is what a streamed council completion shows as reasoning.
	Deliberation Deliberation
	// SchemaBounds bound each of a request's own functions' parameters (zero: the servers'
	// max_schema_bytes and max_schema_depth defaults).
	SchemaBounds schema.Bounds
}

// Check is the one place a chat completion's model name is found known or not, before the
// request is routed: "council" is the council, which must be configured; any other name is the
// Completer's to check, within CheckTimeout. An unknown model is ErrUnknownModel, a provider that
// cannot say ErrCompletion (or a deadline).
func (c *Chat) Check(ctx context.Context, model string) error {
	if model == CouncilModel {
		if c.Answers.Check(Always) != nil {
			return ErrNoCouncilModel
		}
		return nil
	}
	if c.Completer == nil {
		return ErrNoCompleter
	}
	if c.CheckTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.CheckTimeout)
		defer cancel()
	}
	switch err := c.Completer.Check(ctx, model); {
	case errors.Is(err, ErrUnknownModel):
		return fmt.Errorf("checking the model: %w", err)
	case err != nil:
		return fmt.Errorf("%w: checking the model: %w", ErrCompletion, err)
	}
	return nil
}

// Run answers in for id. onDelta, when not nil, gets the answer's text and thinking as they come:
// for model "council", the chairman's words as it writes them and, before them, the deliberation
// as thinking (see Deliberation).
// The result is never nil: on an error it holds what was done, for the request's report.
func (c *Chat) Run(ctx context.Context, in ChatRequest, id access.Identity, onDelta func(Delta)) (*ChatResult, error) {
	res := &ChatResult{}
	if in.Tools != nil {
		return res, c.runClientTools(ctx, res, in, id, onDelta)
	}
	req := router.Request{Query: in.Messages[in.Last].Content, Identity: id}
	for _, m := range in.Messages[:in.Last] {
		if m.Role == "user" || m.Role == "assistant" {
			req.History = append(req.History, router.Message{Role: m.Role, Content: m.Content})
		}
	}
	if in.Model == CouncilModel {
		res.Trace.Mode = ModeCouncil
		var emit func(Event)
		var stream *councilStream
		if onDelta != nil {
			// The chairman's words go out as it writes them, the deliberation before them as
			// reasoning.
			stream = &councilStream{onDelta: onDelta, reasoning: c.Deliberation.shows(in.Think), names: c.Deliberation.Names}
			emit = stream.event
		}
		out, err := c.Answers.Run(ctx, req, Always, emit)
		res.Answered = out
		if out != nil {
			res.Trace.Routing, res.Trace.Council, res.Trace.AnsweredBy = out.Routing, out.Council, out.AnsweredBy
		}
		if err != nil {
			return res, err
		}
		res.Text, res.Finish = out.Final, "stop"
		res.Usage = tokens(out.Usage.Total.PromptTokens, out.Usage.Total.CompletionTokens)
		if stream != nil && !stream.sentText && res.Text != "" {
			onDelta(Delta{Text: res.Text})
		}
		return res, nil
	}
	res.Trace.Mode = ModeRouted
	out, err := c.Router.Route(ctx, req)
	res.Trace.Routing = out
	if err != nil {
		return res, err
	}
	if len(out.Pending) > 0 {
		// Nothing is answered from a partial set of results: the answer names what awaits approval.
		res.Text, res.Finish = AwaitingApproval(out), "stop"
		res.Usage = tokens(out.Usage.PromptTokens, out.Usage.CompletionTokens)
		if onDelta != nil {
			onDelta(Delta{Text: res.Text})
		}
		return res, nil
	}
	msgs, err := c.withEvidence(in.Messages, out)
	if err != nil {
		return res, err
	}
	if err := c.complete(ctx, res, CompletionRequest{Model: in.Model, Messages: msgs, Options: in.Options, Format: in.Format, Think: in.Think, KeepAlive: in.KeepAlive}, onDelta); err != nil {
		return res, err
	}
	res.Usage = tokens(res.Usage.PromptTokens+out.Usage.PromptTokens, res.Usage.CompletionTokens+out.Usage.CompletionTokens)
	return res, nil
}

// withEvidence returns msgs with the tool results as a system message after the leading system
// messages: each result shortened to MaxEvidenceBytes, as the council sees them.
func (c *Chat) withEvidence(msgs []api.Message, out *router.Outcome) ([]api.Message, error) {
	text, err := prompts.CompletionEvidence(council.PromptEvidence(Evidence(out), c.MaxEvidenceBytes))
	if err != nil {
		return nil, err
	}
	at := slices.IndexFunc(msgs, func(m api.Message) bool { return m.Role != "system" })
	return slices.Insert(slices.Clone(msgs), at, api.Message{Role: "system", Content: text}), nil
}

// complete makes the completion call into res.
func (c *Chat) complete(ctx context.Context, res *ChatResult, req CompletionRequest, onDelta func(Delta)) error {
	if c.Completer == nil {
		return ErrNoCompleter
	}
	start := time.Now()
	comp, err := c.Completer.Complete(ctx, req, onDelta)
	call := observe.ModelCall{Phase: "completion", Model: req.Model, Start: start, Duration: time.Since(start),
		PromptTokens: comp.Stats.PromptTokens, CompletionTokens: comp.Stats.DecodeTokens, Breakdown: comp.Stats.Breakdown}
	if err != nil {
		call.Err = err.Error()
	}
	res.Calls = append(res.Calls, call)
	if err != nil {
		if errors.Is(err, ErrUnknownModel) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return fmt.Errorf("completion: %w", err)
		}
		return fmt.Errorf("%w: %w", ErrCompletion, err)
	}
	cu := tokens(comp.Stats.PromptTokens, comp.Stats.DecodeTokens)
	res.Text, res.Thinking, res.ToolCalls, res.Finish, res.Usage = comp.Text, comp.Thinking, comp.ToolCalls, comp.FinishReason, cu
	res.Trace.CompletionUsage = &CompletionUsage{Tokens: cu, Breakdown: comp.Stats.Breakdown}
	switch {
	case len(res.ToolCalls) > 0:
		res.Finish = "tool_calls"
	case res.Finish == "":
		res.Finish = "stop"
	}
	return nil
}
