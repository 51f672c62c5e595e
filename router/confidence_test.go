package router

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
)

// lp is a generated token with its alternatives (token, probability).
func lp(token string, alts ...any) api.Logprob {
	l := api.Logprob{TokenLogprob: api.TokenLogprob{Token: token}}
	for i := 0; i+1 < len(alts); i += 2 {
		p := alts[i+1].(float64)
		tl := api.TokenLogprob{Token: alts[i].(string), Logprob: math.Log(p)}
		if tl.Token == token {
			l.Logprob = tl.Logprob
		}
		l.TopLogprobs = append(l.TopLogprobs, tl)
	}
	return l
}

// withOwn sets the written token's own probability, for a token missing from its alternatives.
func withOwn(l api.Logprob, p float64) api.Logprob {
	l.Logprob = math.Log(p)
	return l
}

func TestConfidenceOf(t *testing.T) {
	names := []string{"calculator.add", "calculator.multiply", "clock.now", "none"}
	// {"use_tool":true,"calls":["calculator.add"],"needs_more":false,"direct":true}
	answer := func(useTool, name []api.Logprob) []api.Logprob {
		out := []api.Logprob{lp(`{"`, `{"`, 1.0), lp("use", "use", 1.0), lp("_tool", "_tool", 1.0), lp(`":`, `":`, 1.0)}
		out = append(out, useTool...)
		out = append(out, lp(`,"`, `,"`, 1.0), lp("calls", "calls", 1.0), lp(`":["`, `":["`, 0.9, `":[]`, 0.1))
		out = append(out, name...)
		return append(out, lp(`"],"`, `"],"`, 1.0), lp(`needs_more":false,"direct":true}`, `needs_more":false,"direct":true}`, 1.0))
	}
	sure := []api.Logprob{lp("true", "true", 1.0)}
	tests := []struct {
		name string
		lps  []api.Logprob
		// text is the answer when not the tokens' text; answerOnly drops the tokens before it
		text         string
		answerOnly   bool
		sel          selection
		wantUse      float64 // -1: absent
		wantTool     float64 // -1: absent
		wantNoFigure bool
	}{
		{
			name: "first token shared by two names, second decides",
			lps: answer([]api.Logprob{lp("true", "true", 0.8, "false", 0.15, "tr", 0.05)},
				[]api.Logprob{lp("calcul", "calcul", 0.6, "clock", 0.3, "xyz", 0.1), lp("ator", "ator", 1.0), lp(".add", ".add", 0.5, ".multiply", 0.25, ".m", 0.25)}),
			sel:      selection{UseTool: true, Calls: []selectCall{{Tool: "calculator.add"}}},
			wantUse:  0.8, // "tr" would lead to true too, but only the token written counts: a lower bound
			wantTool: 0.6 / 0.9 * 0.5,
		},
		{
			name:     "a first token no other name shares decides alone",
			lps:      answer(sure, []api.Logprob{lp("clock", "clock", 0.7, "calcul", 0.2, "none", 0.1), lp(".now", ".now", 1.0)}),
			sel:      selection{UseTool: true, Calls: []selectCall{{Tool: "clock.now"}}},
			wantUse:  1,
			wantTool: 0.7,
		},
		{
			name:     "no tool chosen: only use_tool",
			lps:      []api.Logprob{lp(`{"use_tool":`, `{"use_tool":`, 1.0), lp("false", "false", 0.6, "true", 0.4), lp(`,"calls":[],"needs_more":false,"direct":false}`, `,"calls":[],"needs_more":false,"direct":false}`, 1.0)},
			sel:      selection{},
			wantUse:  0.6,
			wantTool: -1,
		},
		{
			name: "a thinking model's logprobs start before the answer",
			lps: append([]api.Logprob{lp("<think>", "<think>", 1.0), lp("Okay", "Okay", 1.0), lp("</think>\n\n", "</think>\n\n", 1.0)},
				answer(sure, []api.Logprob{lp("clock", "clock", 0.6, "calcul", 0.4), lp(".now", ".now", 1.0)})...),
			answerOnly: true,
			sel:        selection{UseTool: true, Calls: []selectCall{{Tool: "clock.now"}}},
			wantUse:    1,
			wantTool:   0.6,
		},
		{
			name:         "logprobs of another text",
			lps:          []api.Logprob{lp(`{"use_tool":`, `{"use_tool":`, 1.0), lp("true", "true", 1.0)},
			text:         `{"use_tool":false}`,
			sel:          selection{},
			wantNoFigure: true,
		},
		{
			name:         "no logprobs",
			sel:          selection{UseTool: true, Calls: []selectCall{{Tool: "clock.now"}}},
			wantNoFigure: true,
		},
		{
			// The server lists alternatives before the grammar: the end of turn ("") leads
			// them, and the token written is missing from the list, its own logprob known.
			name:     "written token missing from the alternatives: its own probability counts",
			lps:      answer(sure, []api.Logprob{withOwn(lp("clock", "", 0.5, "calcul", 0.1), 0.3), lp(".now", ".now", 1.0)}),
			sel:      selection{UseTool: true, Calls: []selectCall{{Tool: "clock.now"}}},
			wantUse:  1,
			wantTool: 0.3 / 0.4,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text := tc.text
			if text == "" {
				for _, l := range tc.lps {
					text += l.Token
				}
			}
			if tc.answerOnly {
				_, text, _ = strings.Cut(text, "</think>\n\n")
			}
			c := confidenceOf(text, tc.lps, tc.sel, names)
			if tc.wantNoFigure {
				if c != nil {
					t.Fatalf("got %+v, want no confidence", c)
				}
				return
			}
			if c == nil {
				t.Fatal("got no confidence")
			}
			check := func(what string, got *float64, want float64) {
				switch {
				case want < 0 && got != nil:
					t.Errorf("%s: got %v, want none", what, *got)
				case want >= 0 && got == nil:
					t.Errorf("%s: got none, want %v", what, want)
				case want >= 0 && math.Abs(*got-want) > 1e-9:
					t.Errorf("%s: got %v, want %v", what, *got, want)
				}
			}
			check("use_tool", c.UseTool, tc.wantUse)
			check("tool", c.Tool, tc.wantTool)
		})
	}
}

func TestSelectionFormatsBoundEveryString(t *testing.T) {
	for _, r := range []Reasoning{ReasoningNone, ReasoningBrief, ReasoningFull} {
		f := selectionFormat([]byte(`["calculator.add","none"]`), 0, 2, searchMay, r)
		var doc any
		if err := decodeObject(string(f), &doc); err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		var walk func(path string, v any)
		nStrings := 0
		walk = func(path string, v any) {
			m, ok := v.(map[string]any)
			if !ok {
				return
			}
			if m["type"] == "string" {
				nStrings++
				_, e := m["enum"]
				_, p := m["pattern"]
				l, _ := strconv.ParseFloat(fmt.Sprint(m["maxLength"]), 64)
				if !e && !p && !(l > 0 && l <= 2000) { // llama.cpp reads more than 2,000 as unbounded
					t.Errorf("%s: string at %s is unbounded", r, path)
				}
			}
			for k, c := range m {
				walk(path+"/"+k, c)
				if arr, ok := c.([]any); ok {
					for _, e := range arr {
						walk(path+"/"+k, e)
					}
				}
			}
		}
		walk("", doc)
		if nStrings == 0 {
			t.Errorf("%s: no strings found in %s", r, f)
		}
		props := doc.(map[string]any)["properties"].(map[string]any)
		_, hasReasoning := props["reasoning"]
		if hasReasoning != (r != ReasoningNone) {
			t.Errorf("%s: reasoning present = %v", r, hasReasoning)
		}
	}
}
