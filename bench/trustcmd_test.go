package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrustFake runs `go run ./bench trust` on the fake model (the sidecar built and started):
// through toolrouter every call names a function of the request, validates, and every tool_choice
// is honoured; the doors the servers lack are skipped with a note; the section is written with
// its command.
func TestTrustFake(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the sidecar")
	}
	doc := filepath.Join(t.TempDir(), "benchmarks.md")
	var out strings.Builder
	if err := runTrust(context.Background(), []string{"-n", "2", "-sets", "simple,parallel,irrelevance", "-doc", doc, "-q"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	md := out.String()
	for _, want := range []string{
		"| toolrouter | `/v1/chat/completions` | required | 6 | 0 | 6 | 100.0% (6/6) | 100.0% (6/6) | 100.0% (6/6) |",
		"| toolrouter | `/v1/chat/completions` | named | 6 | 0 | 6 | 100.0% (6/6) | 100.0% (6/6) | 100.0% (6/6) |",
		"| toolrouter | `/v1/chat/completions` | none | 6 | 0 | 0 | — | — | 100.0% (6/6) |",
		"plain Ollama has no `/v1/chat/completions` (it answered 404): not measured",
		"| toolrouter | `/api/chat` | auto | 6 | 0 | 6 | 100.0% (6/6) | 100.0% (6/6) | — (any answer) |",
		// Both have /api/chat: the two phases are measured against the native call at the same door.
		"Toolrouter at `/api/chat` against the model server's own tool calling at `/api/chat`",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	raw, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	if body, ok := sectionOf(string(raw), sectionTrust); !ok || !strings.Contains(body, "Command: `go run ./bench trust -n 2") {
		t.Errorf("the document's %s section lacks the run:\n%s", sectionTrust, raw)
	}
}
