package router

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"toolrouter/schema"
)

// TestFormatsConvertToGrammar checks the router's own format schemas (the selection schema and a
// reference-relaxed arguments schema): they compile, and, when JSON_SCHEMA_TO_GRAMMAR names a build of
// llama.cpp's json-schema-to-grammar (the converter llama-server applies to Ollama's format field)
// reading a schema on stdin, llama.cpp converts them, keeping the first key of each: the decision
// with reasoning "none", the reasoning otherwise.
func TestFormatsConvertToGrammar(t *testing.T) {
	args, err := schema.OllamaFormat(json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"s":{"type":"string"},"o":{"type":"object","properties":{"x":{"type":"integer"}}}},"required":["a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if args, err = schema.BoundStrings(args); err != nil { // as the inventory derives a tool's format
		t.Fatal(err)
	}
	relaxed, err := schema.AllowReferences(args)
	if err != nil {
		t.Fatal(err)
	}
	formats := map[string][]byte{
		"selection":             selectionFormat([]byte(`["calculator.add","clock.current_time","none"]`), 0, 3, searchNone, ReasoningNone),
		"selection+search":      selectionFormat([]byte(`["calculator.add","clock.current_time","none"]`), 0, 3, searchMay, ReasoningNone),
		"selection brief":       selectionFormat([]byte(`["calculator.add","clock.current_time","none"]`), 0, 3, searchMay, ReasoningBrief),
		"selection full":        selectionFormat([]byte(`["calculator.add","clock.current_time","none"]`), 0, 3, searchMay, ReasoningFull),
		"selection must search": selectionFormat([]byte(`["calculator.add","clock.current_time","none"]`), 0, 3, searchMust, ReasoningNone),
		"search words":          mustFormat,
		"relaxed":               relaxed,
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
			// llama.cpp's grammar parser takes a repetition over 2,000 as unbounded.
			for _, m := range regexp.MustCompile(`\{(\d+),(\d+)\}`).FindAllStringSubmatch(string(grammar), -1) {
				if n, _ := strconv.Atoi(m[2]); n > 2000 {
					t.Errorf("grammar repeats up to %d, which llama.cpp reads as unbounded:\n%s", n, grammar)
				}
			}
			first := map[string]string{"selection": "use-tool-kv", "selection brief": "reasoning-kv", "selection full": "reasoning-kv"}[name]
			if first != "" && !strings.Contains(string(grammar), `root ::= "{" space `+first) {
				t.Errorf("grammar does not generate %s first:\n%s", first, grammar)
			}
		})
	}
}
