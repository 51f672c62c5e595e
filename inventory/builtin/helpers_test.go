package builtin

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// connect starts an in-process client of the named built-in server and
// completes the initialize handshake.
func connect(t *testing.T, name string, now func() time.Time) *client.Client {
	t.Helper()
	srv, err := New(name, now)
	if err != nil {
		t.Fatalf("New(%q): %v", name, err)
	}
	c, err := client.NewInProcessClient(srv)
	if err != nil {
		t.Fatalf("NewInProcessClient: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	initialize(t, c)
	return c
}

func initialize(t *testing.T, c *client.Client) {
	t.Helper()
	if err := c.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "builtin-test", Version: "0"}
	if _, err := c.Initialize(t.Context(), req); err != nil {
		t.Fatalf("Initialize: %v", err)
	}
}

// outcome is what a tool call returned.
type outcome struct {
	text       string
	structured map[string]any
	isError    bool
}

func call(t *testing.T, c *client.Client, tool string, arguments map[string]any) outcome {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = arguments
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatalf("CallTool(%s, %v): %v", tool, arguments, err)
	}
	return outcomeOf(t, res)
}

func outcomeOf(t *testing.T, res *mcp.CallToolResult) outcome {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("got %d content items, want 1", len(res.Content))
	}
	text, ok := mcp.AsTextContent(res.Content[0])
	if !ok {
		t.Fatalf("got content %T, want text", res.Content[0])
	}
	out := outcome{text: text.Text, isError: res.IsError}
	if res.StructuredContent != nil {
		// A handler called directly returns Go values; normalise them to
		// what a client decodes.
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &out.structured); err != nil {
			t.Fatalf("got structured content %s, want an object: %v", raw, err)
		}
	}
	return out
}

// fixedNow returns a clock stopped at the RFC 3339 time s.
func fixedNow(t *testing.T, s string) func() time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return func() time.Time { return at }
}
