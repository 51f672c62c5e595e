package router

import (
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"toolrouter/tokens"
)

// TestMeasureIsMessages: a window that knows a text, or the start of one, measures every prompt
// exactly as the estimator does, whichever messages hold them.
func TestMeasureIsMessages(t *testing.T) {
	est := tokens.New()
	est.Observe("m", tokens.Estimate{Tokens: 100, Raw: 100}, 173, false) // a calibrated ratio
	r := New(nil, nil, nil, Settings{Model: "m", Estimator: est}, nil)
	system := strings.Repeat("Tool calculator.add: adds 2 and 3, returns 5. ", 40)
	known := knownText{text: system, raw: tokens.Raw(system)}
	copied := strings.Clone(system)
	head := "Tool: calculator.add\nInput schema: {\"a\": 1} " // a space before the digits that may follow
	prefix := newKnownPrefix(head)
	tests := []struct {
		name string
		msgs []api.Message
	}{
		{"none", nil},
		{"system and query", []api.Message{{Role: "system", Content: system}, {Role: "user", Content: "what is 2 plus 3?"}}},
		{"copy of the text", []api.Message{{Role: "system", Content: copied}, {Role: "user", Content: "q 12"}}},
		{"history and rounds", []api.Message{{Content: system}, {Content: "hi"}, {Content: "there 7"}, {Content: `{"a":1}`}, {Content: "result 5"}, {Content: "é東 9"}}},
		{"text elsewhere", []api.Message{{Content: "user first"}, {Content: system}}},
		{"text absent", []api.Message{{Content: "a"}, {Content: " 1 2 3"}}},
		{"prefix", []api.Message{{Content: head + "2 plus 3 é"}}},
		{"text and prefix", []api.Message{{Role: "system", Content: system}, {Role: "user", Content: head + "User query: 42"}}},
		{"prefix alone and elsewhere", []api.Message{{Content: head}, {Content: "x " + head}, {Content: ""}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := r.window()
			want := est.Messages("m", tc.msgs)
			if got := w.measure(tc.msgs); got != want {
				t.Errorf("without a known text: got %+v, want %+v", got, want)
			}
			w.known = known
			if got := w.measure(tc.msgs); got != want {
				t.Errorf("with a known text: got %+v, want %+v", got, want)
			}
			w.prefix = prefix
			if got := w.measure(tc.msgs); got != want {
				t.Errorf("with a known text and prefix: got %+v, want %+v", got, want)
			}
			w.known = knownText{}
			if got := w.measure(tc.msgs); got != want {
				t.Errorf("with a known prefix: got %+v, want %+v", got, want)
			}
		})
	}
	if p := newKnownPrefix("cut \xe6\x9d"); p.measured {
		t.Error("a prefix ending inside a character is used to measure")
	}
}
