package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"toolrouter/internal/fakeollama"
	"toolrouter/internal/npmservers"
)

// inspector runs the real MCP Inspector's command line (pinned in examples/npm) with args and
// decodes its JSON output.
func inspector(t *testing.T, args ...string) map[string]any {
	t.Helper()
	cli := npmservers.Inspector(npmservers.Dir(t))
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{cli, "--cli"}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("mcp-inspector %v: %v\nstdout: %s\nstderr: %s", args, err, out, stderr)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("mcp-inspector %v printed %s: %v", args, out, err)
	}
	return m
}

// routeReplies are the fake model's answers for "what is 2 plus 40?": calculator.add, then its
// arguments.
func routeReplies() []fakeollama.Reply {
	return []fakeollama.Reply{
		reply(map[string]any{"reasoning": "arithmetic", "use_tool": true, "needs_more": false, "direct": true,
			"calls": []map[string]string{{"tool": "calculator.add", "task": "add 2 and 40"}}}),
		reply(map[string]any{"a": 2, "b": 40}),
	}
}

// mcpConfig writes a configuration with the fake model and the inventory exposed and, with orgs,
// an org, acme, that may use only the calculator.
func mcpConfig(t *testing.T, model *fakeollama.Server, orgs bool) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "toolrouter.json")
	c := map[string]any{
		"ollama":     map[string]any{"host": model.URL, "model": "fake"},
		"mcp_server": map[string]any{"expose_inventory": true},
	}
	if orgs {
		c["orgs"] = map[string]any{"acme": map[string]any{"allow": []string{"calculator"}},
			"default": map[string]any{"allow": []string{"calculator", "clock"}}}
	}
	b, _ := json.Marshal(c)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkInspector checks what the Inspector got from tools/list and tools/call route.
func checkInspector(t *testing.T, list, call map[string]any) {
	t.Helper()
	got := names(list)
	for _, want := range []string{"route", "answer", "calculator__add", "clock__current_time"} {
		if !slices.Contains(got, want) {
			t.Errorf("tools/list: got %v, want %s among them", got, want)
		}
	}
	if call["isError"] == true {
		t.Fatalf("tools/call route: got isError %v", call["content"])
	}
	out, _ := call["structuredContent"].(map[string]any)
	result, _ := out["result"].(map[string]any)
	if out["use_tool"] != true || out["server"] != "calculator" || out["tool"] != "add" || result["text"] != "42" {
		t.Errorf("tools/call route: got structured content %v, want calculator.add answering 42", out)
	}
	content, _ := call["content"].([]any)
	if len(content) == 0 {
		t.Errorf("tools/call route: got no text content")
	}
}

// TestInspectorStdio: the MCP Inspector lists and calls the tools of `toolrouter mcp`, the binary
// built from this package, over stdio, configured as an MCP client's config file names it.
func TestInspectorStdio(t *testing.T) {
	npmservers.Dir(t) // skips before the build when Node.js is missing
	bin := buildBinary(t)
	model := fakeollama.New(t, routeReplies()...)
	servers := filepath.Join(t.TempDir(), "mcp.json")
	cfg := mcpConfig(t, model, true)
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"toolrouter": map[string]any{"command": bin, "args": []string{"-config", cfg, "-log-level", "error", "mcp"}},
		"acme":       map[string]any{"command": bin, "args": []string{"-config", cfg, "-log-level", "error", "-as", "acme", "mcp"}},
	}})
	if err := os.WriteFile(servers, b, 0o600); err != nil {
		t.Fatal(err)
	}
	list := inspector(t, "--config", servers, "--server", "toolrouter", "--method", "tools/list")
	call := inspector(t, "--config", servers, "--server", "toolrouter", "--method", "tools/call",
		"--tool-name", "route", "--tool-arg", "query=what is 2 plus 40?")
	checkInspector(t, list, call)
	// Without -as, stdio acts for org default, as an HTTP request without a credential does.
	if out, _ := call["structuredContent"].(map[string]any); out["identity"] != "default" {
		t.Errorf("tools/call route without -as: got identity %v, want default", out["identity"])
	}

	// -as acme: the org's tools only.
	acme := names(inspector(t, "--config", servers, "--server", "acme", "--method", "tools/list"))
	if !slices.Contains(acme, "calculator__add") || !slices.Contains(acme, "route") || slices.Contains(acme, "clock__current_time") {
		t.Errorf("tools/list -as acme: got %v, want route, answer and the calculator's tools only", acme)
	}
}

// names are the tool names of a tools/list result.
func names(list map[string]any) []string {
	var out []string
	tools, _ := list["tools"].([]any)
	for _, tool := range tools {
		if m, ok := tool.(map[string]any); ok {
			if n, ok := m["name"].(string); ok {
				out = append(out, n)
			}
		}
	}
	return out
}

// TestInspectorHTTP: the MCP Inspector lists and calls the tools of /mcp on the API's listener
// over streamable HTTP.
func TestInspectorHTTP(t *testing.T) {
	npmservers.Dir(t)
	model := fakeollama.New(t, routeReplies()...)
	url := serve(t, "-config", mcpConfig(t, model, false)) + "/mcp"
	list := inspector(t, url, "--transport", "http", "--method", "tools/list")
	call := inspector(t, url, "--transport", "http", "--method", "tools/call", "--tool-name", "route", "--tool-arg", "query=what is 2 plus 40?")
	checkInspector(t, list, call)
}

// TestMCPRateLimited: each MCP tool call is admitted and charged against its identity's rate
// limits as a request of the work endpoints is: past the org's requests_per_minute, a call is an
// isError result rate_limited with the API's status.
func TestMCPRateLimited(t *testing.T) {
	path := filepath.Join(t.TempDir(), "toolrouter.json")
	b, _ := json.Marshal(map[string]any{
		"mcp_server": map[string]any{"expose_inventory": true},
		// Requests without a credential on loopback act for org default.
		"orgs": map[string]any{"default": map[string]any{"limits": map[string]any{"requests_per_minute": 1}}},
	})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := client.NewStreamableHttpClient(serve(t, "-config", path) + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
	add := func() *mcp.CallToolResult {
		t.Helper()
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "calculator__add", map[string]any{"a": 2, "b": 40}
		res, err := c.CallTool(t.Context(), req)
		if err != nil {
			t.Fatalf("tools/call: %v", err)
		}
		return res
	}
	if res := add(); res.IsError {
		t.Fatalf("first call: got isError %v, want 42", res.Content)
	}
	res := add()
	structured, _ := res.StructuredContent.(map[string]any)
	e, _ := structured["error"].(map[string]any)
	if !res.IsError || e["code"] != "rate_limited" || e["status"] != 429.0 {
		t.Errorf("second call within the minute: got isError=%v %v, want rate_limited 429", res.IsError, structured)
	}
}
