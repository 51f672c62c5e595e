package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/internal/fakeollama"
)

// TestGeneratedExamplesRank: with retrieval.generate_examples, the served sidecar has the model
// write questions for every tool in the background, logs its progress, and ranks a tool by the
// questions written for it: words no tool's definition or built-in example holds ("wibble",
// "flumpton") find clock.current_time, whose written questions hold them.
func TestGeneratedExamplesRank(t *testing.T) {
	model := fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply {
		prompt := req.Messages[len(req.Messages)-1].Content
		switch {
		case strings.Contains(prompt, "Tool: clock.current_time\n"):
			return fakeollama.Reply{Content: `["what is the wibble hour in flumpton", "flumpton wibble now"]`, PromptTokens: 200, CompletionTokens: 30}
		case strings.Contains(prompt, "questions or requests that a user"):
			return fakeollama.Reply{Content: `["something else entirely"]`, PromptTokens: 200, CompletionTokens: 10}
		}
		return fakeollama.Reply{Content: `{"use_tool": false}`}
	})
	logs := &syncBuffer{}
	base := serveLogging(t, logs, "-config", writeConfig(t, map[string]any{
		"retrieval": map[string]any{"generate_examples": 2, "generate_per_minute": 6000},
		"usage":     map[string]any{"path": ""},
	}), "-ollama", model.URL, "-model", "fake")
	if !logs.waitFor(`"msg":"example queries written"`, 60*time.Second) {
		t.Fatalf("no line saying the examples are written:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), `"msg":"writing example queries for tools"`) || !strings.Contains(logs.String(), `"failed":0`) {
		t.Errorf("the log does not say what it writes, or a call failed:\n%s", logs.String())
	}
	resp, err := http.Get(base + "/v1/inventory/search?q=" + url.QueryEscape("wibble in flumpton"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var offer struct {
		Ranked []struct{ Name string } `json:"ranked"`
	}
	if err := json.Unmarshal(raw, &offer); err != nil || len(offer.Ranked) == 0 {
		t.Fatalf("search: %v %s", err, raw)
	}
	if offer.Ranked[0].Name != "clock.current_time" {
		t.Errorf("ranked first %q, want clock.current_time by its generated questions: %s", offer.Ranked[0].Name, raw)
	}
}
