package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// heldConfig writes a configuration whose calculator.add says it is destructive, so that under
// the default auto_execute (not_destructive) a call to it is held for approval, kept in a usage
// database of the test's own.
func heldConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "toolrouter.json")
	b, _ := json.Marshal(map[string]any{
		"mcp_server": map[string]any{"expose_inventory": true},
		"usage":      map[string]any{"path": filepath.Join(dir, "usage.db")},
		"servers": map[string]any{"calculator": map[string]any{"tools": map[string]any{
			"add": map[string]any{"annotations": map[string]any{"read_only_hint": false, "destructive_hint": true}}}}},
	})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestApproveCommand: a call `toolrouter mcp` holds for a client without elicitation names, over
// stdio, the command that approves it; `toolrouter approve TOKEN`, with the same configuration
// and no server running, runs it once and prints its result; a second try is refused token_used,
// and a token never issued unknown_token, each with exit code 1.
func TestApproveCommand(t *testing.T) {
	bin := buildBinary(t)
	cfg := heldConfig(t)
	c, err := client.NewStdioMCPClient(bin, nil, "-config", cfg, "-log-level", "error", "mcp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-06-18"
	init.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "calculator__add", map[string]any{"a": 2, "b": 40}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	text := ""
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(mcp.TextContent); ok {
			text = tc.Text
		}
	}
	// calculator.add declares an output schema a held call cannot fit: the result is the tool's
	// error, its text naming the command and the token.
	m := regexp.MustCompile("`toolrouter approve (tra_[A-Z0-9]+)`").FindStringSubmatch(text)
	if !res.IsError || m == nil || strings.Contains(text, "/v1/approve") {
		t.Fatalf("got isError=%v %q, want a held call whose text names `toolrouter approve TOKEN`", res.IsError, text)
	}
	token := m[1]

	approve := func(tok string) (string, string, int) {
		cmd := exec.CommandContext(ctx, bin, "-config", cfg, "-log-level", "error", "approve", tok)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
	}
	out, errOut, code := approve(token)
	var got approved
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != exitOK {
		t.Fatalf("approve: exit %d, stdout %q, stderr %q (%v), want exit 0 and the call as JSON", code, out, errOut, err)
	}
	if got.Call == nil || got.Call.Result == nil || got.Call.Result.Text != "42" || got.Held.Tool != "add" {
		t.Errorf("approve: got %s, want calculator.add run, answering 42", out)
	}
	for _, tc := range []struct{ name, token, want string }{
		{"replayed", token, "token_used"},
		{"never issued", "tra_" + strings.Repeat("0", 43), "unknown_token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := approve(tc.token)
			if code != exitUsage || out != "" || !strings.Contains(errOut, tc.want) {
				t.Errorf("got exit %d, stdout %q, stderr %q; want exit 1 naming %s", code, out, errOut, tc.want)
			}
		})
	}
}

// TestMCPWarnsModelUnreachable: `toolrouter mcp` started with a model server that does not
// answer (as when an MCP host drops the shell's TOOLROUTER_OLLAMA__HOST) answers initialize at
// once, and warns on stderr, naming the server and how to set it.
func TestMCPWarnsModelUnreachable(t *testing.T) {
	bin := buildBinary(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now: connections are refused
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-config", "", "-ollama", dead, "mcp")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	if _, err := stdin.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	answer, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.Contains(answer, `"serverInfo"`) {
		t.Fatalf("initialize: got %q, %v; want its answer", answer, err)
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		var rec struct{ Level, Msg, Ollama string }
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Level == "WARN" && strings.Contains(rec.Msg, "model server does not answer") {
			if rec.Ollama != dead || !strings.Contains(rec.Msg, "ollama.host") || !strings.Contains(rec.Msg, `"env"`) {
				t.Errorf("got warning %s, want it to name %s, ollama.host and \"env\"", sc.Text(), dead)
			}
			return
		}
	}
	t.Fatalf("stderr ended without the warning: %v", sc.Err())
}
