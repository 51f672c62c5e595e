// Package tokens estimates how many tokens a prompt takes before it is sent, erring high, and
// calibrates the estimate per model from the counts the model server reports. It knows nothing of
// what the prompts say; the router and the council measure their prompts with it.
package tokens

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/ollama/ollama/api"
)

// messageFraming is the tokens a chat template adds around each message (role markers, newlines).
const messageFraming = 8

// Bounds of the calibration ratio (real tokens / raw estimate): the estimate is lowered to at most
// half the raw one, and raised to at most three times. On a real Ollama with Qwen3's tokenizer the
// raw estimate of the router's prompts ran 1.7–1.8 times the real count (docs/real-ollama.md), so
// calibration may bring it down that far; a prompt the lower estimate lets through over the
// window is refused by the server (truncation is off) and raises the ratio at once.
const (
	minRatio = 0.5
	maxRatio = 3.0
)

// Raw estimates the tokens of s by character class, erring high. Measured with Qwen3's
// tokenizer: English runs about 4.5 bytes a token, but numbers are split into single digits and
// the spaces and punctuation between numbers are tokens of their own ("[1, 2, 3]" is one token a
// byte). So digits, ASCII punctuation and a space before a digit count a token each, other letters
// and spaces a token per three bytes, and every other character a token per rune.
func Raw(s string) float64 { return Tally{}.Add(s).Raw() }

// Tally is Raw's count of a text so far. Add goes on with more text, so the tally of a prefix
// measured once serves every text that starts with it: Tally{}.Add(a).Add(b).Raw() is exactly
// Raw(a+b) when a ends on a whole character.
type Tally struct {
	words, each int
	prevSpace   bool
}

// Add counts s after what t counted.
func (t Tally) Add(s string) Tally {
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			t.each++
			if t.prevSpace {
				t.each++
				t.words--
			}
		case c == ' ' || c == '\t' || (c|0x20 >= 'a' && c|0x20 <= 'z'):
			t.words++
		default:
			t.each++
		}
		t.prevSpace = c == ' '
	}
	return t
}

// Raw is the tally's raw token estimate.
func (t Tally) Raw() float64 { return float64(t.words)/3 + float64(t.each) }

// Estimator estimates prompt tokens, calibrated per model from the real counts the model server
// reports (prompt_eval_count). It is safe for concurrent use.
type Estimator struct {
	mu    sync.Mutex
	ratio map[string]float64 // model → real/raw, running; guarded by mu
	// over counts model calls whose real prompt count exceeded the estimate.
	over atomic.Int64
}

// Exceeded counts the model calls whose real prompt count exceeded the estimate.
func (e *Estimator) Exceeded() int64 { return e.over.Load() }

// New returns an estimator with no calibration yet.
func New() *Estimator { return &Estimator{ratio: map[string]float64{}} }

// Estimate is a prompt's estimated tokens and the raw count they were scaled from, so that the
// server's count later calibrates against what was estimated, whatever other calls have changed
// in between.
type Estimate struct {
	Tokens int
	Raw    float64
}

// Plus is the estimate of two parts of one prompt.
func (a Estimate) Plus(b Estimate) Estimate {
	return Estimate{Tokens: a.Tokens + b.Tokens, Raw: a.Raw + b.Raw}
}

// Messages estimates the tokens of a prompt made of msgs.
func (e *Estimator) Messages(model string, msgs []api.Message) Estimate {
	raw := 0.0
	for _, m := range msgs {
		raw += Raw(m.Content) + messageFraming
	}
	return Estimate{Tokens: e.Scale(model, raw), Raw: raw}
}

// Text estimates the tokens of one piece of prompt text.
func (e *Estimator) Text(model, s string) Estimate {
	raw := Raw(s)
	return Estimate{Tokens: e.Scale(model, raw), Raw: raw}
}

// Scale turns a raw estimate (a sum of Raw) into the model's calibrated tokens.
func (e *Estimator) Scale(model string, raw float64) int {
	e.mu.Lock()
	r, ok := e.ratio[model]
	e.mu.Unlock()
	if !ok {
		r = 1
	}
	return int(math.Ceil(raw * r))
}

// Observe calibrates the model's ratio from a prompt estimated as est that the server counted at
// real; truncated says the server cut the prompt (real is then a lower bound). It reports whether
// the real count exceeded the estimate. Corrections upward apply at once (never lowering a ratio
// another call raised meanwhile), downward slowly, so one short prompt cannot make the estimate
// unsafe.
func (e *Estimator) Observe(model string, est Estimate, real int, truncated bool) bool {
	if est.Raw <= 0 || real <= 0 {
		return false
	}
	exceeded := real > est.Tokens || truncated
	seen := float64(real) / est.Raw
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.ratio[model]
	if !ok {
		r = 1
	}
	if exceeded {
		r = max(r, seen*1.05)
	} else {
		r = 0.9*r + 0.1*seen
	}
	e.ratio[model] = min(max(r, minRatio), maxRatio)
	if exceeded {
		e.over.Add(1)
	}
	return exceeded
}
