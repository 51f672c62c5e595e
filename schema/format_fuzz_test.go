package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// FuzzOllamaFormat feeds arbitrary documents to the schema-to-format converter (the seed corpus
// is in testdata/fuzz/FuzzOllamaFormat). It must never panic or modify its input, must fail only
// with ErrCompile, and must be deterministic; for a schema that compiles, what it derives is an
// object schema that compiles too and whose grammar fits Ollama's buffer.
func FuzzOllamaFormat(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > 16<<10 {
			return // tool schemas are bounded upstream; large inputs only slow the search
		}
		in := bytes.Clone(raw)
		out, err := OllamaFormat(raw)
		if !bytes.Equal(raw, in) {
			t.Fatalf("OllamaFormat modified its input %q", in)
		}
		if err != nil {
			if !errors.Is(err, ErrCompile) {
				t.Errorf("%q: got error %v, want one wrapping ErrCompile", raw, err)
			}
			return
		}
		again, err := OllamaFormat(raw)
		if err != nil || !bytes.Equal(again, out) {
			t.Errorf("%q: got %s then %s (%v), want the same output twice", raw, out, again, err)
		}
		var top map[string]any
		if err := json.Unmarshal(out, &top); err != nil || top["type"] != "object" {
			t.Fatalf("%q: got %s, want an object schema", raw, out)
		}
		if _, err := Compile(raw); err != nil {
			return // the tool is not offered; what the converter made of it is never sent
		}
		if _, err := Compile(out); err != nil {
			t.Errorf("%q: got %s, which does not compile: %v", raw, out, err)
		}
		if est, buf := estimateGrammar(top, ""), ollamaGrammarBuffer(len(out)); est > buf {
			t.Errorf("%q: got an estimated grammar of %d bytes, want at most Ollama's buffer %d", raw, est, buf)
		}
	})
}
