package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"toolrouter/internal/fakeollama"
)

// TestNumCtxCappedThroughTheWiring: the router of the binary, over the Ollama provider as it is
// wired, learns the model's trained context length from /api/show and sends num_ctx capped at it.
func TestNumCtxCappedThroughTheWiring(t *testing.T) {
	model := fakeollama.New(t,
		reply(map[string]any{"reasoning": "math", "use_tool": true, "tool": "calculator.multiply", "direct": true}),
		reply(map[string]any{"a": 6, "b": 7}),
	)
	model.ContextLength = 4096
	cfg := writeJSON(t, map[string]any{"ollama": map[string]any{"options": map[string]any{"num_ctx": 32768}}})
	var out strings.Builder
	err := run(context.Background(), []string{"-log-level", "error", "-config", cfg, "-ollama", model.URL, "-model", "fake",
		"route", "six times seven"}, &out, io.Discard, nil)
	if err != nil {
		t.Fatalf("route: %v\n%s", err, out.String())
	}
	reqs := model.Requests()
	if len(reqs) == 0 {
		t.Fatal("no model call")
	}
	for i, req := range reqs {
		if got := req.Options["num_ctx"]; got != float64(4096) {
			t.Errorf("model call %d: got num_ctx %v, want 4096, the trained length (32768 configured)", i+1, got)
		}
	}
}
