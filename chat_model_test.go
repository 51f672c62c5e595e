package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"toolrouter/internal/fakeollama"
)

// TestChatModelCheckedBeforeRouting runs the command line's chat completions against a fake Ollama
// whose routing would call calculator.add: a model Ollama does not have is answered 404
// model_not_found, streamed or not, before anything is routed (no tool, no model call); a model
// Ollama has without it being configured is routed and answered, as before.
func TestChatModelCheckedBeforeRouting(t *testing.T) {
	model := fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply {
		switch {
		case strings.Contains(string(req.Format), "needs_more"):
			return reply(map[string]any{"reasoning": "sum", "use_tool": true, "calls": []map[string]string{{"tool": "calculator.add", "task": "add"}},
				"needs_more": false, "direct": false})
		case req.Format != nil:
			return reply(map[string]any{"a": 2, "b": 3})
		}
		return fakeollama.Reply{Content: "5.", PromptTokens: 50, CompletionTokens: 2}
	})
	model.Models = []string{"fake", "llama3.1:8b"}
	base := serve(t, "-config", "config.json", "-ollama", model.URL, "-model", "fake")

	tests := []struct {
		name       string
		model      string
		stream     bool
		wantStatus int
		wantCode   string // the error's code, or "" for an answer
		wantCalls  bool   // the routing and answering models were called
	}{
		{"unknown model", "nope", false, http.StatusNotFound, "model_not_found", false},
		{"unknown model, streamed", "nope", true, http.StatusNotFound, "model_not_found", false},
		{"unknown model at an unknown provider", "elsewhere/gpt-4o", false, http.StatusNotFound, "model_not_found", false},
		{"a pulled model that is not configured", "llama3.1:8b", false, http.StatusOK, "", true},
		{"a pulled model that is not configured, streamed", "llama3.1:8b", true, http.StatusOK, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(model.Requests())
			body := fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":"What is 2+3?"}]}`, tc.model, tc.stream)
			status, header, raw := send(t, http.MethodPost, base+"/v1/chat/completions", body, map[string]string{"Content-Type": "application/json"})
			if status != tc.wantStatus {
				t.Fatalf("got %d %s, want %d", status, raw, tc.wantStatus)
			}
			calls := len(model.Requests()) - before
			if tc.wantCode == "" {
				if calls == 0 {
					t.Errorf("got no model calls, want the routing and the answer")
				}
				return
			}
			var out struct {
				Error struct {
					Code  string `json:"code"`
					Type  string `json:"type"`
					Param string `json:"param"`
				} `json:"error"`
			}
			if err := json.Unmarshal(raw, &out); err != nil || !strings.HasPrefix(header.Get("Content-Type"), "application/json") {
				t.Fatalf("got %q %s, want OpenAI's JSON error", header.Get("Content-Type"), raw)
			}
			if out.Error.Code != tc.wantCode || out.Error.Type != "invalid_request_error" || out.Error.Param != "model" {
				t.Errorf("got error %+v, want %s invalid_request_error on model", out.Error, tc.wantCode)
			}
			if calls != 0 {
				t.Errorf("got %d model calls, want none: nothing is routed, no tool runs, for an unknown model", calls)
			}
		})
	}
}
