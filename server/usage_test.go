package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"toolrouter/access"
	"toolrouter/observe"
	"toolrouter/router"
	"toolrouter/server"
	"toolrouter/usage"
)

// usageStore is a real SQLite usage database holding, an hour ago, two requests of acme/research
// that called calculator.add (one failing) and one of globex that called nothing.
func usageStore(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "usage.db")
	s, err := usage.Open(t.Context(), path, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	rec := usage.NewRecorder(s, usage.Options{Logger: quiet})
	start := time.Now().Add(-time.Hour)
	for i, id := range []access.Identity{{Org: "acme", Team: "research"}, {Org: "acme", Team: "research"}, {Org: "globex"}} {
		rep := &observe.Report{Start: start, Duration: 10 * time.Millisecond, Endpoint: "/v1/route", Status: 200,
			Identity: id, Authenticated: true, Outcome: &router.Outcome{}}
		if id.Org == "acme" {
			c := router.Call{Server: "calculator", Tool: "add", Result: &router.Result{Text: "3"}, ExecuteMS: 1}
			if i == 1 {
				c.Result, c.Error = nil, &router.Error{Code: router.CodeToolFailed}
			}
			rep.Outcome.Calls = []router.Call{c}
		}
		rec.Observe(t.Context(), rep)
	}
	if err := rec.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	return path
}

// usageApp serves the usage database at path; with keys, callers authenticate with teamKey
// (acme/research) or adminKey (acme/ops, an admin), as main wires it.
func usageApp(t *testing.T, path string, keys bool) (*fiber.App, *usage.Recorder) {
	t.Helper()
	s, err := usage.Open(t.Context(), path, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	rec := usage.NewRecorder(s, usage.Options{Logger: quiet, FlushInterval: time.Hour})
	d := server.Deps{Usage: rec, Observer: rec}
	o := server.Options{Logger: quiet}
	if keys {
		d.Auth, o.AdminReadyz = authKeys(t), true
	}
	return server.New(d, o), rec
}

type usageRow struct {
	Key        string `json:"key"`
	Requests   int    `json:"requests"`
	ToolCalls  int    `json:"tool_calls"`
	ToolErrors int    `json:"tool_errors"`
}

type usageSummary struct {
	Since   time.Time  `json:"since"`
	Until   time.Time  `json:"until"`
	GroupBy string     `json:"group_by"`
	Rows    []usageRow `json:"rows"`
}

func getUsage(t *testing.T, app *fiber.App, path, key string) (int, []byte) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := app.Test(req, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		t.Fatalf("GET %s: body is not JSON: %v", path, err)
	}
	return resp.StatusCode, raw
}

func TestUsageEndpoint(t *testing.T) {
	path := usageStore(t)
	open, openRec := usageApp(t, path, false)
	authed, authedRec := usageApp(t, path, true)
	off := server.New(server.Deps{}, server.Options{Logger: quiet})
	tests := []struct {
		name     string
		app      *fiber.App
		path     string
		key      string
		status   int
		code     string
		wantRows []usageRow
	}{
		{name: "no auth: open, by org", app: open, path: "/v1/usage", status: 200,
			wantRows: []usageRow{{"acme", 2, 2, 1}, {"globex", 1, 0, 0}}},
		{name: "admin, by team", app: authed, path: "/v1/usage?group_by=team", key: adminKey, status: 200,
			wantRows: []usageRow{{"acme/research", 2, 2, 1}, {"globex", 1, 0, 0}}},
		{name: "admin, by tool", app: authed, path: "/v1/usage?group_by=tool&since=2h", key: adminKey, status: 200,
			wantRows: []usageRow{{"calculator.add", 2, 2, 1}}},
		{name: "admin, a window without requests", app: authed, path: "/v1/usage?since=30m", key: adminKey, status: 200,
			wantRows: []usageRow{}},
		{name: "non-admin is forbidden", app: authed, path: "/v1/usage", key: teamKey, status: 403, code: "forbidden"},
		{name: "no credential", app: authed, path: "/v1/usage", status: 401, code: "missing_credential"},
		{name: "bad since", app: open, path: "/v1/usage?since=yesterday", status: 400, code: "bad_since"},
		{name: "bad until", app: open, path: "/v1/usage?until=2026-02-30T00:00:00Z", status: 400, code: "bad_until"},
		{name: "since after until", app: open, path: "/v1/usage?since=1h&until=2h", status: 400, code: "bad_since"},
		{name: "bad group_by", app: open, path: "/v1/usage?group_by=country", status: 400, code: "bad_group_by"},
		{name: "usage off", app: off, path: "/v1/usage", status: 404, code: "usage_off"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, raw := getUsage(t, tc.app, tc.path, tc.key)
			if status != tc.status {
				t.Fatalf("got status %d (%s), want %d", status, raw, tc.status)
			}
			if tc.code != "" {
				if code, _ := errorBody(t, raw); code != tc.code {
					t.Errorf("got code %q, want %q", code, tc.code)
				}
				return
			}
			var s usageSummary
			if err := json.Unmarshal(raw, &s); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(s.Rows, tc.wantRows) {
				t.Errorf("got rows %+v, want %+v", s.Rows, tc.wantRows)
			}
			if d := s.Until.Sub(s.Since); d <= 0 || s.GroupBy == "" {
				t.Errorf("got window %v..%v by %q, want a window and a grouping", s.Since, s.Until, s.GroupBy)
			}
		})
	}
	// The requests served were recorded: the admin's (acme/ops) reads, and the anonymous ones; not the refused.
	for _, rec := range []*usage.Recorder{openRec, authedRec} {
		if err := rec.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	_, rec := usageApp(t, path, false)
	defer rec.Close(context.Background())
	s, err := rec.Query(t.Context(), usage.Query{Since: time.Now().Add(-time.Minute), Until: time.Now().Add(time.Minute), GroupBy: usage.ByTeam})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, r := range s.Rows {
		got[r.Key] = r.Requests
	}
	// open served 5 (all anonymous), authed 3 from the admin; the team's (403) and the refused
	// credential's (401) are not usage.
	want := map[string]int64{access.DefaultOrg: 5, "acme/ops": 3, "acme/research": 0, "": 0}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("recorded requests of %q: got %d, want %d (all: %v)", k, got[k], n, got)
		}
	}
}
