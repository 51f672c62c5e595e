package router

import (
	"encoding/json"
	"math"
	"strings"

	"github.com/ollama/ollama/api"
)

// topLogprobs is how many alternatives phase 1 asks the server for at each generated token: the
// confidence is computed from them.
const topLogprobs = 10

// Confidence is the model's own probability for phase 1's decision, from the server's
// logprobs: UseTool for the use_tool value it wrote, Tool for its choice of tool (the lowest over
// the calls of a selection). A field is absent when the answer did not carry it or the server sent
// no logprobs.
type Confidence struct {
	UseTool *float64 `json:"use_tool,omitempty"`
	Tool    *float64 `json:"tool,omitempty"`
}

// lowest is the smaller of the two figures present, and false when there is none.
func (c *Confidence) lowest() (float64, bool) {
	if c == nil || c.UseTool == nil && c.Tool == nil {
		return 0, false
	}
	low := math.Inf(1)
	for _, v := range []*float64{c.UseTool, c.Tool} {
		if v != nil {
			low = min(low, *v)
		}
	}
	return low, true
}

// confidenceOf reads the model's confidence in a selection from the logprobs of the answer text
// it generated. candidates are the enum's names. A value's confidence is the product, over the
// tokens that spell it, of the probability the model gave the token it wrote, divided by what it
// gave the tokens leading to any value the format allows there: the probability of the value as
// written, under the format, with the alternatives the server lists at each token (tokens leading
// to no candidate, such as the end of turn, are left out). It is a lower bound: the same value
// spelt in other tokens is not counted. The first token of a name that no other candidate shares
// decides it; later tokens then add a factor of 1.
func confidenceOf(text string, lps []api.Logprob, sel selection, candidates []string) *Confidence {
	if len(lps) == 0 {
		return nil
	}
	toks := spans(lps, text)
	if toks == nil {
		return nil // the logprobs do not spell the answer: nothing to read safely
	}
	var c Confidence
	if at := valueAfterKey(text, "use_tool", 0); at >= 0 {
		chosen := "false"
		if strings.HasPrefix(text[at:], "true") {
			chosen = "true"
		}
		if p, ok := choiceProbability(text, toks, at, chosen, []string{"true", "false"}); ok {
			c.UseTool = &p
		}
	}
	if sel.UseTool {
		quoted := make([]string, len(candidates))
		for i, n := range candidates {
			quoted[i] = `"` + n + `"`
		}
		from := strings.Index(text, `"calls"`)
		for _, call := range sel.Calls {
			if from < 0 {
				break
			}
			at := strings.Index(text[from:], `"`+call.Tool+`"`)
			if at < 0 {
				continue
			}
			at += from
			if p, ok := choiceProbability(text, toks, at, `"`+call.Tool+`"`, quoted); ok && (c.Tool == nil || p < *c.Tool) {
				c.Tool = &p
			}
			from = at + len(call.Tool) + 2
		}
	}
	if c.UseTool == nil && c.Tool == nil {
		return nil
	}
	return &c
}

// span is one generated token with its place in the answer text.
type span struct {
	start, end int
	lp         api.Logprob
}

// spans places the generated tokens on the answer text. The tokens may spell more than the answer
// (a thinking model's thinking comes first, its logprobs too): they must end with the answer, and
// offsets count from the answer's start, tokens before it negative. nil when they do not spell it.
func spans(lps []api.Logprob, text string) []span {
	var all strings.Builder
	for _, lp := range lps {
		all.WriteString(lp.Token)
	}
	if !strings.HasSuffix(all.String(), text) {
		return nil
	}
	out := make([]span, len(lps))
	at := len(text) - all.Len()
	for i, lp := range lps {
		out[i] = span{start: at, end: at + len(lp.Token), lp: lp}
		at += len(lp.Token)
	}
	return out
}

// choiceProbability is the probability of the value chosen, written at text[at:], among
// candidates (each a literal as it would be written), from the tokens that overlap it.
func choiceProbability(text string, toks []span, at int, chosen string, candidates []string) (float64, bool) {
	end := at + len(chosen)
	p, seen := 1.0, false
	for _, t := range toks {
		if t.end <= at || t.start >= end {
			continue
		}
		if len(t.lp.TopLogprobs) == 0 {
			return 0, false
		}
		if !leads(text, at, t.start, chosen, t.lp.Token) {
			return 0, false // the token written does not spell the chosen value
		}
		var all float64
		for _, alt := range withWritten(t.lp) {
			for _, cand := range candidates {
				if leads(text, at, t.start, cand, alt.Token) {
					all += math.Exp(alt.Logprob)
					break
				}
			}
		}
		p *= math.Exp(t.lp.Logprob) / all
		seen = true
	}
	return p, seen
}

// withWritten is a position's alternatives with the token written among them: the server lists
// the most likely tokens before the format's grammar is applied (end of turn often leads them), so
// the token the grammar let through may be missing from the list, and its own logprob is known.
func withWritten(lp api.Logprob) []api.TokenLogprob {
	for _, alt := range lp.TopLogprobs {
		if alt.Token == lp.Token {
			return lp.TopLogprobs
		}
	}
	return append(lp.TopLogprobs[:len(lp.TopLogprobs):len(lp.TopLogprobs)], lp.TokenLogprob)
}

// leads reports whether writing token at offset from (where the value starts at offset at) can
// lead to the candidate value: the token spells a prefix of what would be written from there, or
// the whole of it and more.
func leads(text string, at, from int, cand, token string) bool {
	if token == "" {
		return false // a special token (end of turn) the server writes as no text
	}
	var rest string
	if from <= at {
		rest = text[from:at] + cand
	} else {
		done := text[at:from]
		if !strings.HasPrefix(cand, done) {
			return false
		}
		rest = cand[len(done):]
	}
	return strings.HasPrefix(rest, token) || strings.HasPrefix(token, rest)
}

// valueAfterKey is the offset of the value written for key in a JSON object's text, searching
// from offset from, or -1.
func valueAfterKey(text, key string, from int) int {
	i := strings.Index(text[from:], `"`+key+`"`)
	if i < 0 {
		return -1
	}
	i += from + len(key) + 2
	for i < len(text) && (text[i] == ' ' || text[i] == ':' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r') {
		i++
	}
	return i
}

// orNil is c, or nil when it carries no figure.
func (c *Confidence) orNil() *Confidence {
	if c.UseTool == nil && c.Tool == nil {
		return nil
	}
	return c
}

// valueConfidence is the confidence in a continued value chosen among candidates (literals as
// written), from the logprobs of the tokens the model wrote for it.
func valueConfidence(lps []api.Logprob, chosen string, candidates []string) (float64, bool) {
	text, toks := written(lps)
	if toks == nil {
		return 0, false
	}
	at := len(text) - len(strings.TrimLeft(text, " \t\r\n"))
	return choiceProbability(text, toks, at, chosen, candidates)
}

// listConfidence is the confidence in a continued list of calls: the lowest over its tools, each
// among the names a call may take.
func listConfidence(lps []api.Logprob, list string, names []string) *float64 {
	text, toks := written(lps)
	var calls []selectCall
	if toks == nil || json.Unmarshal([]byte(list), &calls) != nil {
		return nil
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = `"` + n + `"`
	}
	var low *float64
	from := 0
	for _, call := range calls {
		at := strings.Index(text[from:], `"`+call.Tool+`"`)
		if at < 0 {
			continue
		}
		at += from
		if p, ok := choiceProbability(text, toks, at, `"`+call.Tool+`"`, quoted); ok && (low == nil || p < *low) {
			low = &p
		}
		from = at + len(call.Tool) + 2
	}
	return low
}

// written is the text a continuation's tokens spell (a stop string included) and the tokens placed
// on it; no tokens when there are no logprobs.
func written(lps []api.Logprob) (string, []span) {
	if len(lps) == 0 {
		return "", nil
	}
	var b strings.Builder
	for _, lp := range lps {
		b.WriteString(lp.Token)
	}
	text := b.String()
	return text, spans(lps, text)
}
