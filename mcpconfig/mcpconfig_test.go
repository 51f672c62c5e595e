package mcpconfig

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fakeEnv is an environment for LookupEnv.
func fakeEnv(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func abs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestReadRealFiles reads a real file of each client's format and checks every server as
// toolrouter will run it.
func TestReadRealFiles(t *testing.T) {
	const home = "/home/user"
	env := fakeEnv(map[string]string{
		"GITHUB_TOKEN": "ghp_test", "USER": "ada", "FIGMA_TOKEN": "figd_test", "API_KEY": "k-1",
		"TOOLROUTER_INPUTS__PERPLEXITY_KEY": "pplx-test",
	})
	claude := "testdata/claude-desktop/claude_desktop_config.json"
	cursor := "testdata/cursor/.cursor/mcp.json"
	vscode := "testdata/vscode/.vscode/mcp.json"
	windsurf := "testdata/windsurf/mcp_config.json"
	claudeCode := "testdata/claude-code/.mcp.json"
	tests := []struct {
		name   string
		file   string
		inputs map[string]string
		want   []Server
	}{
		{name: "Claude Desktop", file: claude, want: []Server{
			{Name: "everything", ID: "everything", File: claude, Transport: Stdio, Command: "npx",
				Args: []string{"-y", "@modelcontextprotocol/server-everything"}, Cwd: abs(t, "testdata/claude-desktop")},
			{Name: "filesystem", ID: "filesystem", File: claude, Transport: Stdio, Command: "npx",
				Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/Users/username/Desktop", home + "/Downloads"},
				Cwd:  abs(t, "testdata/claude-desktop")},
			{Name: "memory", ID: "memory", File: claude, Transport: Stdio, Command: "npx",
				Args: []string{"-y", "@modelcontextprotocol/server-memory"}, Cwd: abs(t, "testdata/claude-desktop"),
				Env: map[string]string{"MEMORY_FILE_PATH": "/Users/username/.claude/memory.jsonl"}},
		}},
		{name: "Cursor url, headers and a relative command", file: cursor, want: []Server{
			{Name: "GitHub", ID: "github", File: cursor, Transport: StreamableHTTP, URL: "https://api.githubcopilot.com/mcp/",
				Headers: map[string]string{"Authorization": "Bearer ghp_test"}, Secrets: []string{"Authorization"}},
			{Name: "local notes", ID: "local_notes", File: cursor, Transport: Stdio,
				Command: abs(t, "testdata/cursor/.cursor/tools/notes-server.js"),
				Args:    []string{"--root", abs(t, "testdata/cursor") + "/notes"}, Cwd: abs(t, "testdata/cursor/.cursor"),
				Env: map[string]string{"NOTES_USER": "ada"}},
		}},
		{name: "VS Code inputs, envFile and comments", file: vscode, inputs: map[string]string{"team": "platform"}, want: []Server{
			{Name: "Perplexity", ID: "perplexity", File: vscode, Transport: Stdio, Command: "npx",
				Args: []string{"-y", "server-perplexity-ask"}, Cwd: abs(t, "testdata/vscode/.vscode"),
				Env:     map[string]string{"PERPLEXITY_API_KEY": "pplx-test", "PERPLEXITY_MODEL": "sonar-pro", "LOG_LEVEL": "debug"},
				Secrets: []string{"PERPLEXITY_API_KEY"}},
			{Name: "fetch", ID: "fetch", File: vscode, Transport: Stdio, Command: "uvx", Args: []string{"mcp-server-fetch"},
				Cwd: abs(t, "testdata/vscode/.vscode")},
			{Name: "github", ID: "github", File: vscode, Transport: StreamableHTTP, URL: "https://api.githubcopilot.com/mcp/"},
			{Name: "team.events", ID: "team_events", File: vscode, Transport: SSE, URL: "http://localhost:3001/sse",
				Headers: map[string]string{"X-Team": "platform"}},
		}},
		{name: "Windsurf serverUrl and disabled", file: windsurf, want: []Server{
			{Name: "figma", ID: "figma", File: windsurf, Transport: StreamableHTTP, URL: "https://mcp.figma.com/mcp",
				Headers: map[string]string{"Authorization": "Bearer figd_test"}, Secrets: []string{"Authorization"}},
			{Name: "github", ID: "github", File: windsurf, Transport: Stdio, Command: "npx",
				Args: []string{"-y", "@modelcontextprotocol/server-github"}, Cwd: abs(t, "testdata/windsurf"),
				Env:     map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_test"},
				Secrets: []string{"GITHUB_PERSONAL_ACCESS_TOKEN"}},
		}},
		{name: "Claude Code type and defaults", file: claudeCode, want: []Server{
			{Name: "api-server", ID: "api-server", File: claudeCode, Transport: SSE, URL: "https://api.example.com/sse",
				Headers: map[string]string{"X-API-Key": "k-1"}, Secrets: []string{"X-API-Key"}},
			{Name: "sentry", ID: "sentry", File: claudeCode, Transport: StreamableHTTP, URL: "https://mcp.sentry.dev/mcp"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Read([]string{tc.file}, Options{LookupEnv: env, Home: home, Inputs: tc.inputs, InputsFrom: "config file c.json"})
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// write makes a file in dir and returns its path.
func write(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReadErrors: every bad file is refused with a message naming the file, the server, the field
// and the variable.
func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	a := write(t, dir, "a.json", `{"mcpServers": {"memory": {"command": "node"}, "GitHub": {"url": "https://h/mcp"}}}`)
	env := fakeEnv(map[string]string{"SET": "v"})
	tests := []struct {
		name  string
		files []string
		body  string // the second file's content, when files is nil
		want  []string
	}{
		{name: "unset env variable", body: `{"mcpServers": {"gh": {"url": "https://h", "headers": {"Authorization": "Bearer ${env:GITHUB_TOKEN}"}}}}`,
			want: []string{"b.json", `server "gh"`, "headers.Authorization", "GITHUB_TOKEN is not set"}},
		{name: "unset plain variable in args", body: `{"mcpServers": {"x": {"command": "node", "args": ["ok", "${MISSING_DIR}/x"]}}}`,
			want: []string{"b.json", `server "x"`, "args[1]", "MISSING_DIR is not set"}},
		{name: "unset variable in url", body: `{"mcpServers": {"x": {"url": "${HOST_URL}/mcp"}}}`,
			want: []string{`server "x"`, "url: environment variable HOST_URL is not set"}},
		{name: "input without value", body: `{"inputs": [{"id": "tok", "description": "The token"}], "servers": {"x": {"type": "http", "url": "https://h", "headers": {"T": "${input:tok}"}}}}`,
			want: []string{`server "x"`, "headers.T", `input "tok" (The token) has no value`, "TOOLROUTER_INPUTS__TOK"}},
		{name: "password input from configuration", body: `{"inputs": [{"id": "key", "password": true}], "servers": {"x": {"command": "n", "env": {"K": "${input:key}"}}}}`,
			want: []string{`input "key" is a password`, "TOOLROUTER_INPUTS__KEY", "never in configuration"}},
		{name: "duplicate across files", body: `{"mcpServers": {"memory": {"command": "node"}}}`,
			want: []string{`server "memory" is defined in both ` + a + " and " + filepath.Join(dir, "b.json")}},
		{name: "same id across files", body: `{"mcpServers": {"github": {"url": "https://x"}}}`,
			want: []string{`server "GitHub" in ` + a, `server "github" in ` + filepath.Join(dir, "b.json"), `same id "github"`}},
		{name: "same id in one file", body: `{"mcpServers": {"My Server": {"command": "a"}, "my_server": {"command": "b"}}}`,
			want: []string{`servers "My Server" and "my_server" both have the id "my_server"`}},
		{name: "file named twice", files: []string{a, filepath.Join(dir, ".", "a.json")}, want: []string{"named twice (also as " + a + ")"}},
		{name: "missing file", files: []string{filepath.Join(dir, "nope.json")}, want: []string{"nope.json", "no such file"}},
		{name: "neither command nor url", body: `{"mcpServers": {"x": {"args": ["a"]}}}`, want: []string{`server "x"`, `needs "command"`}},
		{name: "command and url without type", body: `{"mcpServers": {"x": {"command": "a", "url": "https://h"}}}`, want: []string{`has both "command" and "url"`}},
		{name: "unknown type", body: `{"mcpServers": {"x": {"type": "websocket", "url": "wss://h"}}}`, want: []string{`unknown type "websocket"`}},
		{name: "no servers object", body: `{"servers2": {}}`, want: []string{`no "mcpServers"`}},
		{name: "both shapes", body: `{"mcpServers": {}, "servers": {}}`, want: []string{`both "mcpServers" and VS Code's "servers"`}},
		{name: "not JSON", body: `{"mcpServers": `, want: []string{"b.json", "unexpected end of JSON input"}},
		{name: "name without letters", body: `{"mcpServers": {"...": {"command": "a"}}}`, want: []string{`server name "..." has no letter or digit`}},
		{name: "name too long", body: `{"mcpServers": {"` + strings.Repeat("x", 65) + `": {"command": "a"}}}`, want: []string{"too long"}},
		{name: "unsupported variable", body: `{"mcpServers": {"x": {"command": "${command:pick}"}}}`, want: []string{"unsupported variable ${command:pick}"}},
		{name: "unclosed variable", body: `{"mcpServers": {"x": {"command": "${SET"}}}`, want: []string{"unclosed ${"}},
		{name: "null env value", body: `{"mcpServers": {"x": {"command": "a", "env": {"A": null}}}}`, want: []string{"env.A: null is not supported"}},
		{name: "missing envFile", body: `{"servers": {"x": {"command": "a", "envFile": ".env.missing"}}}`, want: []string{"envFile", ".env.missing"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files := tc.files
			if files == nil {
				files = []string{a, write(t, dir, "b.json", tc.body)}
			}
			_, err := Read(files, Options{LookupEnv: env, Inputs: map[string]string{"key": "secret"}, InputsFrom: "config file c.json"})
			if err == nil {
				t.Fatalf("got no error, want one containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got error %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestServerID(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"github", "github"}, {"GitHub", "github"}, {"my server", "my_server"}, {"a.b", "a_b"},
		{"Sequential-Thinking_2", "sequential-thinking_2"}, {"café", "caf_"}, {"@scope/pkg", "_scope_pkg"},
	} {
		got, err := ServerID(tc.name)
		if err != nil || got != tc.want {
			t.Errorf("ServerID(%q): got %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

func TestExpandEnv(t *testing.T) {
	env := fakeEnv(map[string]string{"A": "1", "EMPTY": ""})
	for _, tc := range []struct{ in, want, err string }{
		{in: "plain", want: "plain"},
		{in: "x${A}y${env:A}", want: "x1y1"},
		{in: "${EMPTY}", want: ""},
		{in: "${EMPTY:-d}", want: "d"},
		{in: "${UNSET:-https://h}", want: "https://h"},
		{in: "${UNSET}", err: "environment variable UNSET is not set"},
		{in: "${input:x}", err: "inputs are read only in MCP configuration files"},
		{in: "${workspaceFolder}", err: "environment variable workspaceFolder is not set"},
	} {
		got, err := ExpandEnv(tc.in, env)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ExpandEnv(%q): got %q, %v; want error %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ExpandEnv(%q): got %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestStripJSONC(t *testing.T) {
	in := `{ // c
  "a": "x // not a comment", /* block
  */ "b": [1, 2,],
}`
	want := `{"a":"x // not a comment","b":[1,2]}`
	var b strings.Builder
	for _, r := range string(stripJSONC([]byte(in))) {
		if r != ' ' && r != '\n' {
			b.WriteRune(r)
		}
	}
	if got := b.String(); strings.ReplaceAll(want, " ", "") != got {
		t.Errorf("got %s, want %s", got, want)
	}
}
