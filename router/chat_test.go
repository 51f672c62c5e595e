package router

import (
	"context"
	"log/slog"
	"reflect"
	"testing"

	"github.com/ollama/ollama/api"

	"toolrouter/internal/fakeollama"
	"toolrouter/tokens"
)

// TestCompleteLogprobs: complete asks for log probabilities only when given a number of
// alternatives, and hands back what the server sent.
func TestCompleteLogprobs(t *testing.T) {
	lps := []api.Logprob{{TokenLogprob: api.TokenLogprob{Token: "{", Logprob: -0.01},
		TopLogprobs: []api.TokenLogprob{{Token: "{", Logprob: -0.01}, {Token: " {", Logprob: -4.6}}}}
	tests := []struct {
		name    string
		top     int
		wantReq bool
		want    []api.Logprob
	}{
		{"not asked", 0, false, nil},
		{"asked with 5 alternatives", 5, true, lps},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			model := fakeollama.New(t, fakeollama.Reply{Content: `{"use_tool":false}`, PromptTokens: 10, CompletionTokens: 3, Logprobs: lps})
			r := New(model.Client(), nil, nil, Settings{Model: "m"}, slog.New(slog.DiscardHandler))
			rep, err := r.complete(context.Background(), []api.Message{{Role: "user", Content: "hi"}}, nil, nil, tokens.Estimate{}, tc.top)
			if err != nil {
				t.Fatal(err)
			}
			req := model.Requests()[0]
			if req.Logprobs != tc.wantReq || req.TopLogprobs != tc.top {
				t.Errorf("got request logprobs %v top %d, want %v %d", req.Logprobs, req.TopLogprobs, tc.wantReq, tc.top)
			}
			if !reflect.DeepEqual(rep.Logprobs, tc.want) {
				t.Errorf("got logprobs %+v, want %+v", rep.Logprobs, tc.want)
			}
			if rep.Stats.PromptTokens != 10 || rep.Stats.DecodeTokens != 3 {
				t.Errorf("got stats %+v, want 10 prompt and 3 decode tokens", rep.Stats)
			}
		})
	}
}
