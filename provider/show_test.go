package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"toolrouter/internal/fakeollama"
	"toolrouter/provider"
)

// TestContextLength: the trained context length is read from /api/show's model_info, under the
// model's architecture; a model without one, or a server that fails, is an error (no cap).
func TestContextLength(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    any
		want    int
		wantErr string
	}{
		{"under its architecture", 200, map[string]any{"model_info": map[string]any{
			"general.architecture": "qwen2", "qwen2.context_length": 32768, "qwen2.embedding_length": 3584}}, 32768, ""},
		{"the architecture's, not another key's", 200, map[string]any{"model_info": map[string]any{
			"general.architecture": "llama", "clip.context_length": 77, "llama.context_length": 131072}}, 131072, ""},
		{"no architecture, one length", 200, map[string]any{"model_info": map[string]any{"gemma3.context_length": 8192}}, 8192, ""},
		{"no model_info", 200, map[string]any{"details": map[string]any{"family": "x"}}, 0, "no context length"},
		{"not a number", 200, map[string]any{"model_info": map[string]any{
			"general.architecture": "x", "x.context_length": "lots"}}, 0, "no context length"},
		{"model not found", 404, map[string]any{"error": "model 'm' not found"}, 0, "model 'm' not found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.URL.Path != "/api/show" {
					http.NotFound(w, r)
					return
				}
				w.WriteHeader(tc.status)
				_ = json.NewEncoder(w).Encode(tc.body)
			}))
			defer srv.Close()
			u, _ := url.Parse(srv.URL)
			got, err := provider.NewOllama(u, srv.Client()).ContextLength(context.Background(), "m")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("got %d, %v, want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %d, %v, want %d", got, err, tc.want)
			}
		})
	}
}

// TestContextLengthOfFake: the fake Ollama's /api/show, as the router's tests use it, is read.
func TestContextLengthOfFake(t *testing.T) {
	model := fakeollama.New(t)
	model.ContextLength = 4096
	u, _ := url.Parse(model.URL)
	got, err := provider.NewOllama(u, model.Server.Client()).ContextLength(context.Background(), "fake")
	if err != nil || got != 4096 {
		t.Errorf("got %d, %v, want 4096", got, err)
	}
}

// TestContextLengthDeadline: a server that does not answer is given up at the caller's deadline.
func TestContextLengthDeadline(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	u, _ := url.Parse(srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := provider.NewOllama(u, srv.Client()).ContextLength(ctx, "m")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want the deadline", err)
	}
}
