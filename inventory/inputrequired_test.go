package inventory_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"toolrouter/config"
	"toolrouter/inventory"
)

// TestCallAnsweredWithInputRequestsIsAnError: on 2026-07-28 a server that takes tasks is called
// over the session's raw transport; one that answers a tools/call with input requests
// (resultType input_required: it wants the client's answers, or asks it to retry) has given no
// result. The call is an error naming that, never an empty result taken as the tool's answer.
func TestCallAnsweredWithInputRequestsIsAnError(t *testing.T) {
	srv := server.NewMCPServer("asks", "1.0.0", server.WithExtensions(map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}))
	srv.AddTool(mcp.NewTool("confirm"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("never reached"), nil
	})
	h := server.NewStreamableHTTPServer(srv, server.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20260728))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var msg struct {
			ID     any    `json:"id"`
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		if msg.Method != "tools/call" {
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": map[string]any{
			"resultType": "input_required", "requestState": "s1",
			"inputRequests": map[string]any{"confirm": map[string]any{"method": "elicitation/create",
				"params": map[string]any{"message": "sure?", "requestedSchema": map[string]any{"type": "object", "properties": map[string]any{}}}}},
		}})
	}))
	t.Cleanup(ts.Close)
	m := start(t, map[string]config.Server{"asks": timeouts(config.Server{Transport: config.TransportStreamableHTTP, URL: ts.URL})}, inventory.Options{})
	snap := wait(t, m, "asks up", func(s *inventory.Snapshot) bool { return s.Servers[0].Status == inventory.StateUp })
	if v := snap.Servers[0].ProtocolVersion; v != mcp.ProtocolVersion20260728 {
		t.Fatalf("got %q, want 2026-07-28", v)
	}
	res, err := m.CallTool(context.Background(), "asks", "confirm", nil)
	if !errors.Is(err, inventory.ErrInputRequired) {
		t.Fatalf("got the result %+v and error %v, want ErrInputRequired: the server asked for input and gave no result", res, err)
	}
}
