package mcpserver_test

import (
	"context"
	"errors"
	"slices"
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

// holding is the router, keeping the tokens of the calls it holds: the result of a declined call
// names none, and a test checks that it was used up.
type holding struct {
	mcpserver.Router
	mu     sync.Mutex // guards tokens
	tokens []string
}

func (h *holding) Route(ctx context.Context, req router.Request) (*router.Outcome, error) {
	out, err := h.Router.Route(ctx, req)
	if out != nil {
		for _, p := range out.Pending {
			h.keep(p.Token)
		}
	}
	return out, err
}

func (h *holding) Call(ctx context.Context, id access.Identity, qualified string, args map[string]any) (*router.Call, error) {
	c, err := h.Router.Call(ctx, id, qualified, args)
	if c != nil && c.Pending != nil {
		h.keep(c.Pending.Token)
	}
	return c, err
}

func (h *holding) keep(token string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tokens = append(h.tokens, token)
}

// held is the tokens of the calls held so far.
func (h *holding) held() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.tokens)
}

// holdingEnv is toolrouter's MCP server over a real router that holds every call auto_execute
// not_destructive does not run (the fault server's echo, which declares no annotations), a fake
// model and the in-process fault server, with an initialised in-process client.
type holdingEnv struct {
	rt     *router.Router
	held   *holding
	faults *testmcp.Faults
	c      *client.Client
	url    string // over HTTP: the server's
}

// newHolding builds a holdingEnv whose client declares elicitation, answered by handler, unless
// handler is nil; expose lists the inventory tools.
func newHolding(t *testing.T, model *fakeollama.Server, expose bool, handler *elicitor) *holdingEnv {
	t.Helper()
	faults := testmcp.NewFaults()
	inv := testmcp.Inventory(t, faults, inventory.Options{Logger: quiet})
	rt := router.New(model.Client(), inv, inv, router.Settings{Model: "fake",
		Approvals: approval.NewKeeper(approval.NewMemory(), time.Hour), AutoExecute: access.NotDestructive}, quiet)
	held := &holding{Router: rt}
	srv := mcpserver.New(mcpserver.Deps{Router: held, Inventory: inv}, mcpserver.Options{ExposeInventory: expose, Logger: quiet})
	var opts []client.ClientOption
	if handler != nil {
		opts = append(opts, client.WithElicitationHandler(handler))
	}
	c, err := client.NewInProcessClientWithOptions(srv.MCPServer(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	initialize(t, c)
	return &holdingEnv{rt: rt, held: held, faults: faults, c: c}
}

// TestHeldCallElicited: an inventory tool the auto_execute level holds (the fault server's echo,
// which declares no annotations, so may be destructive) is put to the person behind a client that
// declared elicitation. Accepted, it runs once and its result is the answer; declined, it does not
// run, the result says so and names no token, and the token is used up: approving it later is
// refused and runs nothing. With a client that cannot elicit, it does not run and the result names
// it with its token, which then runs it through the router. The listed tools carry the
// annotations the router decides by.
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
			e := newHolding(t, fakeollama.New(t), true, tc.handler)
			rt, held, faults, c := e.rt, e.held, e.faults, e.c
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
				assertUsedUp(t, rt, held)
				if len(faults.Calls()) != 0 {
					t.Errorf("the declined call ran %d time(s), want none", len(faults.Calls()))
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

// assertUsedUp checks that the one call held was declined for good: approving its token is
// refused as used.
func assertUsedUp(t *testing.T, rt *router.Router, held *holding) {
	t.Helper()
	tokens := held.held()
	if len(tokens) != 1 {
		t.Fatalf("got %d held call(s), want 1", len(tokens))
	}
	if _, _, err := rt.Approve(t.Context(), acme, tokens[0]); !errors.Is(err, approval.ErrUsed) {
		t.Errorf("approving the declined call's token: got %v, want %v", err, approval.ErrUsed)
	}
}

// TestAnswerElicited: a call the answer tool's routing chose and the auto_execute level holds is
// put to the person behind a client that declared elicitation, before the answer is written.
// Accepted, it runs once and the answer is its output; declined, it does not run, the answer says
// so and names no token, and the token is used up. With a client that cannot elicit, nothing runs
// and the answer names the held call with its token.
func TestAnswerElicited(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler *elicitor // nil: the client does not declare elicitation
		wantRun bool
		want    string // in the answer's final
		wantBy  string // answered_by
	}{
		{"accepted", &elicitor{action: mcp.ElicitationResponseActionAccept}, true, "drop table", "tool"},
		{"declined", &elicitor{action: mcp.ElicitationResponseActionDecline}, false, "declined", "tool"},
		{"no elicitation", nil, false, "Approval is needed", "approval_required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := fakeollama.New(t, selectTool("faults.echo"), fakeollama.Reply{Content: `{"message": "drop table"}`})
			e := newHolding(t, model, false, tc.handler)
			rt, held, faults := e.rt, e.held, e.faults
			ctx := access.WithIdentity(t.Context(), acme)

			res, err := callTool(ctx, e.c, "answer", map[string]any{"query": "echo drop table"})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError {
				t.Fatalf("got isError: %s", text(res))
			}
			var out struct { // /v1/answer's response
				AnsweredBy string         `json:"answered_by"`
				Routing    router.Outcome `json:"routing"`
			}
			structured(t, res, &out)
			got := text(res)
			if ran := len(faults.Calls()) == 1; ran != tc.wantRun {
				t.Fatalf("ran %v (%q), want %v", ran, got, tc.wantRun)
			}
			if !strings.Contains(got, tc.want) || out.AnsweredBy != tc.wantBy {
				t.Errorf("got answer %q by %q, want %q in it, by %q", got, out.AnsweredBy, tc.want, tc.wantBy)
			}
			if tc.handler != nil && (len(tc.handler.asked) != 1 || !strings.Contains(tc.handler.asked[0], "faults.echo")) {
				t.Errorf("asked %q, want one question naming faults.echo", tc.handler.asked)
			}
			if tc.handler == nil {
				if len(out.Routing.Pending) != 1 || !strings.Contains(got, out.Routing.Pending[0].Token) {
					t.Errorf("got answer %q with pending %+v, want the held call and its token", got, out.Routing.Pending)
				}
				return
			}
			if len(out.Routing.Pending) != 0 || out.Routing.Stopped != router.StopDone {
				t.Errorf("got pending %+v, stopped %q; want none held, done", out.Routing.Pending, out.Routing.Stopped)
			}
			if tc.handler.action == mcp.ElicitationResponseActionDecline {
				if strings.Contains(got, "tra_") {
					t.Errorf("got answer %q, want no token", got)
				}
				assertUsedUp(t, rt, held)
			}
		})
	}
}
