package router

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"toolrouter/schema"
)

// TestFormatsConvertToGrammar checks the router's own format schemas (the selection schema and a
// reference-relaxed arguments schema): they compile, and, when JSON_SCHEMA_TO_GRAMMAR names a build of
// llama.cpp's json-schema-to-grammar (the converter behind Ollama's format field) reading a schema
// on stdin, llama.cpp converts them, keeping "reasoning" as the first key generated.
func TestFormatsConvertToGrammar(t *testing.T) {
	args, err := schema.OllamaFormat(json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"o":{"type":"object","properties":{"x":{"type":"integer"}}}},"required":["a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	relaxed, err := schema.AllowReferences(args)
	if err != nil {
		t.Fatal(err)
	}
	formats := map[string][]byte{
		"selection":        selectionFormat([]byte(`["calculator.add","clock.current_time","none"]`), 3, false, ReasoningFull),
		"selection+search": selectionFormat([]byte(`["calculator.add","clock.current_time","none"]`), 3, true, ReasoningFull),
		"relaxed":          relaxed,
	}
	for name, f := range formats {
		t.Run(name, func(t *testing.T) {
			if _, err := schema.Compile(f); err != nil {
				t.Fatalf("format does not compile: %v\n%s", err, f)
			}
			bin := os.Getenv("JSON_SCHEMA_TO_GRAMMAR")
			if bin == "" {
				t.Skip("JSON_SCHEMA_TO_GRAMMAR not set: llama.cpp's converter is not built here")
			}
			cmd := exec.Command(bin)
			cmd.Stdin = bytes.NewReader(f)
			grammar, err := cmd.Output()
			if err != nil {
				t.Fatalf("llama.cpp rejected %s: %v", f, err)
			}
			if name == "selection" && !strings.Contains(string(grammar), `root ::= "{" space reasoning-kv`) {
				t.Errorf("grammar does not generate reasoning first:\n%s", grammar)
			}
		})
	}
}
