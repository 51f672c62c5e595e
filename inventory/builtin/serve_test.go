package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

func TestHandlerStreamableHTTP(t *testing.T) {
	h, err := Handler("calculator")
	if err != nil {
		t.Fatalf("Handler: %v", err)
	}
	ts := httptest.NewServer(h)
	defer ts.Close()
	c, err := client.NewStreamableHttpClient(ts.URL + "/mcp")
	if err != nil {
		t.Fatalf("NewStreamableHttpClient: %v", err)
	}
	defer c.Close()
	initialize(t, c)

	tools, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	if got, want := len(tools.Tools), len(numericTools)+1; got != want {
		t.Errorf("got %d tools, want %d", got, want)
	}
	tests := []struct {
		name string
		tool string
		args map[string]any
		text string
		err  bool
	}{
		{name: "evaluate", tool: "evaluate", args: map[string]any{"expression": "2 + 3 * 4"}, text: "14"},
		{name: "divide", tool: "divide", args: map[string]any{"a": 1, "b": 8}, text: "0.125"},
		{name: "tool error", tool: "divide", args: map[string]any{"a": 1, "b": 0}, text: "division by zero", err: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := call(t, c, tc.tool, tc.args)
			if got.isError != tc.err || got.text != tc.text {
				t.Errorf("got %q (isError %v), want %q (isError %v)", got.text, got.isError, tc.text, tc.err)
			}
		})
	}
}

func TestServeStdio(t *testing.T) {
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- serveStdio(context.Background(), "calculator", serverIn, serverOut, nil)
		serverOut.Close()
	}()

	c := client.NewClient(transport.NewIO(clientIn, clientOut, nil))
	initialize(t, c)
	got := call(t, c, "evaluate", map[string]any{"expression": "max(2, 3) ^ 2"})
	if got.isError || got.text != "9" {
		t.Errorf("got %q (isError %v), want %q", got.text, got.isError, "9")
	}

	// Closing the client closes the server's stdin, which ends the server.
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-done; err != nil {
		t.Errorf("got serve error %v, want nil at end of input", err)
	}
}

func TestServeUnknown(t *testing.T) {
	if _, err := Handler("nope"); !errors.Is(err, ErrUnknown) {
		t.Errorf("Handler: got error %v, want one wrapping ErrUnknown", err)
	}
	if err := ServeStdio(t.Context(), "nope", nil); !errors.Is(err, ErrUnknown) {
		t.Errorf("ServeStdio: got error %v, want one wrapping ErrUnknown", err)
	}
}

type brokenReader struct{}

func (brokenReader) Read([]byte) (int, error) { return 0, errors.New("input broke") }

// TestServeStdioLogsThroughSlog: what mcp-go's stdio server says about its input goes through the
// logger given, as one JSON line, not as plain text on stderr.
func TestServeStdioLogsThroughSlog(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	if err := serveStdio(t.Context(), "calculator", brokenReader{}, io.Discard, logger); err == nil || !strings.Contains(err.Error(), "input broke") {
		t.Fatalf("got serve error %v, want the input's", err)
	}
	var rec struct{ Level, Msg string }
	if err := json.Unmarshal(logs.Bytes(), &rec); err != nil {
		t.Fatalf("got log %q, want one JSON line: %v", logs.String(), err)
	}
	if rec.Level != "ERROR" || !strings.Contains(rec.Msg, "input broke") {
		t.Errorf("got level %q message %q, want ERROR naming the input's error", rec.Level, rec.Msg)
	}
}
