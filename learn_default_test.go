package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"toolrouter/internal/fakeollama"
)

// TestLearnsExamplesByDefault: with no retrieval settings, a route whose call answered keeps its
// query as an example of the tool, in examples.jsonl beside the trajectory log.
func TestLearnsExamplesByDefault(t *testing.T) {
	dir := t.TempDir()
	cfg := map[string]any{"trajectory": map[string]any{"path": filepath.Join(dir, "traj.jsonl")}}
	path := filepath.Join(dir, "config.json")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	query := "What is 17 times 23?"
	// Registered before serve, so it runs after the command has shut down.
	t.Cleanup(func() {
		b, err := os.ReadFile(filepath.Join(dir, "examples.jsonl"))
		if err != nil || !strings.Contains(string(b), query) || !strings.Contains(string(b), "calculator.multiply") {
			t.Errorf("examples.jsonl holds %q (%v), want the query learned for calculator.multiply", b, err)
		}
	})
	model := fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply {
		return obviousModel(req, "calculator.multiply", map[string]any{"a": 17, "b": 23})
	})
	base := serve(t, "-config", path, "-ollama", model.URL, "-model", "fake")
	out := post(t, base+"/v1/route", `{"query":"`+query+`"}`)
	if out["use_tool"] != true {
		t.Fatalf("got %v, want a call of calculator.multiply", out)
	}
}
