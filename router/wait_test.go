package router_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/approval"
	"toolrouter/internal/fakeollama"
	"toolrouter/router"
)

// TestRouteWaitsForApproval: with safety.approval_wait, a route that holds a call waits for the
// decision. Approved meanwhile (the approver's Approve answers with no call: the route runs it),
// the call runs once in the route and the route goes on with its result; declined, it goes on
// without it; unanswered, it goes on without it and the call stays held; a client that leaves
// withdraws it, so its token runs nothing later.
func TestRouteWaitsForApproval(t *testing.T) {
	tests := []struct {
		name string
		// decide is what happens when the route says it holds the call.
		decide      func(t *testing.T, r *router.Router, token string, cancel context.CancelCauseFunc)
		wait        time.Duration
		wantCode    string // the call's error code; "" ran
		wantRuns    int
		wantPending int
		wantStep    router.StepKind
		// thenApprove is what approving the token after the route answered gives.
		thenApprove error
		// stops: the route ended with its request (stopped "deadline"), the call still held.
		stops bool
	}{
		{name: "approved", wait: time.Minute, wantRuns: 1, wantStep: router.StepApproved, thenApprove: approval.ErrUsed,
			decide: func(t *testing.T, r *router.Router, token string, _ context.CancelCauseFunc) {
				c, held, err := r.Approve(context.Background(), acme, token)
				if err != nil || c != nil || held.Tool != "echo" {
					t.Errorf("Approve with a route waiting: got call %v, held %q, err %v; want no call (the route runs it)", c, held.Tool, err)
				}
			}},
		{name: "declined", wait: time.Minute, wantCode: router.CodeDeclined, wantStep: router.StepDeclined, thenApprove: approval.ErrUsed,
			decide: func(t *testing.T, r *router.Router, token string, _ context.CancelCauseFunc) {
				if err := r.Decline(context.Background(), acme, token); err != nil {
					t.Errorf("Decline: %v", err)
				}
			}},
		{name: "no decision", wait: time.Millisecond, wantCode: router.CodeApprovalTimeout, wantPending: 1, wantStep: router.StepHeld,
			decide: func(*testing.T, *router.Router, string, context.CancelCauseFunc) {}},
		{name: "client left", wait: time.Minute, wantCode: router.CodeWithdrawn, wantStep: router.StepDeclined, thenApprove: approval.ErrUsed,
			decide: func(_ *testing.T, _ *router.Router, _ string, cancel context.CancelCauseFunc) {
				cancel(router.ErrClientGone)
			}},
		// A request ended otherwise (a shutdown) leaves the call held: its token still approves it.
		{name: "shut down", wait: time.Minute, wantCode: router.CodeApprovalRequired, wantPending: 1, wantStep: router.StepHeld, wantRuns: 1,
			stops: true, decide: func(_ *testing.T, _ *router.Router, _ string, cancel context.CancelCauseFunc) {
				cancel(errors.New("the server is shutting down"))
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			keeper := approval.NewKeeper(approval.NewMemory(), time.Hour)
			rounds := 0
			model := fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply {
				if strings.Contains(string(req.Format), `"use_tool"`) {
					rounds++
					if rounds > 1 {
						return choose(false, false)
					}
					return choose(false, false, "faults.echo")
				}
				return args(`{"message": "wipe it"}`)
			})
			e := newEnvWith(t, router.Settings{Approvals: keeper, Access: kioskAccess(t), ApprovalWait: tc.wait}, model)
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			var token string
			out, err := e.router.Route(ctx, router.Request{Query: "echo it", Identity: acme, OnEvent: func(ev router.Event) {
				if ev.Type == router.EventApprovalRequired {
					token = ev.Pending.Token
					tc.decide(t, e.router, token, cancel)
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			if token == "" {
				t.Fatal("no approval_required event")
			}
			if len(out.Calls) == 0 {
				t.Fatalf("no calls (stopped %q, %s)", out.Stopped, out.Degraded)
			}
			c := out.Calls[0]
			switch {
			case tc.wantCode == "" && (c.Error != nil || c.Result == nil || c.Result.Text != "wipe it"):
				t.Errorf("call: error %+v, result %+v; want it run with its result", c.Error, c.Result)
			case tc.wantCode != "" && (c.Error == nil || c.Error.Code != tc.wantCode):
				t.Errorf("call error %+v, want code %q", c.Error, tc.wantCode)
			}
			wantRuns := tc.wantRuns
			if tc.stops {
				wantRuns = 0 // it runs when the token is used below
			}
			if n := len(e.faults.Calls()); n != wantRuns {
				t.Errorf("the held call ran %d times, want %d", n, wantRuns)
			}
			wantStopped := out.Stopped != router.StopApprovalRequired // the route went on
			if tc.stops {
				wantStopped = out.Stopped == router.StopDeadline
			}
			if len(out.Pending) != tc.wantPending || !wantStopped {
				t.Errorf("%d pending, stopped %q; want %d pending (the request ended: %v)", len(out.Pending), out.Stopped, tc.wantPending, tc.stops)
			}
			if !hasStep(out, tc.wantStep) {
				t.Errorf("the trace has no %q step", tc.wantStep)
			}
			_, _, err = e.router.Approve(context.Background(), acme, token)
			if !errors.Is(err, tc.thenApprove) {
				t.Errorf("approving after the route answered: %v, want %v", err, tc.thenApprove)
			}
			if tc.thenApprove == nil && len(e.faults.Calls()) != 1 && tc.wantCode != "" {
				t.Errorf("a late approval ran the call %d times, want once", len(e.faults.Calls()))
			}
		})
	}
}
