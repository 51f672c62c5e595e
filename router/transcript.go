package router

import (
	"fmt"

	"github.com/ollama/ollama/api"

	"toolrouter/prompts"
)

// transcript is what the model has been told so far in one request: the system prompt, the
// history and the query, then per round the model's answer and what its calls returned (as the
// prompts show them, possibly trimmed). Only the loop's goroutine changes it, between rounds;
// calls of a round read it.
type transcript struct {
	base       []api.Message   // system prompt, history, query
	cutHistory int             // history messages dropped to fit the window
	rounds     []roundLog      // what each round added after base
	priors     []prompts.Prior // each call's result as prompts show it (index step-1), possibly trimmed
	// pending are the last round's calls, not yet in priors: they are rendered when a prompt
	// first needs them (allPriors), so a request that ends with the round renders none.
	pending []Call
	// mark is the request's boundary around tool results (prompts.Data).
	mark string

	// Room for base without history and for the first rounds, in the transcript's allocation.
	baseRoom  [2]api.Message
	roundRoom [2]roundLog
}

// roundLog is what one round added to the transcript.
type roundLog struct {
	answer    string         // the model's answer, as it wrote it
	toolCalls []api.ToolCall // native mode: the model's tool calls made
	steps     []int          // the calls made, by step; nil until the round's calls finished
	remaining int            // the budget left after the round, as the follow-up says
}

// start starts t, a zero transcript: the system prompt, the history, the query last.
func (t *transcript) start(system string, history []Message, query string) {
	base := t.baseRoom[:0]
	if len(history) > 0 {
		base = make([]api.Message, 0, len(history)+2)
	}
	t.rounds = t.roundRoom[:0]
	base = append(base, api.Message{Role: "system", Content: system})
	for _, h := range history {
		base = append(base, api.Message{Role: h.Role, Content: h.Content})
	}
	t.base = append(base, api.Message{Role: "user", Content: query})
	t.mark = prompts.NewMark()
}

// dropHistory drops the oldest history message (a shrinker for fit).
func (t *transcript) dropHistory(int) (string, bool) {
	if len(t.base) <= 2 {
		return "", false
	}
	t.base = append(t.base[:1], t.base[2:]...)
	t.cutHistory++
	return fmt.Sprintf("oldest history message dropped (%d so far)", t.cutHistory), true
}

// answered adds the model's answer that opens a round; toolCalls are the native calls made of it.
func (t *transcript) answered(answer string, toolCalls []api.ToolCall) {
	t.rounds = append(t.rounds, roundLog{answer: answer, toolCalls: toolCalls})
}

// results closes the current round with its calls, in step order, and the budget left.
func (t *transcript) results(calls []Call, remaining int) {
	rl := &t.rounds[len(t.rounds)-1]
	rl.steps = make([]int, len(calls))
	for i := range calls {
		rl.steps[i] = calls[i].Step
	}
	rl.remaining = remaining
	t.flush()
	t.pending = calls
}

// allPriors returns the prior of every finished call, by step.
func (t *transcript) allPriors() []prompts.Prior {
	t.flush()
	return t.priors
}

// flush renders the pending calls' priors.
func (t *transcript) flush() {
	for i := range t.pending {
		p := priorOf(&t.pending[i])
		p.Mark = t.mark
		t.priors = append(t.priors, p)
	}
	t.pending = nil
}

// selectMessages is the phase-1 transcript: base, then for each finished round the model's
// selection and a follow-up with what its calls returned.
func (t *transcript) selectMessages() ([]api.Message, error) {
	msgs := append([]api.Message(nil), t.base...)
	for _, rl := range t.rounds {
		if rl.steps == nil {
			continue
		}
		follow, err := prompts.SelectFollowup(t.priorsOf(rl.steps), rl.remaining)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, api.Message{Role: "assistant", Content: rl.answer}, api.Message{Role: "user", Content: follow})
	}
	return msgs, nil
}

// nativeMessages is the native transcript: base, then per round the model's tool calls and one
// tool message per call with its result.
func (t *transcript) nativeMessages() []api.Message {
	msgs := append([]api.Message(nil), t.base...)
	for _, rl := range t.rounds {
		if rl.steps == nil {
			continue
		}
		msgs = append(msgs, api.Message{Role: "assistant", Content: rl.answer, ToolCalls: rl.toolCalls})
		priors := t.allPriors()
		for i, s := range rl.steps {
			p := priors[s-1]
			text := p.Text
			if p.Failed {
				text = "Error: " + text
			}
			msgs = append(msgs, api.Message{Role: "tool", Content: prompts.Data(p.Mark, text), ToolName: rl.toolCalls[i].Function.Name})
		}
	}
	return msgs
}

func (t *transcript) priorsOf(steps []int) []prompts.Prior {
	priors := t.allPriors()
	out := make([]prompts.Prior, 0, len(steps))
	for _, s := range steps {
		out = append(out, priors[s-1])
	}
	return out
}

// priorOf is how a finished call appears in later prompts.
func priorOf(c *Call) prompts.Prior {
	p := prompts.Prior{Step: c.Step, Tool: qualified(c), Arguments: string(marshal(c.Arguments))}
	if p.Arguments == "" || p.Arguments == "null" {
		p.Arguments = "{}"
	}
	switch {
	case c.Error != nil:
		p.Text, p.Failed = c.Error.Message, true
	case c.Result == nil:
		p.Text, p.Failed = "no result", true
	default:
		p.Text, p.Failed = c.Result.Text, c.Result.IsError
		if p.Text == "" && c.Result.Structured != nil {
			p.Text = string(marshal(c.Result.Structured))
		}
	}
	return p
}
