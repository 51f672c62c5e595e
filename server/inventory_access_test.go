package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"toolrouter/config"
	"toolrouter/internal/fakeollama"
	"toolrouter/inventory"
	"toolrouter/server"
)

// TestInventoryDetailsAreForAdmins: GET /v1/inventory shows how each server is run (transport,
// command, URL) and why it failed (error, last_error with a stdio server's stderr) to an admin and,
// when callers do not authenticate, to any request on the loopback listen; an identity without
// admin scope sees only each server's name and status and the tools it may use.
func TestInventoryDetailsAreForAdmins(t *testing.T) {
	httpSrv := calculatorServer(t)
	inv := startInventory(t, map[string]config.Server{
		"calculator": {Transport: config.TransportStreamableHTTP, URL: httpSrv.URL + "/mcp", Purpose: "Arithmetic"},
		"broken": {Transport: config.TransportStdio, Command: "sh",
			Args: []string{"-c", "echo stderr-detail >&2; exit 1"}, Env: map[string]string{"TOKEN": "env-s3cret"}},
	}, inventory.Options{Logger: quiet})
	waitInventory(t, inv, "calculator up and broken down", func(s *inventory.Snapshot) bool {
		up, failed := false, false
		for _, sv := range s.Servers {
			up = up || sv.Name == "calculator" && sv.Status == inventory.StateUp
			failed = failed || sv.Name == "broken" && strings.Contains(sv.LastError, "stderr-detail")
		}
		return up && failed
	})

	authn := authKeys(t)
	model := fakeollama.New(t)
	serve := func(d server.Deps, o server.Options) *authEnv {
		d.Inventory, d.Model = inv, model.Client()
		o.Model, o.ModelHost, o.Logger = "fake", model.URL, quiet
		return &authEnv{base: serveOn(t, d, o)}
	}
	authed := serve(server.Deps{Auth: authn, Access: authOrgs(t)}, server.Options{AdminReadyz: true})
	open := serve(server.Deps{}, server.Options{})

	details := []string{"transport", "url", "command", "error", "last_error", "since", "restarts", "list_changed", "refreshes", "excluded_tools"}
	public := []string{"name", "display_name", "status", "tools"}
	tests := []struct {
		name    string
		env     *authEnv
		headers map[string]string
		caller  string              // ?caller=, when set
		present map[string][]string // server: fields it must have
		absent  []string            // fields no server may have
		tools   map[string]int      // server: tools listed
	}{
		{name: "admin", env: authed, headers: bearer(adminKey),
			present: map[string][]string{"calculator": {"transport", "url", "purpose"}, "broken": {"transport", "command", "last_error"}},
			tools:   map[string]int{"calculator": 8, "broken": 0}},
		{name: "non-admin", env: authed, headers: bearer(teamKey),
			present: map[string][]string{"calculator": append(public, "purpose"), "broken": public},
			absent:  details,
			tools:   map[string]int{"calculator": 8, "broken": 0}},
		{name: "non-admin narrowed by caller", env: authed, headers: bearer(teamKey), caller: "summariser", absent: details,
			present: map[string][]string{"calculator": public, "broken": public},
			tools:   map[string]int{"calculator": 2, "broken": 0}},
		{name: "unauthenticated loopback", env: open,
			present: map[string][]string{"calculator": {"transport", "url"}, "broken": {"transport", "command", "last_error"}},
			tools:   map[string]int{"calculator": 8, "broken": 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := "/v1/inventory"
			if tc.caller != "" {
				path += "?caller=" + tc.caller
			}
			r := tc.env.do(t, request{method: "GET", path: path, headers: tc.headers})
			if r.status != 200 {
				t.Fatalf("got %d %s, want 200", r.status, r.raw)
			}
			var got struct {
				Servers []map[string]json.RawMessage `json:"servers"`
			}
			if err := json.Unmarshal(r.raw, &got); err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, sv := range got.Servers {
				var name string
				_ = json.Unmarshal(sv["name"], &name)
				seen[name] = true
				for _, f := range tc.present[name] {
					if _, ok := sv[f]; !ok {
						t.Errorf("server %s: got no %q in %s, want it", name, f, r.raw)
					}
				}
				for _, f := range tc.absent {
					if _, ok := sv[f]; ok {
						t.Errorf("server %s: got %q in %s, want it left out", name, f, r.raw)
					}
				}
				var tools []json.RawMessage
				_ = json.Unmarshal(sv["tools"], &tools)
				if want, ok := tc.tools[name]; ok && len(tools) != want {
					t.Errorf("server %s: got %d tools, want %d", name, len(tools), want)
				}
			}
			for name := range tc.present {
				if !seen[name] {
					t.Errorf("got servers %s, want %s listed", r.raw, name)
				}
			}
			leaked := strings.Contains(string(r.raw), "stderr-detail") || strings.Contains(string(r.raw), httpSrv.Listener.Addr().String())
			if wantDetails := tc.absent == nil; leaked != wantDetails {
				t.Errorf("got stderr or URL shown %v, want %v: %s", leaked, wantDetails, r.raw)
			}
			if strings.Contains(string(r.raw), "env-s3cret") {
				t.Errorf("got the server's env in %s", r.raw)
			}
		})
	}
}
