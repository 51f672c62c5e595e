package provider_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"toolrouter/internal/fakeollama"
	"toolrouter/provider"
	"toolrouter/tokens"
)

// TestChatModelWindow: a prompt over the model's window is never sent; one within it is sent with
// truncation and shifting off, so the server cannot cut it silently.
func TestChatModelWindow(t *testing.T) {
	tests := []struct {
		name     string
		prompt   string
		wantSent bool
	}{
		{"fits", "what is two plus two", true},
		{"over", strings.Repeat("a long council prompt ", 200), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			model := fakeollama.New(t, fakeollama.Reply{Content: "four", PromptTokens: 12, CompletionTokens: 1})
			m := provider.ChatModel{Client: model.Client(), Model: "m", Window: 100, Estimator: tokens.New()}
			_, err := m.Complete(context.Background(), []provider.Message{{Role: "user", Content: tc.prompt}})
			reqs := model.Requests()
			if !tc.wantSent {
				if !errors.Is(err, provider.ErrPromptOverWindow) || len(reqs) != 0 {
					t.Fatalf("got error %v and %d requests, want ErrPromptOverWindow and none sent", err, len(reqs))
				}
				return
			}
			if err != nil || len(reqs) != 1 {
				t.Fatalf("got error %v and %d requests, want the prompt sent", err, len(reqs))
			}
			if r := reqs[0]; r.Truncate == nil || *r.Truncate || r.Shift == nil || *r.Shift {
				t.Errorf("got truncate %v shift %v, want both false", r.Truncate, r.Shift)
			}
		})
	}
}
