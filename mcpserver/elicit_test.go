package mcpserver_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"toolrouter/access"
	"toolrouter/approval"
	"toolrouter/internal/fakeollama"
	"toolrouter/internal/testmcp"
	"toolrouter/inventory"
	"toolrouter/mcpserver"
	"toolrouter/router"
)

// elicitor answers elicitation requests with action and keeps their messages.
type elicitor struct {
	action mcp.ElicitationResponseAction
	mu     sync.Mutex
	asked  []string
}

func (e *elicitor) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.asked = append(e.asked, req.Params.Message)
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: e.action, Content: map[string]any{}}}, nil
}

// TestHeldCallElicited: an inventory tool the auto_execute level holds (the fault server's echo,
// which declares no annotations, so may be destructive) is put to the person behind a client that
// declared elicitation. Accepted, it runs once and its result is the answer; declined, it does not
// run, the result says so and names no token. With a client that cannot elicit, it does not run
// and the result names it with its token, which then runs it through the router. The listed
// tools carry the annotations the router decides by.
func TestHeldCallElicited(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler *elicitor // nil: the client does not declare elicitation
		wantRun bool
	}{
		{"accepted", &elicitor{action: mcp.ElicitationResponseActionAccept}, true},
		{"declined", &elicitor{action: mcp.ElicitationResponseActionDecline}, false},
		{"no elicitation", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			faults := testmcp.NewFaults()
			inv := testmcp.Inventory(t, faults, inventory.Options{Logger: quiet})
			rt := router.New(fakeollama.New(t).Client(), inv, inv, router.Settings{Model: "fake",
				Approvals: approval.NewKeeper(approval.NewMemory(), time.Hour), AutoExecute: access.NotDestructive}, quiet)
			srv := mcpserver.New(mcpserver.Deps{Router: rt, Inventory: inv}, mcpserver.Options{ExposeInventory: true, Logger: quiet})
			var opts []client.ClientOption
			if tc.handler != nil {
				opts = append(opts, client.WithElicitationHandler(tc.handler))
			}
			c, err := client.NewInProcessClientWithOptions(srv.MCPServer(), opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			initialize(t, c)
			ctx := access.WithIdentity(t.Context(), acme)

			list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			for _, tool := range list.Tools {
				if tool.Name == "calculator__add" && (tool.Annotations.ReadOnlyHint == nil || !*tool.Annotations.ReadOnlyHint) {
					t.Errorf("calculator__add is listed without readOnlyHint: %+v", tool.Annotations)
				}
				if tool.Name == "faults__echo" && (tool.Annotations.DestructiveHint == nil || !*tool.Annotations.DestructiveHint) {
					t.Errorf("faults__echo is listed without MCP's default destructiveHint: %+v", tool.Annotations)
				}
			}

			res, err := callTool(ctx, c, "faults__echo", map[string]any{"message": "drop table"})
			if err != nil {
				t.Fatal(err)
			}
			got := text(res)
			ran := len(faults.Calls()) == 1
			declined := tc.handler != nil && tc.handler.action == mcp.ElicitationResponseActionDecline
			if ran != tc.wantRun || res.IsError != declined {
				t.Fatalf("ran %v (isError %v, %q), want %v", ran, res.IsError, got, tc.wantRun)
			}
			if tc.handler != nil && (len(tc.handler.asked) != 1 || !strings.Contains(tc.handler.asked[0], "faults.echo")) {
				t.Errorf("asked %q, want one question naming faults.echo", tc.handler.asked)
			}
			if tc.wantRun {
				if got != "drop table" {
					t.Errorf("got %q, want the echo", got)
				}
				return
			}
			if declined {
				if !strings.Contains(got, "declined") || strings.Contains(got, "tra_") {
					t.Errorf("got %q, want the decline said and no token", got)
				}
				return
			}
			_, token, ok := strings.Cut(got, `{"token": "`)
			token, _, _ = strings.Cut(token, `"`)
			if !ok || !strings.Contains(got, "awaits approval") {
				t.Fatalf("got %q, want the held call and its token", got)
			}
			call, _, err := rt.Approve(t.Context(), acme, token)
			if err != nil || call.Result == nil || call.Result.Text != "drop table" || len(faults.Calls()) != 1 {
				t.Errorf("approving the named token: got %+v, %v; want the call run once", call, err)
			}
		})
	}
}
