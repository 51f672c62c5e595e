package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeAt makes a file under dir and returns its path.
func writeAt(t *testing.T, dir, name, body string) string {
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

// TestServersFromMCPFiles: the servers of the MCP clients' files that servers_from (relative to
// the config file) and -mcp-config name are served beside the config file's, under their ids,
// with their names kept; a file's server named like a built-in takes its place; the environment
// still overrides them.
func TestServersFromMCPFiles(t *testing.T) {
	dir := t.TempDir()
	claude := writeAt(t, dir, "claude/claude_desktop_config.json", `{"mcpServers": {
		"Memory Bank": {"command": "node", "args": ["./memory.js"], "env": {"HOME_DIR": "${env:TEST_HOME_DIR}"}},
		"clock": {"command": "./clock-server"}}}`)
	vscode := writeAt(t, dir, "proj/.vscode/mcp.json", `{
		// JSONC, as VS Code writes it
		"inputs": [{"type": "promptString", "id": "team-name"}],
		"servers": {"Team.Events": {"type": "sse", "url": "https://events.example/sse", "headers": {"X-Team": "${input:team-name}"}},},
	}`)
	cfgFile := writeAt(t, dir, "etc/toolrouter.json", `{
		"servers_from": ["../claude/claude_desktop_config.json"],
		"inputs": {"team-name": "platform"},
		"servers": {"GitHub": {"transport": "streamable-http", "url": "https://gh.example/mcp", "headers": {"Authorization": "Bearer ${GH_TOKEN}"}}}}`)
	t.Setenv("TEST_HOME_DIR", "/srv/home")
	t.Setenv("GH_TOKEN", "ghp_1")
	t.Setenv("TOOLROUTER_SERVERS__MEMORY_BANK__CALL_TIMEOUT", "7s")

	c, err := Load(cfgFile, nil, vscode)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.EnabledServers(), []string{"calculator", "clock", "github", "memory_bank", "team_events"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("servers: got %v, want %v", got, want)
	}
	claudeDir := filepath.Dir(claude)
	mem := c.Servers["memory_bank"]
	if mem.DisplayName != "Memory Bank" || mem.Source != claude || mem.Transport != TransportStdio || mem.Command != "node" ||
		!reflect.DeepEqual(mem.Args, []string{"./memory.js"}) || mem.Cwd != claudeDir || mem.Env["HOME_DIR"] != "/srv/home" {
		t.Errorf("memory_bank: got %+v", mem)
	}
	if mem.CallTimeout.D().String() != "7s" || mem.ConnectTimeout != defaultServer().ConnectTimeout {
		t.Errorf("memory_bank timeouts: got call %s connect %s, want the environment's 7s and the default", mem.CallTimeout, mem.ConnectTimeout)
	}
	if clock := c.Servers["clock"]; clock.Transport != TransportStdio || clock.Command != filepath.Join(claudeDir, "clock-server") || clock.Builtin != "" {
		t.Errorf("clock: got %+v, want the file's stdio server in place of the built-in", clock)
	}
	if ev := c.Servers["team_events"]; ev.DisplayName != "Team.Events" || ev.Transport != TransportSSE || ev.Headers["X-Team"] != "platform" || ev.Source != vscode {
		t.Errorf("team_events: got %+v", ev)
	}
	if gh := c.Servers["github"]; gh.DisplayName != "GitHub" || gh.Source != "" || gh.Headers["Authorization"] != "Bearer ghp_1" {
		t.Errorf("github: got %+v, want the config file's server with its header expanded", gh)
	}
}

// TestServerNamesAndFileErrors: bad names, clashes and unset variables are refused naming the
// file, the server, the field and the variable.
func TestServerNamesAndFileErrors(t *testing.T) {
	dir := t.TempDir()
	mcp := writeAt(t, dir, "mcp.json", `{"mcpServers": {"memory": {"command": "node"}, "Broken": {"url": "ftp://x"}}}`)
	tests := []struct {
		name, config string
		mcpFiles     []string
		want         []string
	}{
		{name: "ids clash in the config file",
			config: `{"servers": {"GitHub": {"transport": "sse", "url": "https://a"}, "github": {"transport": "sse", "url": "https://b"}}}`,
			want:   []string{`servers "GitHub" and "github" both have the id "github"`}},
		{name: "name without letters", config: `{"servers": {"..": {"transport": "sse", "url": "https://a"}}}`,
			want: []string{"servers...", `server name ".." has no letter or digit`}},
		{name: "duplicate with the config file",
			config: `{"servers": {"Memory": {"transport": "stdio", "command": "x"}}}`, mcpFiles: []string{mcp},
			want: []string{`server "memory" in ` + mcp, `server "Memory" in config file`, `same id "memory"`}},
		{name: "unset variable in a config file header",
			config: `{"servers": {"GitHub": {"transport": "sse", "url": "https://a", "headers": {"Authorization": "Bearer ${env:NO_SUCH_TOKEN}"}}}}`,
			want:   []string{"config file", "servers.GitHub.headers.Authorization", "environment variable NO_SUCH_TOKEN is not set"}},
		{name: "unset variable in a config file url",
			config: `{"servers": {"w": {"transport": "sse", "url": "${NO_SUCH_URL}/sse"}}}`,
			want:   []string{"servers.w.url", "NO_SUCH_URL is not set"}},
		{name: "invalid value of a file's server names it and its file",
			config: `{}`, mcpFiles: []string{mcp},
			want: []string{`servers.broken.url: must be an absolute http or https URL, got "ftp://x" (server "Broken" in ` + mcp + ")"}},
		{name: "missing servers_from file", config: `{"servers_from": ["nope/mcp.json"]}`,
			want: []string{filepath.Join(dir, "nope/mcp.json"), "no such file"}},
		{name: "password input from the config file",
			config:   `{"inputs": {"key": "s3cret"}}`,
			mcpFiles: []string{writeAt(t, dir, "vs.json", `{"inputs": [{"id": "key", "password": true}], "servers": {"x": {"command": "a", "env": {"K": "${input:key}"}}}}`)},
			want:     []string{`input "key" is a password`, "TOOLROUTER_INPUTS__KEY"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeAt(t, dir, "c.json", tc.config)
			_, err := Load(cfg, nil, tc.mcpFiles...)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("got %v, want an error containing %q", err, w)
				}
			}
		})
	}
}

// TestPasswordInputFromEnvironment: a password input is read from its environment variable.
func TestPasswordInputFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	vs := writeAt(t, dir, ".vscode/mcp.json", `{"inputs": [{"id": "api-key", "password": true}],
		"servers": {"x": {"command": "${workspaceFolder}/bin/x", "env": {"K": "${input:api-key}"}}}}`)
	t.Setenv("TOOLROUTER_INPUTS__API_KEY", "s3cret")
	c, err := Load("", nil, vs)
	if err != nil {
		t.Fatal(err)
	}
	if x := c.Servers["x"]; x.Env["K"] != "s3cret" || x.Command != filepath.Join(dir, "bin/x") {
		t.Errorf("x: got %+v, want env K from TOOLROUTER_INPUTS__API_KEY and the command in the workspace folder", x)
	}
}

// TestConfigFileRelativePaths: the config file's paths are relative to its directory, "~" is the
// home directory, and a path from the environment stays as given.
func TestConfigFileRelativePaths(t *testing.T) {
	dir := t.TempDir()
	home := t.TempDir()
	t.Setenv("HOME", home)
	cfg := writeAt(t, dir, "conf/toolrouter.json", `{
		"trajectory": {"path": "logs/trajectory.jsonl"},
		"retrieval": {"examples_file": "~/toolrouter/examples.jsonl", "vector_cache": "/var/cache/vectors.jsonl"},
		"servers": {
			"a": {"transport": "stdio", "command": "./bin/a", "cwd": "work"},
			"b": {"transport": "stdio", "command": "../tools/b"},
			"c": {"transport": "stdio", "command": "npx", "args": ["./not-a-path-key"]}}}`)
	confDir := filepath.Dir(cfg)
	c, err := Load(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ key, got, want string }{
		{"trajectory.path", c.Trajectory.Path, filepath.Join(confDir, "logs/trajectory.jsonl")},
		{"retrieval.examples_file", c.Retrieval.ExamplesFile, filepath.Join(home, "toolrouter/examples.jsonl")},
		{"retrieval.vector_cache", c.Retrieval.VectorCache, "/var/cache/vectors.jsonl"},
		{"servers.a.cwd", c.Servers["a"].Cwd, filepath.Join(confDir, "work")},
		{"servers.a.command", c.Servers["a"].Command, filepath.Join(confDir, "work/bin/a")},
		{"servers.b.command", c.Servers["b"].Command, filepath.Join(dir, "tools/b")},
		{"servers.c.command", c.Servers["c"].Command, "npx"},
		{"servers.c.args[0]", c.Servers["c"].Args[0], "./not-a-path-key"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.key, tc.got, tc.want)
		}
	}

	t.Setenv("TOOLROUTER_TRAJECTORY__PATH", "rel/t.jsonl")
	if c, err = Load(cfg, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := c.Trajectory.Path, "rel/t.jsonl"; got != want {
		t.Errorf("trajectory.path from the environment: got %q, want %q", got, want)
	}
}

// TestSecretHeaders: a header or env value read from a variable named like a secret counts as a
// credential whatever the header is called, beside those servers.NAME.secrets names; other
// variables' values do not.
func TestSecretHeaders(t *testing.T) {
	dir := t.TempDir()
	cfgFile := writeAt(t, dir, "toolrouter.json", `{"servers": {
		"web": {"transport": "streamable-http", "url": "https://web.example/mcp", "secrets": ["X-Tenant"],
			"headers": {"X-Goog-Api": "${env:GOOGLE_API_KEY}", "X-Team": "${TEAM}", "X-Tenant": "t-1", "X-Env": "prod"}},
		"local": {"transport": "stdio", "command": "srv", "env": {"DB": "${DB_PASSWORD:-none}", "MODE": "${MODE}"}}}}`)
	t.Setenv("GOOGLE_API_KEY", "g-key-1")
	t.Setenv("TEAM", "platform")
	t.Setenv("DB_PASSWORD", "pw-1")
	t.Setenv("MODE", "fast")
	c, err := Load(cfgFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Servers["web"].Secrets, []string{"X-Tenant", "X-Goog-Api"}; !reflect.DeepEqual(got, want) {
		t.Errorf("web: got secrets %v, want %v", got, want)
	}
	if got, want := c.Servers["local"].Secrets, []string{"DB"}; !reflect.DeepEqual(got, want) {
		t.Errorf("local: got secrets %v, want %v", got, want)
	}
}
