//go:build realollama

package realollama_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"toolrouter/config"
	"toolrouter/inventory"
	"toolrouter/retrieve"
)

// builtins is the built-in calculator and clock, started.
func builtins(t testing.TB) *inventory.Manager {
	t.Helper()
	inv := inventory.New(map[string]config.Server{"calculator": builtin("calculator"), "clock": builtin("clock")}, inventory.Options{Logger: quiet})
	inv.Start(context.Background())
	t.Cleanup(inv.Close)
	return inv
}

// generator is a Generator through rec, writing perTool examples to path ("": none).
func generator(t testing.TB, o ollama, rec *recorder, perTool int, path string) (*retrieve.Generator, *retrieve.Examples) {
	t.Helper()
	ex, err := retrieve.OpenExamples("", 0)
	if err != nil {
		t.Fatal(err)
	}
	g, err := retrieve.NewGenerator(rec.chatter(), ex, retrieve.GenerateOptions{Model: o.model, PerTool: perTool, Path: path,
		Options: map[string]any{"temperature": 0, "seed": 42, "num_ctx": 4096}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g, ex
}

// TestGenerateExamples: on the real server, each built-in tool gets one call whose format is a
// bounded array of strings; the answers (random-weight text, but constrained JSON) are kept in
// the file, one record per tool, and become the tools' examples; a second generator on the same
// file makes no call.
func TestGenerateExamples(t *testing.T) {
	o := realOllama(t)
	snap := builtins(t).Snapshot()
	tools := len(snap.Available())
	path := filepath.Join(t.TempDir(), "generated_examples.jsonl")
	rec := newRecorder(t, o)
	g, ex := generator(t, o, rec, 3, path)
	written, failed := g.Fill(context.Background(), snap)
	xs := rec.since(0)
	for _, x := range xs {
		if x.status != 200 || !strings.Contains(string(x.req.Format), `"type":"array"`) || !strings.Contains(string(x.req.Format), `"maxItems":3`) {
			t.Errorf("call: status %d, format %s", x.status, x.req.Format)
		}
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	records := strings.Count(string(data), "\n")
	t.Logf("%d tools, %d calls, %d written, %d failed, %d records", tools, len(xs), written, failed, records)
	if len(xs) != tools || written+failed != tools || records != written || len(ex.All()) != written || written == 0 {
		t.Errorf("got %d calls, %d written, %d failed, %d records, %d tools with examples, for %d tools",
			len(xs), written, failed, records, len(ex.All()), tools)
	}
	again := newRecorder(t, o)
	g2, ex2 := generator(t, o, again, 3, path)
	g2.Fill(context.Background(), snap)
	if n := len(again.since(0)); n != 0 || len(ex2.All()) != written {
		t.Errorf("a restart made %d calls and has %d tools with examples, want 0 and %d", n, len(ex2.All()), written)
	}
}
