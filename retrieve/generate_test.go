package retrieve

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/internal/fakeollama"
	"toolrouter/inventory"
)

// calculator is the built-in calculator's inventory.
func calculator(t *testing.T) *inventory.Manager {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	inv := inventory.New(map[string]inventory.ServerConfig{"calculator": {Transport: inventory.TransportBuiltin, Builtin: "calculator"}},
		inventory.Options{Logger: quiet})
	inv.Start(context.Background())
	t.Cleanup(inv.Close)
	return inv
}

// TestGenerateExamples: each tool gets the model's questions once per definition and model: they
// are ranked as examples, deduplicated, kept in the file, and a restart reads them instead of
// asking again; the cap bounds the calls, and an answer that is not a list of questions adds none.
func TestGenerateExamples(t *testing.T) {
	inv := calculator(t)
	snap := inv.Snapshot()
	tools := snap.Available()
	var calls atomic.Int32
	quiet := slog.New(slog.DiscardHandler)
	model := fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply {
		calls.Add(1)
		if !strings.Contains(string(req.Format), `"type":"array"`) || !strings.Contains(req.Messages[0].Content, "Tool: calculator.") {
			t.Errorf("unexpected request: format %s", req.Format)
		}
		return fakeollama.Reply{Content: `["what is 6 by 7", "work out 2 and 2", "What is  6 by 7", ""]`}
	})
	path := filepath.Join(t.TempDir(), "generated.jsonl")
	ex, _ := OpenExamples("", 0)
	g, err := NewGenerator(model.Client(), ex, GenerateOptions{Model: "fake", PerTool: 3, Path: path, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if written, failed := g.Fill(context.Background(), snap); written != len(tools) || failed != 0 {
		t.Errorf("Fill: %d written, %d failed, want %d and 0", written, failed, len(tools))
	}
	if n := int(calls.Load()); n != len(tools) {
		t.Fatalf("made %d calls for %d tools", n, len(tools))
	}
	if got := ex.For("calculator.add"); len(got) != 2 || got[0] != "what is 6 by 7" {
		t.Errorf("calculator.add's examples: %q, want the two distinct questions", got)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	lines, _ := os.ReadFile(path)
	if got := strings.Count(string(lines), "\n"); got != len(tools) {
		t.Errorf("the file holds %d records, want %d", got, len(tools))
	}

	// A restart reads them: no call.
	ex2, _ := OpenExamples("", 0)
	g2, err := NewGenerator(model.Client(), ex2, GenerateOptions{Model: "fake", PerTool: 3, Path: path, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	g2.Fill(context.Background(), snap)
	if n := int(calls.Load()); n != len(tools) || len(ex2.For("calculator.add")) != 2 {
		t.Errorf("after a restart: %d calls (want %d), examples %q", n, len(tools), ex2.For("calculator.add"))
	}

	// Another model writes its own, within the cap.
	ex3, _ := OpenExamples("", 0)
	g3, err := NewGenerator(model.Client(), ex3, GenerateOptions{Model: "other", PerTool: 3, Max: 2, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	g3.Fill(context.Background(), snap)
	if n := int(calls.Load()) - len(tools); n != 2 {
		t.Errorf("another model with a cap of 2 made %d calls", n)
	}

	// An answer that is no list of questions adds nothing.
	bad := fakeollama.NewFunc(t, func(api.ChatRequest) fakeollama.Reply { return fakeollama.Reply{Content: `{"not": "a list"}`} })
	ex4, _ := OpenExamples("", 0)
	g4, _ := NewGenerator(bad.Client(), ex4, GenerateOptions{Model: "fake", PerTool: 3, Logger: quiet})
	if written, failed := g4.Fill(context.Background(), snap); written != 0 || failed != len(tools) {
		t.Errorf("Fill with bad answers: %d written, %d failed", written, failed)
	}
	if got := ex4.All(); len(got) != 0 {
		t.Errorf("a bad answer added examples: %v", got)
	}
}

// blockingWriter is a model that answers nothing until the call's context ends, telling each
// call on calls.
type blockingWriter struct{ calls chan struct{} }

func (w blockingWriter) Chat(ctx context.Context, _ *api.ChatRequest, _ api.ChatResponseFunc) error {
	w.calls <- struct{}{}
	<-ctx.Done()
	return ctx.Err()
}

// TestGenerateRunStops: Run starts writing in the background at once, and returns when its context
// ends, even in the middle of a model call.
func TestGenerateRunStops(t *testing.T) {
	inv := calculator(t)
	quiet := slog.New(slog.DiscardHandler)
	w := blockingWriter{calls: make(chan struct{}, 1)}
	ex, _ := OpenExamples("", 0)
	g, err := NewGenerator(w, ex, GenerateOptions{Model: "fake", PerTool: 1, PerMinute: 60_000, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { g.Run(ctx, inv); close(done) }()
	<-w.calls
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10 s of its context ending")
	}
	if len(ex.All()) != 0 {
		t.Errorf("a cancelled call added examples: %v", ex.All())
	}
}
