package router

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ollama/ollama/api"

	"toolrouter/prompts"
	"toolrouter/tokens"
)

// minTrimmed is the shortest a result is cut to.
const minTrimmed = 200

// NumCtx reads num_ctx from model options (0 when absent or not a number).
func NumCtx(opts map[string]any) int {
	switch v := opts["num_ctx"].(type) {
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
	return 0
}

// window is the model's context window for one request: num_ctx, the prompt size in tokens that
// leaves ContextReserve for the answer, and the calibrated estimator that measures prompts.
type window struct {
	numCtx, limit int
	model         string
	est           *tokens.Estimator
	framing       float64     // the estimator's raw tokens around each message
	known         knownText   // a text measured before, if any
	prefix        knownPrefix // the start of a text measured before, if any
}

// knownText is a message text and its raw token estimate (tokens.Raw), measured once for many
// prompts.
type knownText struct {
	text string
	raw  float64
}

// knownPrefix is the start of message texts, measured once (a tool's static phase-2 prompt): a
// text that starts with it is measured from where it ends. It is not used to measure when it is
// not valid UTF-8, whose last bytes could make one character with the next text's first.
type knownPrefix struct {
	text     string
	tally    tokens.Tally
	measured bool
}

func newKnownPrefix(text string) knownPrefix {
	p := knownPrefix{text: text, measured: utf8.ValidString(text)}
	if p.measured {
		p.tally = tokens.Tally{}.Add(text)
	}
	return p
}

func (r *Router) window() window {
	n := r.contextLength()
	return window{numCtx: n, limit: max(n-r.set.ContextReserve, 256), model: r.set.Model, est: r.est, framing: r.framing}
}

// measure estimates msgs as w.est.Messages does, the same sum in the same order, but takes the
// raw estimate of a message whose content is w.known's text from w.known, and of one that starts
// with w.prefix's text from where the prefix ends, instead of reading those texts again.
func (w window) measure(msgs []api.Message) tokens.Estimate {
	if w.known.text == "" && !w.prefix.measured {
		return w.est.Messages(w.model, msgs)
	}
	raw := 0.0
	for _, m := range msgs {
		var r float64
		switch {
		case w.known.text != "" && m.Content == w.known.text:
			r = w.known.raw
		case w.prefix.measured && strings.HasPrefix(m.Content, w.prefix.text):
			r = w.prefix.tally.Add(m.Content[len(w.prefix.text):]).Raw()
		default:
			r = tokens.Raw(m.Content)
		}
		raw += r + w.framing
	}
	return tokens.Estimate{Tokens: w.est.Scale(w.model, raw), Raw: raw}
}

// OverWindowError is a prompt that does not fit the model's window even after everything that
// can be cut was cut. It is never sent.
type OverWindowError struct {
	What      string // which prompt ("phase-1 prompt")
	Estimated int    // its estimated tokens after cutting
	Limit     int    // num_ctx minus the reserve
	NumCtx    int
}

func (e *OverWindowError) Error() string {
	return fmt.Sprintf("%s of about %d tokens does not fit %d (num_ctx %d minus the reserve); not sent",
		e.What, e.Estimated, e.Limit, e.NumCtx)
}

// shrinker cuts something out of a prompt that is over tokens too long, and says what it cut;
// ok is false when it has nothing left to cut.
type shrinker func(over int) (cut string, ok bool)

// fit renders the messages and, while they would not fit the context window, asks each shrinker
// in turn to cut (earlier results first, then history, then the shortlist), rendering again after
// each cut. extra estimates what is sent beside the messages (native tool definitions). What was cut
// is recorded in the trace and the outcome. A prompt still over the window is an
// *OverWindowError: it must not be sent.
func (w window) fit(j *journal, round int, what string, extra tokens.Estimate, render func() ([]api.Message, error), shrink ...shrinker) ([]api.Message, tokens.Estimate, error) {
	var cut []string
	for {
		msgs, err := render()
		if err != nil {
			return nil, tokens.Estimate{}, err
		}
		est := w.measure(msgs).Plus(extra)
		if est.Tokens <= w.limit {
			if len(cut) > 0 {
				j.trimmed(round, fmt.Sprintf("%s to fit %d of num_ctx %d (estimated %d tokens)", strings.Join(cut, "; "), w.limit, w.numCtx, est.Tokens))
			}
			return msgs, est, nil
		}
		cutOne := false
		for _, s := range shrink {
			if c, ok := s(est.Tokens - w.limit); ok {
				cut, cutOne = append(cut, c), true
				break
			}
		}
		if !cutOne {
			if len(cut) > 0 {
				j.trimmed(round, strings.Join(cut, "; ")+"; still over the window")
			}
			return nil, est, &OverWindowError{What: what, Estimated: est.Tokens, Limit: w.limit, NumCtx: w.numCtx}
		}
	}
}

// shortenPriors cuts the oldest result that can still be cut (in place), keeping head and tail.
func shortenPriors(priors []prompts.Prior) shrinker {
	return func(over int) (string, bool) {
		i := oldestLong(priors)
		if i < 0 {
			return "", false
		}
		before := len(priors[i].Text)
		keep := max(minTrimmed, before-3*over-64)
		priors[i].Text = prompts.Shorten(priors[i].Text, keep)
		return fmt.Sprintf("step %d result cut from %d to %d bytes", priors[i].Step, before, len(priors[i].Text)), true
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
