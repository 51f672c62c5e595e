package router

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ollama/ollama/api"

	"toolrouter/prompts"
)

// defaultNumCtx is Ollama's own context size when options set none.
const defaultNumCtx = 2048

// minTrimmed is the shortest a result is cut to.
const minTrimmed = 200

// numCtx is the model's context window from the options.
func (r *Router) numCtx() int {
	switch v := r.set.Options["num_ctx"].(type) {
	case int:
		return v
	case int64:
		return int(v)
	case float64:
		return int(v)
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return int(n)
		}
	}
	return defaultNumCtx
}

// window is the model's context window: num_ctx and the prompt size, in estimated tokens, that
// leaves ContextReserve for the answer.
type window struct {
	numCtx, limit int
}

func (r *Router) window() window {
	n := r.numCtx()
	return window{numCtx: n, limit: max(n-r.set.ContextReserve, 256)}
}

// estimateTokens over-estimates a prompt's tokens (three bytes a token, plus each message's
// framing), so that trimming happens before Ollama would silently drop the front of the prompt.
func estimateTokens(msgs []api.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content)/3 + 8
	}
	return n
}

// fit renders the messages and, while they would not fit the context window, shortens the oldest
// of the results the prompt shows (priors, shortened in place) keeping their head and tail, and
// renders again. Trimming is recorded in the trace and the outcome.
func (w window) fit(j *journal, round int, priors []prompts.Prior, render func() ([]api.Message, error)) ([]api.Message, error) {
	limit := w.limit
	var cut []string
	for {
		msgs, err := render()
		if err != nil {
			return nil, err
		}
		est := estimateTokens(msgs)
		if est <= limit {
			if len(cut) > 0 {
				j.trimmed(round, fmt.Sprintf("%s to fit %d of num_ctx %d (estimated %d tokens)", strings.Join(cut, "; "), limit, w.numCtx, est))
			}
			return msgs, nil
		}
		i := oldestLong(priors)
		if i < 0 {
			if len(cut) > 0 {
				j.trimmed(round, strings.Join(cut, "; ")+"; still over the window")
			}
			return msgs, nil
		}
		before := len(priors[i].Text)
		keep := max(minTrimmed, before-3*(est-limit)-64)
		priors[i].Text = prompts.Shorten(priors[i].Text, keep)
		cut = append(cut, fmt.Sprintf("step %d result cut from %d to %d bytes", priors[i].Step, before, len(priors[i].Text)))
	}
}

// oldestLong is the first prior whose text can still be cut, or -1.
func oldestLong(priors []prompts.Prior) int {
	for i, p := range priors {
		if len(p.Text) > 2*minTrimmed { // a cut result is at most keep plus the marker: this terminates
			return i
		}
	}
	return -1
}
