package main

import (
	"cmp"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/internal/fakeollama"
	"toolrouter/internal/npmservers"
)

// goSDKClient builds testdata/gosdk, an MCP client on the official Go SDK, against the SDK's
// go.mod pins (modfile "go.mod": v1.6.1) or another modfile and build tags (the newest SDK).
func goSDKClient(t *testing.T, modfile string, tags ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gosdkclient")
	args := []string{"build", "-modfile", modfile, "-o", bin}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.Command("go", append(args, ".")...)
	cmd.Dir = filepath.Join("testdata", "gosdk")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the Go SDK client (%s): %v\n%s", modfile, err, out)
	}
	return bin
}

// sdkReport is what an SDK client prints: the version negotiated, the tools listed, the call's
// result and the elicitations it was asked.
type sdkReport struct {
	Protocol string   `json:"protocol"`
	Tools    []string `json:"tools"`
	IsError  bool     `json:"is_error"`
	Text     string   `json:"text"`
	Asked    []string `json:"asked"`
}

// runSDKClient runs an SDK client with args and decodes its report.
func runSDKClient(t *testing.T, name string, args ...string) sdkReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\nstdout: %s\nstderr: %s", filepath.Base(name), args, err, out, stderr.String())
	}
	var r sdkReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%s printed %s: %v", filepath.Base(name), out, err)
	}
	return r
}

// sdkConfig writes a configuration for the SDK clients' runs: the fake model routes any query
// to calculator.add with 2 and 40, whose annotations say it is destructive, so that every call
// to it is held and put to the person; the inventory is exposed.
func sdkConfig(t *testing.T) string {
	t.Helper()
	model := fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply {
		if strings.Contains(string(req.Format), `"use_tool"`) {
			return reply(map[string]any{"reasoning": "arithmetic", "use_tool": true, "needs_more": false, "direct": true,
				"calls": []map[string]string{{"tool": "calculator.add", "task": "add 2 and 40"}}})
		}
		return reply(map[string]any{"a": 2, "b": 40})
	})
	return writeConfig(t, map[string]any{
		"listen":     "127.0.0.1:0",
		"ollama":     map[string]any{"host": model.URL, "model": "fake"},
		"mcp_server": map[string]any{"expose_inventory": true},
		"usage":      map[string]any{"path": filepath.Join(t.TempDir(), "usage.db")},
		"servers": map[string]any{"calculator": map[string]any{"tools": map[string]any{
			"add": map[string]any{"annotations": map[string]any{"read_only_hint": false, "destructive_hint": true}}}}},
	})
}

// TestGoSDKClients: the official Go SDK's clients, the oldest the project supports (v1.6.1,
// which asks for 2025-11-25 only, and waits for the GET stream's headers in Connect) and the
// newest (v1.8.0, pinned to each version it speaks), connect to toolrouter over streamable HTTP
// and stdio, list the tools and route a query whose call is held: with elicitation the person
// is asked (input requests for 2026-07-28, elicitation/create before) and, accepting, the call
// runs; without it the call waits, named with its token and how to approve it.
func TestGoSDKClients(t *testing.T) {
	bin := buildBinary(t)
	clients := []struct {
		name      string
		bin       string
		protocols []string // "": the SDK's only one
		want      []string // the versions negotiated, in order
	}{
		{"go-sdk v1.6.1", goSDKClient(t, "go.mod"), []string{""}, []string{"2025-11-25"}},
		{"go-sdk v1.8.0", goSDKClient(t, "go.v1.8.mod", "sdk18"),
			[]string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"},
			[]string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}},
	}
	cfg := sdkConfig(t)
	base := startBinary(t, bin, "-config", cfg).Base
	stdio := []string{"--", bin, "-config", cfg, "-log-level", "error", "mcp"}
	for _, c := range clients {
		for i, protocol := range c.protocols {
			for _, transport := range []string{"http", "stdio"} {
				t.Run(c.name+"/"+cmp.Or(protocol, "default")+"/"+transport, func(t *testing.T) {
					run := func(elicit, tool, args string) sdkReport {
						a := []string{"-elicit", elicit, "-tool", tool, "-args", args}
						if protocol != "" {
							a = append(a, "-protocol", protocol)
						}
						if transport == "http" {
							return runSDKClient(t, c.bin, append(a, "-url", base+"/mcp")...)
						}
						return runSDKClient(t, c.bin, append(a, stdio...)...)
					}
					asked := run("accept", "route", `{"query": "what is 2 plus 40?"}`)
					if asked.Protocol != c.want[i] {
						t.Errorf("negotiated %s, want %s", asked.Protocol, c.want[i])
					}
					for _, want := range []string{"route", "answer", "calculator__add"} {
						if !slices.Contains(asked.Tools, want) {
							t.Errorf("tools/list: got %v, want %s among them", asked.Tools, want)
						}
					}
					if asked.IsError || len(asked.Asked) != 1 || !strings.Contains(asked.Asked[0], "calculator.add") || !strings.Contains(asked.Text, "42") {
						t.Errorf("route with elicitation: got %+v, want the person asked about calculator.add once and 42", asked)
					}
					waits := run("none", "calculator__add", `{"a": 2, "b": 40}`)
					how := "POST /v1/approve"
					if transport == "stdio" {
						how = "toolrouter approve tra_"
					}
					// calculator.add declares an output schema, which a held call's result cannot fit: it
					// is the tool's error (a client that checks results would refuse it otherwise).
					if !waits.IsError || len(waits.Asked) != 0 || !strings.Contains(waits.Text, "awaits approval") || !strings.Contains(waits.Text, how) {
						t.Errorf("calculator__add without elicitation: got %+v, want it held as the tool's error, naming %q", waits, how)
					}
				})
			}
		}
	}
}

// TestTypeScriptSDKClient: the official TypeScript SDK's client (examples/npm/mcp-client.mjs on
// @modelcontextprotocol/sdk, which asks for 2025-11-25 only) over streamable HTTP and stdio:
// it lists the tools and routes a query whose call is held, asked through elicitation/create
// and run once accepted; without elicitation the call waits, named with how to approve it.
func TestTypeScriptSDKClient(t *testing.T) {
	dir := npmservers.Dir(t) // skips without node, installs examples/npm's packages
	bin := buildBinary(t)
	cfg := sdkConfig(t)
	base := startBinary(t, bin, "-config", cfg).Base
	script := filepath.Join(dir, "mcp-client.mjs")
	for _, transport := range []string{"http", "stdio"} {
		t.Run(transport, func(t *testing.T) {
			run := func(elicit, tool, args string) sdkReport {
				a := []string{script, "--elicit", elicit, "--tool", tool, "--args", args}
				if transport == "http" {
					return runSDKClient(t, "node", append(a, "--url", base+"/mcp")...)
				}
				return runSDKClient(t, "node", append(a, "--", bin, "-config", cfg, "-log-level", "error", "mcp")...)
			}
			asked := run("accept", "route", `{"query": "what is 2 plus 40?"}`)
			if asked.Protocol != "2025-11-25" || !slices.Contains(asked.Tools, "calculator__add") {
				t.Errorf("got version %q and tools %v, want 2025-11-25 and the inventory", asked.Protocol, asked.Tools)
			}
			if asked.IsError || len(asked.Asked) != 1 || !strings.Contains(asked.Asked[0], "calculator.add") || !strings.Contains(asked.Text, "42") {
				t.Errorf("route with elicitation: got %+v, want the person asked about calculator.add once and 42", asked)
			}
			how := map[string]string{"http": "POST /v1/approve", "stdio": "toolrouter approve tra_"}[transport]
			waits := run("none", "calculator__add", `{"a": 2, "b": 40}`)
			// calculator.add declares an output schema, which a held call's result cannot fit: it
			// is the tool's error (a client that checks results would refuse it otherwise).
			if !waits.IsError || len(waits.Asked) != 0 || !strings.Contains(waits.Text, "awaits approval") || !strings.Contains(waits.Text, how) {
				t.Errorf("calculator__add without elicitation: got %+v, want it held as the tool's error, naming %q", waits, how)
			}
		})
	}
}
