//go:build realollama

package realollama_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/ollama/ollama/api"

	"toolrouter/config"
	"toolrouter/inventory"
	"toolrouter/provider"
	"toolrouter/router"
)

// TestInputTooLong: a prompt over num_ctx with truncate:false is refused with a 400 that the one
// model-call path recognises (provider.ErrInputTooLong), never silently cut. Since v0.30 the
// message is llama-server's own ("request (N tokens) exceeds the available context size").
func TestInputTooLong(t *testing.T) {
	o := realOllama(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stream, off := false, false
	req := &api.ChatRequest{Model: o.tiny, Stream: &stream, Truncate: &off, Shift: &off,
		Messages: []api.Message{{Role: "user", Content: strings.Repeat("hello world ", 6000)}},
		Options:  map[string]any{"num_ctx": 8192, "num_predict": 1}}
	_, err := provider.Call(ctx, o.client(), req, provider.CallOptions{})
	var se api.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("got error %v, want an api.StatusError", err)
	}
	t.Logf("status %d: %s", se.StatusCode, se.ErrorMessage)
	if se.StatusCode != 400 || !errors.Is(err, provider.ErrInputTooLong) {
		t.Errorf("got %d %q (%v), want a 400 recognised as provider.ErrInputTooLong", se.StatusCode, se.ErrorMessage, err)
	}
}

// notesServer has one tool whose text must be 128 characters or more. Under that format the json
// variant, which closes strings at once when it may, can only repeat its best string token; Ollama
// aborts a completion that repeats one token more than 100 times.
func notesServer() *server.MCPServer {
	s := server.NewMCPServer("notes", "1.0.0", server.WithToolCapabilities(false))
	schema := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","minLength":128}},"required":["text"]}`)
	s.AddTool(mcp.NewToolWithRawSchema("write", "Write a note.", schema),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("written"), nil
		})
	return s
}

// TestRepeatGuard: Ollama's repeat guard (llm/llama_server.go: more than 100 repeats of one token
// abort the completion; before v0.30 it was 30 repeats, ended silently without done:true) reaches
// the router as a failed call; the router reports a model failure in phase 2, never arguments
// made of a cut answer.
func TestRepeatGuard(t *testing.T) {
	o := realOllama(t)
	rec := newRecorder(t, o)
	inv := inventory.New(map[string]config.Server{"notes": builtin("notes")},
		inventory.Options{Logger: quiet, InProcess: map[string]*server.MCPServer{"notes": notesServer()}})
	inv.Start(context.Background())
	t.Cleanup(inv.Close)
	rt := newRouter(t, o, rec, inv, router.Settings{MaxToolCalls: 1})
	out, err := rt.Route(context.Background(), router.Request{Query: "note that the meeting moved"})
	if err != nil {
		t.Fatalf("Route: %v", err)
	}
	xs := rec.since(0)
	for i, x := range xs {
		done := x.final != nil
		t.Logf("call %d: status %d done=%v content %q", i+1, x.status, done, x.content())
	}
	if len(xs) < 2 || out.Tool != "write" {
		t.Fatalf("got %d calls, tool %q (degraded %q), want phase 1 to choose notes.write and phase 2 to run", len(xs), out.Tool, out.Degraded)
	}
	p2 := xs[1]
	if p2.status != 500 || p2.final != nil || !strings.Contains(string(p2.body), "repeat limit") {
		t.Fatalf("got phase 2 status %d done=%v body %s, want a 500 naming the repeat limit", p2.status, p2.final != nil, p2.body)
	}
	if out.DegradedReason != router.DegradedModelFailure || !strings.Contains(out.Degraded, "repeat limit") {
		t.Errorf("got degraded %q (%s), want a model failure naming the repeat limit", out.Degraded, out.DegradedReason)
	}
	if out.Arguments != nil || out.Result != nil {
		t.Errorf("got arguments %v result %+v, want none from a cut answer", out.Arguments, out.Result)
	}
}
