package router_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"toolrouter/access"
	"toolrouter/approval"
	"toolrouter/router"
)

// TestDecide: who may decide on a held call in the console, and what deciding does. The identity
// that asked may, and the approvers its org names; an identity of another org may not, nor an
// admin once the org names approvers; with none named, an admin may. An approved call runs
// once, as held; a declined one never; an expired, used or changed one is refused with the
// error POST /v1/approve gives, and a refused decision leaves the call for a later one. Each
// decision is recorded with who made it, and the listing shows each viewer only what it may
// decide.
func TestDecide(t *testing.T) {
	orgs, err := access.New(access.Orgs{
		"acme":   {Teams: map[string]access.Team{"ops": {}, "dev": {}}, Approvers: access.Approvers{Approvers: []string{"acme/ops", "lead@acme"}}},
		"globex": {Teams: map[string]access.Team{"ops": {}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var (
		dev       = access.Identity{Org: "acme", Team: "dev", Name: "dev-key"}
		ops       = access.Identity{Org: "acme", Team: "ops", Name: "ops-key"}
		lead      = access.Identity{Org: "acme", Name: "lead@acme"}
		globex    = access.Identity{Org: "globex", Team: "ops", Name: "globex-key"}
		globexDev = access.Identity{Org: "globex", Name: "globex-admin"}
	)
	tests := []struct {
		name     string
		owner    access.Identity
		viewer   access.Identity
		admin    bool
		decision approval.Decision
		ttl      time.Duration
		pin      string // "" the tool's own
		used     bool
		want     error
		wantRuns int
	}{
		{name: "the identity that asked approves", owner: dev, viewer: dev, decision: approval.Approved, wantRuns: 1},
		{name: "the identity that asked declines", owner: dev, viewer: dev, decision: approval.Declined},
		{name: "an approver the org names, by identity", owner: dev, viewer: ops, decision: approval.Approved, wantRuns: 1},
		{name: "an approver the org names, by key name", owner: dev, viewer: lead, decision: approval.Approved, wantRuns: 1},
		{name: "another org's identity is refused", owner: dev, viewer: globex, decision: approval.Approved, want: router.ErrNotApprover},
		{name: "another org's key bearing an approver's name is refused", owner: dev, viewer: access.Identity{Org: "globex", Name: "lead@acme"},
			decision: approval.Approved, want: router.ErrNotApprover},
		{name: "an admin, where the org names approvers, is refused", owner: dev, viewer: globexDev, admin: true, decision: approval.Declined,
			want: router.ErrNotApprover},
		{name: "an admin, where the org names none", owner: globex, viewer: lead, admin: true, decision: approval.Approved, wantRuns: 1},
		{name: "not an admin, where the org names none", owner: globex, viewer: lead, decision: approval.Approved, want: router.ErrNotApprover},
		{name: "expired", owner: dev, viewer: dev, ttl: time.Nanosecond, decision: approval.Approved, want: approval.ErrExpired},
		{name: "another org's identity, on an expired call, learns only that it may not decide", owner: dev, viewer: globex,
			ttl: time.Nanosecond, decision: approval.Approved, want: router.ErrNotApprover},
		{name: "used", owner: dev, viewer: dev, used: true, decision: approval.Approved, want: approval.ErrUsed},
		{name: "the tool's definition changed", owner: dev, viewer: ops, pin: "a-definition-since-replaced", decision: approval.Approved,
			want: router.ErrToolChanged},
		{name: "a decline of a changed tool still declines", owner: dev, viewer: ops, pin: "a-definition-since-replaced",
			decision: approval.Declined},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ttl := tc.ttl
			if ttl == 0 {
				ttl = time.Hour
			}
			store := approval.NewMemory()
			var outcomes []approval.Decision
			e := newEnv(t, router.Settings{Approvals: approval.NewKeeper(store, ttl), Access: orgs,
				OnHeld: func(d approval.Decision, _ string, _ approval.Call) { outcomes = append(outcomes, d) }})
			ctx := context.Background()
			tool, ok := e.inv.Snapshot().Tool("faults.echo")
			if !ok {
				t.Fatal("no faults.echo")
			}
			pin := tc.pin
			if pin == "" {
				pin = tool.Pin
			}
			token, _, err := approval.NewKeeper(store, ttl).Hold(ctx, approval.Call{Identity: tc.owner.String(), Query: "say hi",
				Server: "faults", Tool: "echo", Arguments: map[string]any{"message": "hi"}, Pin: pin, Reason: "not read-only"}, approval.DefaultShare)
			if err != nil {
				t.Fatal(err)
			}
			id := approval.Key(token)
			if tc.used {
				if _, _, err := e.router.Approve(ctx, tc.owner, token); err != nil {
					t.Fatal(err)
				}
			}
			listed, err := e.router.Held(ctx, tc.viewer, tc.admin)
			if err != nil {
				t.Fatal(err)
			}
			wantListed := tc.want == nil || errors.Is(tc.want, router.ErrToolChanged)
			if got := len(listed) == 1 && listed[0].ID == id && listed[0].Call.Query == "say hi"; got != wantListed {
				t.Errorf("the viewer's listing: got %+v, want the call listed: %v", listed, wantListed)
			}
			runs := len(e.faults.Calls())
			c, held, err := e.router.Decide(ctx, tc.viewer, tc.admin, id, tc.decision)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if n := len(e.faults.Calls()) - runs; n != tc.wantRuns {
				t.Errorf("the call ran %d times, want %d", n, tc.wantRuns)
			}
			if tc.want != nil {
				if errors.Is(tc.want, router.ErrNotApprover) && tc.ttl == 0 {
					// Refused, the call is left for the identity that asked.
					if _, _, err := e.router.Decide(ctx, tc.owner, false, id, approval.Declined); err != nil {
						t.Errorf("the identity that asked, after a refused decision: %v", err)
					}
				}
				return
			}
			if held.Tool != "echo" || held.Identity != tc.owner.String() {
				t.Errorf("held %+v, want the call held", held)
			}
			if tc.decision == approval.Approved && (c == nil || c.Error != nil || c.Result == nil || c.Result.Text != "hi") {
				t.Errorf("approved: got call %+v, want it run with its result", c)
			}
			if _, _, err := e.router.Decide(ctx, tc.viewer, tc.admin, id, approval.Approved); !errors.Is(err, approval.ErrUsed) {
				t.Errorf("deciding twice: got %v, want ErrUsed", err)
			}
			ds, err := e.router.Decisions(ctx, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) != 1 || ds[0].ID != id || ds[0].Outcome != tc.decision || ds[0].By != tc.viewer.String()+" "+tc.viewer.Name {
				t.Errorf("decisions recorded: got %+v, want one %s by %s", ds, tc.decision, tc.viewer)
			}
			if len(outcomes) != 1 || outcomes[0] != tc.decision {
				t.Errorf("outcomes counted: got %v, want [%s]", outcomes, tc.decision)
			}
		})
	}
}

// TestDecideResumesTheWaitingRoute: a decision in the console on a call whose route waits goes to
// that route, which runs the call: Decide runs nothing itself. The listing shows the query, with
// the credentials in it masked.
func TestDecideResumesTheWaitingRoute(t *testing.T) {
	keeper := approval.NewKeeper(approval.NewMemory(), time.Hour)
	e := newEnv(t, router.Settings{Approvals: keeper, Access: kioskAccess(t), ApprovalWait: time.Minute},
		choose(false, false, "faults.echo"), args(`{"message": "wipe it"}`), choose(false, false))
	query := "echo it to https://bob:hunter2@example.com"
	out, err := e.router.Route(context.Background(), router.Request{Query: query, Identity: acme, OnEvent: func(ev router.Event) {
		if ev.Type != router.EventApprovalRequired {
			return
		}
		listed, err := e.router.Held(context.Background(), acme, false)
		if err != nil || len(listed) != 1 || !strings.HasPrefix(listed[0].Call.Query, "echo it to https://") ||
			strings.Contains(listed[0].Call.Query, "hunter2") {
			t.Errorf("listing: got %+v, %v; want the held call with its query, its credential masked", listed, err)
			return
		}
		c, _, err := e.router.Decide(context.Background(), acme, false, listed[0].ID, approval.Approved)
		if err != nil || c != nil {
			t.Errorf("Decide with a route waiting: got call %v, err %v; want no call (the route runs it)", c, err)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(e.faults.Calls()); n != 1 || len(out.Calls) == 0 || out.Calls[0].Result == nil || out.Calls[0].Result.Text != "wipe it" {
		t.Errorf("the call ran %d times; calls %+v; want once, in the route", n, out.Calls)
	}
}

// TestHeldListingMasksCredentials: a call to a tool that accepts secrets may be held with a
// credential in its arguments; the identity that asked sees it as it is, an admin deciding for
// others sees it masked, and the call still runs with the arguments as held.
func TestHeldListingMasksCredentials(t *testing.T) {
	const secret = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"
	store := approval.NewMemory()
	e := newEnv(t, router.Settings{Approvals: approval.NewKeeper(store, time.Hour)})
	ctx := context.Background()
	owner := access.Identity{Org: "acme", Team: "dev"}
	tool, _ := e.inv.Snapshot().Tool("faults.echo")
	if _, _, err := approval.NewKeeper(store, time.Hour).Hold(ctx, approval.Call{Identity: owner.String(), Server: "faults", Tool: "echo",
		Arguments: map[string]any{"message": secret}, Pin: tool.Pin}, approval.DefaultShare); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		viewer access.Identity
		admin  bool
		shown  bool
	}{{owner, false, true}, {access.Identity{Org: "ops"}, true, false}} {
		listed, err := e.router.Held(ctx, tc.viewer, tc.admin)
		if err != nil || len(listed) != 1 {
			t.Fatalf("%s: listed %v, %v", tc.viewer, listed, err)
		}
		if got := listed[0].Call.Arguments["message"] == secret; got != tc.shown {
			t.Errorf("%s sees %q; want the credential shown: %v", tc.viewer, listed[0].Call.Arguments["message"], tc.shown)
		}
	}
}
