package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"toolrouter/access"
	"toolrouter/internal/fakeollama"
	"toolrouter/limits"
	"toolrouter/observe"
	"toolrouter/router"
	"toolrouter/server"
	"toolrouter/usage"
)

// workBodies is a request for each work door of the route table: a door that is work and has
// none here fails TestEveryWorkDoor, so that no work door goes untested.
var workBodies = map[string]string{
	"/v1/route":            `{"query":"hi"}`,
	"/v1/route/stream":     `{"query":"hi"}`,
	"/v1/answer":           `{"query":"hi","synthesize":"never"}`,
	"/v1/answer/stream":    `{"query":"hi","synthesize":"never"}`,
	"/v1/chat/completions": `{"model":"fake","messages":[{"role":"user","content":"hi"}]}`,
	"/v1/approve":          `{"token":"tr_nope"}`,
	"/api/chat":            `{"model":"fake","messages":[{"role":"user","content":"hi"}],"stream":false}`,
}

// doorsDeps are the API's parts for the table tests: a real router over a fake model and real MCP
// servers, a fake completer, real keys, a real Limiter that admits acme/research once a minute, a
// real usage recorder over SQLite, and every optional door on.
func doorsDeps(t *testing.T) (server.Deps, *usage.Recorder) {
	t.Helper()
	model := fakeollama.New(t, fakeollama.Reply{Content: `{"reasoning":"r","use_tool":false,"calls":[],"needs_more":false,"direct":false}`})
	inv := newInventory(t)
	l, err := limits.New(limits.Options{Orgs: limitsOrgs(access.Limits{}, access.Limits{RequestsPerMinute: 1}, access.Limits{}), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	s, err := usage.Open(t.Context(), filepath.Join(t.TempDir(), "usage.db"), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	rec := usage.NewRecorder(s, usage.Options{Logger: quiet, FlushInterval: time.Hour})
	rt := router.New(model.Client(), inv, inv, router.Settings{Model: "fake", CallTimeout: 10 * time.Second}, quiet)
	return server.Deps{Router: rt, Inventory: inv, Model: model.Client(), Completer: &fakeCompleter{pieces: []string{"hello"}},
		Auth: authKeys(t), Limiter: l, Usage: rec, Observer: observe.Fanout{l, rec},
		Metrics: http.NotFoundHandler(), MCP: http.NotFoundHandler()}, rec
}

// TestEveryWorkDoor walks the route table: each work door refuses a request without a credential
// (401), serves the key's first request, refuses its second over the team's limit of one a minute
// (429, in the door's dialect), and both are usage records of the key's team.
func TestEveryWorkDoor(t *testing.T) {
	d, _ := doorsDeps(t)
	o := server.Options{Logger: quiet, Model: "fake"}
	n := 0
	for _, row := range server.Doors(d, o) {
		if row.Work != "door" {
			continue
		}
		n++
		t.Run(row.Path, func(t *testing.T) {
			body, ok := workBodies[row.Path]
			if !ok {
				t.Fatalf("work door %s has no request in workBodies: add one", row.Path)
			}
			d, rec := doorsDeps(t)
			app := server.New(d, o)
			method := row.Methods[0]
			send := func(key string) (int, string) {
				req := httptest.NewRequest(method, row.Path, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				if key != "" {
					req.Header.Set("Authorization", "Bearer "+key)
				}
				resp, err := app.Test(req, testTimeout)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var raw json.RawMessage
				_ = json.NewDecoder(resp.Body).Decode(&raw)
				return resp.StatusCode, string(raw)
			}
			if status, raw := send(""); status != http.StatusUnauthorized {
				t.Errorf("without a credential: got %d %s, want 401", status, raw)
			}
			if status, raw := send(teamKey); status == http.StatusUnauthorized || status == http.StatusTooManyRequests || status >= 500 {
				t.Errorf("first request: got %d %s, want it served", status, raw)
			}
			status, raw := send(teamKey)
			if status != http.StatusTooManyRequests {
				t.Errorf("second request: got %d %s, want 429", status, raw)
			}
			checkDialect(t, row.Dialect, raw, "requests_per_minute")
			if err := rec.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			sum, err := rec.Query(t.Context(), usage.Query{Since: time.Now().Add(-time.Hour), Until: time.Now().Add(time.Minute), GroupBy: usage.ByTeam})
			if err != nil {
				t.Fatal(err)
			}
			var got int64
			for _, r := range sum.Rows {
				if r.Key == "acme/research" {
					got = r.Requests
				}
			}
			if got != 2 {
				t.Errorf("usage records of acme/research: got %d requests, want 2 (%+v)", got, sum.Rows)
			}
		})
	}
	if n < len(workBodies) {
		t.Errorf("the table has %d work doors, want at least the %d of workBodies", n, len(workBodies))
	}
}

// TestErrorsInTheDoorsDialect: every door (the probes and Ollama's version aside, served without one) answers a request without a credential with a 401 in
// its own dialect: toolrouter's {"error": {"code", "message"}}, OpenAI's {"error": {"message",
// "type", "param", "code"}}, or Ollama's {"error": "message"}.
func TestErrorsInTheDoorsDialect(t *testing.T) {
	d, _ := doorsDeps(t)
	o := server.Options{Logger: quiet, Model: "fake"}
	app := server.New(d, o)
	dialects := map[string]int{}
	for _, row := range server.Doors(d, o) {
		if row.Path == "/healthz" || row.Path == "/readyz" || row.Path == "/api/version" {
			continue // served without a credential
		}
		for _, m := range row.Methods {
			path := strings.Replace(row.Path, "*", "x", 1)
			t.Run(m+" "+path, func(t *testing.T) {
				req := httptest.NewRequest(m, path, strings.NewReader(`{}`))
				req.Header.Set("Content-Type", "application/json")
				resp, err := app.Test(req, testTimeout)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var raw json.RawMessage
				_ = json.NewDecoder(resp.Body).Decode(&raw)
				if resp.StatusCode != http.StatusUnauthorized {
					t.Fatalf("got %d %s, want 401", resp.StatusCode, raw)
				}
				checkDialect(t, row.Dialect, string(raw), "credential")
				dialects[row.Dialect]++
			})
		}
	}
	for _, want := range []string{"toolrouter", "openai", "ollama"} {
		if dialects[want] == 0 {
			t.Errorf("no door speaks %s", want)
		}
	}
}

// checkDialect checks raw is an error body in the dialect whose message says want.
func checkDialect(t *testing.T, dialect, raw, want string) {
	t.Helper()
	var body map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &body); err != nil || len(body) != 1 || body["error"] == nil {
		t.Fatalf("got %s, want {\"error\": ...} alone", raw)
	}
	var msg string
	switch dialect {
	case "ollama":
		if err := json.Unmarshal(body["error"], &msg); err != nil {
			t.Fatalf("got %s, want Ollama's {\"error\": \"message\"}", raw)
		}
	case "openai":
		var e map[string]json.RawMessage
		_ = json.Unmarshal(body["error"], &e)
		for _, k := range []string{"message", "type", "param", "code"} {
			if _, ok := e[k]; !ok {
				t.Fatalf("got %s, want OpenAI's error with %s", raw, k)
			}
		}
		_ = json.Unmarshal(e["message"], &msg)
	case "toolrouter":
		var e struct {
			Code, Message string
		}
		if err := json.Unmarshal(body["error"], &e); err != nil || e.Code == "" {
			t.Fatalf("got %s, want toolrouter's {\"error\": {\"code\", \"message\"}}", raw)
		}
		msg = e.Message
	default:
		t.Fatalf("unknown dialect %q", dialect)
	}
	if !strings.Contains(msg, want) {
		t.Errorf("got message %q, want it to say %q", msg, want)
	}
}
