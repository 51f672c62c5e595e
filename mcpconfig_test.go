package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"toolrouter/internal/npmservers"
	"toolrouter/inventory"
)

// TestMCPConfigClaudeDesktop: toolrouter started with -mcp-config on a Claude Desktop file serves
// its servers (the npm reference servers, run with node) under ids derived from their names, with
// the names kept as display names; a relative argument is relative to the file's directory.
func TestMCPConfigClaudeDesktop(t *testing.T) {
	npm := npmservers.Dir(t)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sandbox"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "claude_desktop_config.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"Everything Server": map[string]any{"command": "node", "args": []string{npmservers.Entry(npm, "everything"), "stdio"}},
		"memory": map[string]any{"command": "node", "args": []string{npmservers.Entry(npm, "memory")},
			"env": map[string]string{"MEMORY_FILE_PATH": "${env:TEST_MEMORY_FILE}"}},
		"filesystem": map[string]any{"command": "node", "args": []string{npmservers.Entry(npm, "filesystem"), "./sandbox"}},
	}})
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TEST_MEMORY_FILE", filepath.Join(dir, "memory.jsonl"))
	for _, id := range []string{"EVERYTHING_SERVER", "MEMORY", "FILESYSTEM"} {
		t.Setenv("TOOLROUTER_SERVERS__"+id+"__CONNECT_TIMEOUT", "60s") // node starts slowly on a busy machine
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, []string{"-config", "", "-log-level", "error", "-mcp-config", file, "inventory"}, &out, io.Discard, nil); err != nil {
		t.Fatalf("run: %v", err)
	}
	var inv inventory.Export
	if err := json.Unmarshal(out.Bytes(), &inv); err != nil {
		t.Fatalf("decoding the inventory: %v\n%s", err, out.Bytes())
	}
	want := map[string]struct{ display, tool string }{
		"everything_server": {"Everything Server", "everything_server.echo"},
		"memory":            {"memory", "memory.create_entities"},
		"filesystem":        {"filesystem", "filesystem.list_directory"},
	}
	for _, s := range inv.Servers {
		w, ok := want[s.Name]
		if !ok {
			continue
		}
		delete(want, s.Name)
		if s.Status != inventory.StateUp {
			t.Errorf("server %s: got status %s (%s), want up", s.Name, s.Status, s.Error)
			continue
		}
		if s.DisplayName != w.display {
			t.Errorf("server %s: got display name %q, want %q", s.Name, s.DisplayName, w.display)
		}
		if !slices.ContainsFunc(s.Tools, func(tl inventory.Tool) bool { return tl.Qualified == w.tool }) {
			t.Errorf("server %s: tools lack %s", s.Name, w.tool)
		}
	}
	for id := range want {
		t.Errorf("server %s missing from the inventory", id)
	}
}
