package server_test

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"toolrouter/access"
	"toolrouter/approval"
	"toolrouter/console"
	"toolrouter/observe"
	"toolrouter/router"
	"toolrouter/server"
)

// fakeQueue is a queue of one held call, heldCall but owned by owner ("": acme/research), which
// only its owner and admins may decide; it counts the calls it runs.
type fakeQueue struct {
	id      string
	owner   string
	decided approval.Decision
	ran     int
}

var heldCall = approval.Call{RequestID: "r1", Identity: "acme/research", Query: "delete the draft", Server: "fs", Tool: "delete",
	Arguments: map[string]any{"path": "<img src=x onerror=alert(1)>"}, Reason: "not read-only", ExpiresAt: time.Now().Add(time.Hour)}

func (q *fakeQueue) may(viewer access.Identity, admin bool) bool {
	owner := q.owner
	if owner == "" {
		owner = heldCall.Identity
	}
	return admin || viewer.String() == owner
}

func (q *fakeQueue) Held(_ context.Context, viewer access.Identity, admin bool) ([]approval.Listed, error) {
	if q.decided != "" || !q.may(viewer, admin) {
		return []approval.Listed{}, nil
	}
	return []approval.Listed{{ID: q.id, Call: heldCall}}, nil
}

func (q *fakeQueue) Decide(_ context.Context, viewer access.Identity, admin bool, id string, d approval.Decision) (*router.Call, approval.Call, error) {
	switch {
	case id != q.id:
		return nil, approval.Call{}, approval.ErrUnknownToken
	case !q.may(viewer, admin):
		return nil, approval.Call{}, router.ErrNotApprover
	case q.decided != "":
		return nil, approval.Call{}, approval.ErrUsed
	}
	q.decided = d
	if d == approval.Declined {
		return nil, heldCall, nil
	}
	q.ran++
	return &router.Call{Step: 1, Server: "fs", Tool: "delete", Result: &router.Result{Text: "deleted"}}, heldCall, nil
}

func (q *fakeQueue) Decisions(context.Context, int) ([]approval.Decided, error) {
	if q.decided == "" {
		return []approval.Decided{}, nil
	}
	return []approval.Decided{{ID: q.id, Outcome: q.decided, By: "acme/ops", Identity: heldCall.Identity, Server: "fs", Tool: "delete"}}, nil
}

// TestConsoleApprovals: the console's approvals list what the caller may decide (admins also get
// the decisions), and its buttons decide, once, for whoever may: the owner and admins; another
// identity is refused, as is a page of another origin and a body that is not JSON. Decisions
// are observed (as POST /v1/approve is), the listing is not.
func TestConsoleApprovals(t *testing.T) {
	id := approval.Key("tra_x")
	bearer := func(k string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + k, "Content-Type": "application/json", "Origin": "http://127.0.0.1:8090"}
	}
	other := bearer(teamKey)
	other["Origin"] = "http://evil.example"
	form := bearer(adminKey)
	form["Content-Type"] = "text/plain"
	tests := []struct {
		name, method, path string
		headers            map[string]string
		status             int
		code               string
		has, lacks         []string
		ran                int
	}{
		{name: "no credential", method: "GET", path: "/ui/api/approvals", status: 401, code: "missing_credential"},
		{name: "the owner's list", method: "GET", path: "/ui/api/approvals", headers: bearer(teamKey), status: 200,
			has: []string{`"id":"` + id + `"`, `"query":"delete the draft"`, `"now":`}, lacks: []string{`"decisions"`}},
		{name: "an admin's list", method: "GET", path: "/ui/api/approvals", headers: bearer(adminKey), status: 200,
			has: []string{`"id":"` + id + `"`, `"decisions":[]`}},
		{name: "another action", method: "POST", path: "/ui/api/approvals/" + id + "/run", headers: bearer(teamKey), status: 404, code: "not_found"},
		{name: "an unknown id", method: "POST", path: "/ui/api/approvals/" + approval.Key("tra_y") + "/approve", headers: bearer(teamKey),
			status: 404, code: "unknown_token"},
		{name: "another origin's page", method: "POST", path: "/ui/api/approvals/" + id + "/approve", headers: other, status: 403,
			code: "origin_not_allowed"},
		{name: "a form's body", method: "POST", path: "/ui/api/approvals/" + id + "/approve", headers: form, status: 415,
			code: "unsupported_media_type"},
		{name: "the owner approves", method: "POST", path: "/ui/api/approvals/" + id + "/approve", headers: bearer(teamKey), status: 200,
			has: []string{`"decision":"approved"`, `"text":"deleted"`, `"tool":"delete"`}, ran: 1},
		{name: "approved twice", method: "POST", path: "/ui/api/approvals/" + id + "/approve", headers: bearer(adminKey), status: 409,
			code: "token_used", ran: 1},
		{name: "the list after", method: "GET", path: "/ui/api/approvals", headers: bearer(adminKey), status: 200,
			has: []string{`"approvals":[]`, `"outcome":"approved"`, `"by":"acme/ops"`}, ran: 1},
	}
	q := &fakeQueue{id: id}
	var seen []string
	app := approvalsApp(t, q, &seen)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, raw := sendTo(t, app, tc.method, tc.path, "{}", tc.headers)
			if resp.StatusCode != tc.status {
				t.Fatalf("got status %d (%s), want %d", resp.StatusCode, raw, tc.status)
			}
			if tc.code != "" {
				if code, _ := errorBody(t, raw); code != tc.code {
					t.Errorf("got code %q, want %q", code, tc.code)
				}
			}
			for _, s := range tc.has {
				if !bytes.Contains(raw, []byte(s)) {
					t.Errorf("got %s, want %s in it", raw, s)
				}
			}
			for _, s := range tc.lacks {
				if bytes.Contains(raw, []byte(s)) {
					t.Errorf("got %s, want no %s in it", raw, s)
				}
			}
			if q.ran != tc.ran {
				t.Errorf("the call ran %d times, want %d", q.ran, tc.ran)
			}
		})
	}
	for _, e := range seen {
		if e == "/ui/api/approvals" {
			t.Errorf("observed %v: want the listing unobserved, as the console's reads are", seen)
		}
	}
	if !slices.Contains(seen, "/ui/api/approvals/*") {
		t.Errorf("observed %v: want the decisions observed, as POST /v1/approve is", seen)
	}

	// Another identity than the owner, not an admin, may not decide.
	q2 := &fakeQueue{id: id, owner: "acme/elsewhere"}
	app2 := approvalsApp(t, q2, new([]string))
	resp, raw := sendTo(t, app2, "POST", "/ui/api/approvals/"+id+"/decline", "{}", bearer(teamKey))
	if code, _ := errorBody(t, raw); resp.StatusCode != http.StatusForbidden || code != "not_approver" {
		t.Errorf("another identity: got %d %s, want 403 not_approver", resp.StatusCode, raw)
	}
	if q2.decided != "" {
		t.Errorf("another identity decided %q", q2.decided)
	}
}

// approvalsApp serves the console with q as its queue, callers authenticating by key.
func approvalsApp(t *testing.T, q server.Queue, seen *[]string) *fiber.App {
	t.Helper()
	files, err := console.NewFiles()
	if err != nil {
		t.Fatal(err)
	}
	d := server.Deps{Router: routerFunc(func(context.Context, router.Request) (*router.Outcome, error) {
		return &router.Outcome{Calls: []router.Call{}}, nil
	}), Queue: q, Observer: observerFunc(func(r *observe.Report) { *seen = append(*seen, r.Endpoint) }),
		Console: &server.Console{Files: files}}
	d.Auth = authKeys(t)
	return server.New(d, server.Options{Logger: quiet, Listen: "127.0.0.1:8090", AdminReadyz: true})
}
