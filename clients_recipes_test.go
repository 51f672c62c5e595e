package main

import (
	"cmp"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"toolrouter/internal/fakeollama"
	"toolrouter/internal/npmservers"
)

// clientsBlocks are docs/clients.md's fenced code blocks, by language, in order.
func clientsBlocks(t *testing.T) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("docs", "clients.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[string][]string{}
	for _, m := range regexp.MustCompile("(?s)```(\\w*)\n(.*?)```").FindAllStringSubmatch(string(raw), -1) {
		blocks[m[1]] = append(blocks[m[1]], m[2])
	}
	return blocks
}

// recipe is the one JSON block of docs/clients.md that contains marker.
func recipe(t *testing.T, blocks map[string][]string, marker string) string {
	t.Helper()
	var found []string
	for _, b := range blocks["json"] {
		if strings.Contains(b, marker) {
			found = append(found, b)
		}
	}
	if len(found) != 1 {
		t.Fatalf("docs/clients.md: got %d JSON blocks with %s, want 1", len(found), marker)
	}
	return found[0]
}

// TestClientsRecipesASCII: every code block of docs/clients.md is ASCII, so that a value copied
// from it (a key, a URL) is what a client sends: an ellipsis in an API key made the Node client
// fail before sending.
func TestClientsRecipesASCII(t *testing.T) {
	for lang, blocks := range clientsBlocks(t) {
		for _, b := range blocks {
			if i := strings.IndexFunc(b, func(r rune) bool { return r > unicode.MaxASCII }); i >= 0 {
				t.Errorf("docs/clients.md: a %s block has %q, not ASCII: %q", cmp.Or(lang, "plain"), []rune(b[i:])[0], b)
			}
		}
	}
}

// TestClientsRecipes runs docs/clients.md's MCP recipes as written, with only the paths and
// addresses of this machine put in: Claude Desktop's entry for `toolrouter mcp` (with the model
// server in its "env") through the MCP Inspector, which reads the same format, and VS Code's
// entries for /mcp (the key from the input) and for the stdio form through toolrouter's own
// reader of VS Code's mcp.json.
func TestClientsRecipes(t *testing.T) {
	blocks := clientsBlocks(t)
	bin := buildBinary(t)
	model := fakeollama.New(t, routeReplies()...)
	cfg := writeConfig(t, map[string]any{"ollama": map[string]any{"model": "fake"}, "usage": map[string]any{"path": ""}})

	t.Run("claude desktop, stdio", func(t *testing.T) {
		dir := npmservers.Dir(t) // skips without Node.js
		entry := recipe(t, blocks, `"mcpServers"`)
		entry = strings.NewReplacer("/usr/local/bin/toolrouter", bin, "/etc/toolrouter/config.json", cfg,
			"http://127.0.0.1:11434", model.URL).Replace(entry)
		var desktop struct {
			MCPServers map[string]struct {
				Command string
				Args    []string
				Env     map[string]string
			}
		}
		if err := json.Unmarshal([]byte(entry), &desktop); err != nil {
			t.Fatalf("the recipe: %v\n%s", err, entry)
		}
		s, ok := desktop.MCPServers["toolrouter"]
		if !ok {
			t.Fatalf("the recipe has no server toolrouter: %s", entry)
		}
		env, _ := json.Marshal(s.Env)
		// Started as a host starts it: the entry's command, args and env, without this process's
		// environment (the model server is named only in the entry's "env": the configuration has
		// none).
		got := runSDKClient(t, "node", append([]string{filepath.Join(dir, "mcp-client.mjs"), "--env", string(env), "--", s.Command}, s.Args...)...)
		if got.IsError || !strings.Contains(got.Text, "42") || strings.Contains(got.Text, "degraded") {
			t.Errorf("route through the recipe: got %+v, want calculator.add answering 42 with the model of the entry's env", got)
		}
	})

	t.Run("vs code", func(t *testing.T) {
		var made strings.Builder
		if err := run(context.Background(), []string{"keys", "new", "--org", "default"}, &made, nil, nil); err != nil {
			t.Fatal(err)
		}
		var key struct {
			Key   string         `json:"key"`
			Entry map[string]any `json:"entry"`
		}
		if err := json.Unmarshal([]byte(made.String()), &key); err != nil {
			t.Fatal(err)
		}
		served := writeConfig(t, map[string]any{"listen": "127.0.0.1:0", "auth": map[string]any{"keys": []any{key.Entry}},
			"usage": map[string]any{"path": ""}})
		base := startBinary(t, bin, "-config", served).Base
		dir := t.TempDir() // the stdio form runs `toolrouter mcp` on the defaults, from here
		for _, tc := range []struct{ name, marker string }{
			{"http", `"type": "http"`},
			{"stdio", `"type": "stdio"`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				entry := strings.ReplaceAll(recipe(t, blocks, tc.marker), "http://127.0.0.1:8090", base)
				path := filepath.Join(dir, tc.name+"-mcp.json")
				if err := os.WriteFile(path, []byte(entry), 0o600); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, bin, "-config", "", "-mcp-config", path, "-log-level", "error", "inventory")
				cmd.Dir = dir
				// The key VS Code would prompt for, and `toolrouter` on the PATH, as VS Code finds it.
				cmd.Env = append(os.Environ(), "TOOLROUTER_INPUTS__TOOLROUTER_KEY="+key.Key,
					"PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("inventory from the recipe: %v\n%s", err, out)
				}
				var inv struct {
					Servers []struct {
						Name   string
						Status string
						Tools  []struct{ Name string }
					}
				}
				if err := json.Unmarshal(out, &inv); err != nil {
					t.Fatalf("inventory: %v\n%s", err, out)
				}
				var tools []string
				for _, s := range inv.Servers {
					if s.Name == "toolrouter" {
						for _, tool := range s.Tools {
							tools = append(tools, tool.Name)
						}
					}
				}
				if !slices.Contains(tools, "toolrouter.route") || !slices.Contains(tools, "toolrouter.answer") {
					t.Errorf("the recipe's server lists %v, want route and answer\n%s", tools, out)
				}
			})
		}
	})
}
