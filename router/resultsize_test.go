package router

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestJSONSize: the size is the length of the JSON the outcome writes, for every kind of value a
// result holds, and counting stops soon after the limit.
func TestJSONSize(t *testing.T) {
	values := []any{nil, true, 2.5, 1e21, json.Number("12"), "plain", "<a href=\"x\">&amp;</a>", "tab\tnl\n\x01", "é東京\u2028", "a\xffb",
		strings.Repeat("é<", 1000), map[string]any{}, []any{}, map[string]any(nil), []any(nil),
		map[string]any{"a": []any{1.0, "x", map[string]any{"k<": nil}}, "b": false},
		struct {
			A int `json:"a"`
		}{7}}
	for _, v := range values {
		want, _ := json.Marshal(v)
		if got := jsonSize(v, math.MaxInt); got != len(want) {
			t.Errorf("jsonSize(%#v) = %d, want %d (%s)", v, got, len(want), want)
		}
	}
	big := map[string]any{"rows": []any{strings.Repeat("x", 1<<20), strings.Repeat("y", 1<<20)}}
	if got := jsonSize(big, 1000); got <= 1000 || got > 2000 {
		t.Errorf("jsonSize with limit 1000 = %d, want just over 1000", got)
	}
}

// TestBound: what a result over the bound becomes.
func TestBound(t *testing.T) {
	rows := []any{}
	for range 100 {
		rows = append(rows, map[string]any{"name": "row", "n": 1.0})
	}
	whole, _ := json.Marshal(map[string]any{"rows": rows})
	for _, tc := range []struct {
		name                               string
		in                                 Result
		wantText                           func(string) bool
		wantStructured                     bool
		wantTextBytes, wantStructuredBytes int
		wantTruncated                      bool
	}{
		{name: "under", in: Result{Text: "short", Structured: map[string]any{"a": 1.0}},
			wantText: func(s string) bool { return s == "short" }, wantStructured: true},
		{name: "structured over, text kept", in: Result{Text: "100 rows", Structured: map[string]any{"rows": rows}},
			wantText: func(s string) bool { return s == "100 rows" }, wantStructuredBytes: len(whole), wantTruncated: true},
		{name: "structured over, no text: its JSON's head and tail as text", in: Result{Structured: map[string]any{"rows": rows}},
			wantText: func(s string) bool {
				return strings.HasPrefix(s, `{"rows":[{"n":1,"name":"row"}`) && strings.HasSuffix(s, `"name":"row"}]}`) && len(s) < 1100
			},
			wantStructuredBytes: len(whole), wantTextBytes: len(whole), wantTruncated: true},
		{name: "text over", in: Result{Text: strings.Repeat("t", 5000), Structured: "small"},
			wantText: func(s string) bool { return len(s) < 1100 && strings.HasPrefix(s, "ttt") }, wantStructured: true,
			wantTextBytes: 5000, wantTruncated: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.in
			r.dropStructured(1000)
			r.cutText(1000)
			if !tc.wantText(r.Text) || (r.Structured != nil) != tc.wantStructured || r.TextBytes != tc.wantTextBytes ||
				r.StructuredBytes != tc.wantStructuredBytes || r.Truncated != tc.wantTruncated {
				t.Errorf("got text %q (%d bytes), structured kept %v, text_bytes %d, structured_bytes %d, truncated %v; want structured kept %v, text_bytes %d, structured_bytes %d, truncated %v",
					r.Text, len(r.Text), r.Structured != nil, r.TextBytes, r.StructuredBytes, r.Truncated,
					tc.wantStructured, tc.wantTextBytes, tc.wantStructuredBytes, tc.wantTruncated)
			}
		})
	}
}
