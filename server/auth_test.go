package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"toolrouter/access"
	"toolrouter/auth"
	"toolrouter/internal/fakeollama"
	"toolrouter/internal/testmcp"
	"toolrouter/inventory"
	"toolrouter/retrieve"
	"toolrouter/router"
	"toolrouter/server"
)

// The keys of the authenticated server: a team's, and an admin's of another team.
const (
	teamKey  = "tr_research-team-key-0123456789"
	adminKey = "tr_ops-admin-key-0123456789abcd"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// authOrgs: org acme may use everything; its team research the calculator and faults.echo; the
// team's agent summariser only calculator.add and calculator.subtract.
func authOrgs(t testing.TB) *access.Hierarchy {
	t.Helper()
	h, err := access.New(access.Orgs{"acme": {Allow: []string{"*"}, Teams: map[string]access.Team{
		"research": {Allow: []string{"calculator", "faults.echo"}, Agents: map[string]access.Agent{
			"summariser": {Allow: []string{"calculator.add", "calculator.subtract"}},
		}},
		"ops": {},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// authEnv is the API served by server.Serve on a real loopback listener, as main wires it with
// auth.keys, auth.admins and orgs: a real router over the calculator and the fault server, a fake
// model, retrieval on, /readyz details for admins, and the log captured at debug level.
type authEnv struct {
	base   string
	model  *fakeollama.Server
	faults *testmcp.Faults
	logs   *syncBuffer
}

func newAuthEnv(t *testing.T, o server.Options, replies ...fakeollama.Reply) *authEnv {
	t.Helper()
	model := fakeollama.New(t, replies...)
	faults := testmcp.NewFaults()
	inv := testmcp.Inventory(t, faults, inventory.Options{Logger: quiet})

	orgs := authOrgs(t)
	authn := authKeys(t)
	ret, err := retrieve.NewRetriever(retrieve.NewIndex(), nil, retrieve.DenseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rt := router.New(model.Client(), inv, inv, router.Settings{Model: "fake", CallTimeout: 10 * time.Second,
		Access: orgs, Ranker: retrieve.NewCatalog(ret, nil, quiet)}, quiet)
	logs := &syncBuffer{}
	o.Model, o.ModelHost, o.AdminReadyz = "fake", model.URL, true
	o.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	deps := server.Deps{Router: rt, Inventory: inv, Model: model.Client(), Search: rt, Auth: authn, Access: orgs}

	return &authEnv{base: serveOn(t, deps, o), model: model, faults: faults, logs: logs}
}

// authKeys authenticates two keys of org acme: teamKey (team research) and adminKey (team ops,
// the admins).
func authKeys(t *testing.T) *auth.Authenticator {
	t.Helper()
	authn, err := auth.New(t.Context(), auth.Config{Keys: []auth.Key{
		{Name: "research-bot", SHA256: sha(teamKey), Org: "acme", Team: "research"},
		{Name: "ops-admin", SHA256: sha(adminKey), Org: "acme", Team: "ops"},
	}, Admins: []string{"acme/ops"}}, auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return authn
}

// serveOn serves d and o on a loopback listener until the test ends, and returns its base URL.
func serveOn(t *testing.T, d server.Deps, o server.Options) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- server.Serve(ctx, ln, d, o) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serving: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// request is one HTTP request of a test: headers may set Host.
type request struct {
	method, path, body string
	headers            map[string]string
}

// response is what came back.
type response struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

func (e *authEnv) do(t *testing.T, r request) response {
	t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req, err := http.NewRequest(r.method, e.base+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := response{status: resp.StatusCode, header: resp.Header, raw: raw}
	_ = json.Unmarshal(raw, &out.body)
	return out
}

func bearer(key string) map[string]string { return map[string]string{"Authorization": "Bearer " + key} }

// TestAuthentication: a request without a credential or with a wrong one is a 401 with
// WWW-Authenticate, and runs nothing; /healthz needs none, and /readyz shows its details only to
// an admin.
func TestAuthentication(t *testing.T) {
	e := newAuthEnv(t, server.Options{})
	tests := []struct {
		name       string
		req        request
		wantStatus int
		wantCode   string
		challenge  string // in WWW-Authenticate
		wantKeys   []string
	}{
		{name: "no credential", req: request{method: "GET", path: "/v1/inventory"}, wantStatus: 401, wantCode: "missing_credential", challenge: `Bearer realm="toolrouter"`},
		{name: "no credential on a POST", req: request{method: "POST", path: "/v1/route", body: `{"query":"2+3"}`}, wantStatus: 401, wantCode: "missing_credential", challenge: `Bearer realm="toolrouter"`},
		{name: "no credential on a stream", req: request{method: "POST", path: "/v1/answer/stream", body: `{"query":"2+3"}`}, wantStatus: 401, wantCode: "missing_credential", challenge: `Bearer realm="toolrouter"`},
		{name: "wrong bearer key", req: request{method: "GET", path: "/v1/inventory", headers: bearer(teamKey + "x")}, wantStatus: 401, wantCode: "invalid_credential", challenge: `error="invalid_token"`},
		{name: "wrong x-api-key", req: request{method: "POST", path: "/v1/route", body: `{"query":"2+3"}`, headers: map[string]string{"X-Api-Key": "tr_guess"}}, wantStatus: 401, wantCode: "invalid_credential", challenge: `error="invalid_token"`},
		{name: "basic auth", req: request{method: "GET", path: "/v1/inventory", headers: map[string]string{"Authorization": "Basic " + teamKey}}, wantStatus: 401, wantCode: "invalid_credential", challenge: `error="invalid_token"`},
		{name: "unknown path without a credential", req: request{method: "GET", path: "/v1/secret"}, wantStatus: 401, wantCode: "missing_credential", challenge: `Bearer realm="toolrouter"`},
		{name: "good key", req: request{method: "GET", path: "/v1/inventory", headers: bearer(teamKey)}, wantStatus: 200, wantKeys: []string{"servers", "version"}},
		{name: "good key in x-api-key", req: request{method: "GET", path: "/v1/inventory", headers: map[string]string{"X-Api-Key": teamKey}}, wantStatus: 200, wantKeys: []string{"servers", "version"}},
		{name: "healthz is open", req: request{method: "GET", path: "/healthz"}, wantStatus: 200, wantKeys: []string{"status"}},
		{name: "Ollama's version is open, as Ollama clients ask it", req: request{method: "GET", path: "/api/version"}, wantStatus: 200, wantKeys: []string{"version"}},
		{name: "readyz without a credential", req: request{method: "GET", path: "/readyz"}, wantStatus: 200, wantKeys: []string{"ready"}},
		{name: "readyz for a non-admin", req: request{method: "GET", path: "/readyz", headers: bearer(teamKey)}, wantStatus: 200, wantKeys: []string{"ready"}},
		{name: "readyz for an admin", req: request{method: "GET", path: "/readyz", headers: bearer(adminKey)}, wantStatus: 200, wantKeys: []string{"model", "quarantined_tools", "ready", "servers"}},
		{name: "readyz with a wrong key", req: request{method: "GET", path: "/readyz", headers: bearer("tr_wrong")}, wantStatus: 401, wantCode: "invalid_credential", challenge: `error="invalid_token"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(t, tc.req)
			if r.status != tc.wantStatus {
				t.Fatalf("got %d %s, want %d", r.status, r.raw, tc.wantStatus)
			}
			if tc.wantCode != "" {
				if code, msg := errorBody(t, r.raw); code != tc.wantCode || strings.Contains(msg, teamKey) {
					t.Errorf("got code %q message %q, want %q without the key", code, msg, tc.wantCode)
				}
			}
			if got := r.header.Get("WWW-Authenticate"); (tc.challenge == "") != (got == "") || !strings.Contains(got, tc.challenge) {
				t.Errorf("got WWW-Authenticate %q, want one containing %q", got, tc.challenge)
			}
			if tc.wantKeys != nil {
				if got := slices.Sorted(func(yield func(string) bool) {
					for k := range r.body {
						if !yield(k) {
							return
						}
					}
				}); !slices.Equal(got, tc.wantKeys) {
					t.Errorf("got fields %v, want %v", got, tc.wantKeys)
				}
			}
		})
	}
	if n := len(e.model.Requests()); n != 0 {
		t.Errorf("got %d model requests, want none", n)
	}
}

// TestCallerOnlyNarrows: a request's caller may name its identity or an identity below it; any
// other is a 403 naming the problem, and nothing runs.
func TestCallerOnlyNarrows(t *testing.T) {
	e := newAuthEnv(t, server.Options{})
	tests := []struct {
		name string
		req  request
		want string // in the message
	}{
		{"another team", request{method: "POST", path: "/v1/route", body: `{"query":"2+3","caller":"acme/ops"}`}, `caller "acme/ops" does not narrow your identity acme/research`},
		{"the org above", request{method: "POST", path: "/v1/answer", body: `{"query":"2+3","caller":"acme"}`}, `caller "acme" does not narrow your identity acme/research`},
		{"another org", request{method: "POST", path: "/v1/route/stream", body: `{"query":"2+3","caller":"globex/research"}`}, `caller "globex/research" does not narrow your identity acme/research`},
		{"an agent that does not exist", request{method: "GET", path: "/v1/inventory?caller=writer"}, `caller "writer" does not narrow your identity acme/research: it may name one of its agents`},
		{"search as another team", request{method: "GET", path: "/v1/inventory/search?q=add&caller=ops"}, `caller "ops" does not narrow your identity acme/research`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.headers = bearer(teamKey)
			r := e.do(t, tc.req)
			if r.status != http.StatusForbidden {
				t.Fatalf("got %d %s, want 403", r.status, r.raw)
			}
			if code, msg := errorBody(t, r.raw); code != "forbidden" || !strings.Contains(msg, tc.want) {
				t.Errorf("got code %q message %q, want forbidden containing %q", code, msg, tc.want)
			}
		})
	}
	if n := len(e.model.Requests()); n != 0 {
		t.Errorf("got %d model requests, want none", n)
	}
}

// TestAgentSeesOnlyItsTools: a team's key narrowed to one of its agents sees only the agent's
// tools in the inventory, the shortlist, the phase-1 prompt and enum, and can run no other; the
// team's key alone keeps the team's tools. The identity is in the outcome and the access log.
func TestAgentSeesOnlyItsTools(t *testing.T) {
	e := newAuthEnv(t, server.Options{},
		choose("faults.echo"),                 // the agent's request: hidden from it
		choose("faults.echo"), echoArgs("hi"), // the team's request: runs
	)
	agent := []string{"calculator.add", "calculator.subtract"}

	names := func(r response) []string {
		var inv struct {
			Servers []struct {
				Tools []struct{ Name string } `json:"tools"`
			} `json:"servers"`
		}
		if err := json.Unmarshal(r.raw, &inv); err != nil {
			t.Fatalf("decoding %s: %v", r.raw, err)
		}
		var out []string
		for _, s := range inv.Servers {
			for _, tool := range s.Tools {
				out = append(out, tool.Name)
			}
		}
		slices.Sort(out)
		return out
	}
	if got := names(e.do(t, request{method: "GET", path: "/v1/inventory?caller=summariser", headers: bearer(teamKey)})); !slices.Equal(got, agent) {
		t.Errorf("the agent's inventory: got %v, want %v", got, agent)
	}
	team := names(e.do(t, request{method: "GET", path: "/v1/inventory", headers: bearer(teamKey)}))
	if !slices.Contains(team, "faults.echo") || !slices.Contains(team, "calculator.divide") || slices.Contains(team, "faults.fail") {
		t.Errorf("the team's inventory: got %v, want the calculator and faults.echo", team)
	}

	r := e.do(t, request{method: "GET", path: "/v1/inventory/search?k=20&q=" + url.QueryEscape("echo a message or divide numbers") + "&caller=acme/research/summariser", headers: bearer(teamKey)})
	var offer router.Offer
	if err := json.Unmarshal(r.raw, &offer); err != nil || r.status != 200 {
		t.Fatalf("search: got %d %s", r.status, r.raw)
	}
	var ranked []string
	for _, tool := range offer.Ranked {
		ranked = append(ranked, tool.Name)
	}
	slices.Sort(ranked)
	if !slices.Equal(ranked, agent) {
		t.Errorf("the agent's shortlist: got %v, want %v", ranked, agent)
	}

	out := e.do(t, request{method: "POST", path: "/v1/route", body: `{"query":"echo hi","caller":"summariser"}`, headers: bearer(teamKey)})
	if out.status != 200 || out.body["use_tool"] != false || out.body["degraded_reason"] != "unknown_tool" || out.body["identity"] != "acme/research/summariser" {
		t.Fatalf("the agent's route: got %d %s, want faults.echo refused as unknown, as acme/research/summariser", out.status, out.raw)
	}
	first := e.model.Requests()[0]
	if p := first.Messages[0].Content; !strings.Contains(p, "calculator.add") || strings.Contains(p, "calculator.divide") || strings.Contains(p, "faults.") {
		t.Errorf("the agent's phase-1 prompt shows other tools than its own:\n%s", p)
	}
	// The calls' items are the tool names (reasoning "none" and "brief") or objects naming them
	// ("full").
	var format struct {
		Properties struct {
			Calls struct {
				Items struct {
					Enum       []string `json:"enum"`
					Properties struct {
						Tool struct{ Enum []string } `json:"tool"`
					} `json:"properties"`
				} `json:"items"`
			} `json:"calls"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(first.Format, &format); err != nil {
		t.Fatal(err)
	}
	enum := format.Properties.Calls.Items.Enum
	if enum == nil {
		enum = format.Properties.Calls.Items.Properties.Tool.Enum
	}
	if !slices.Equal(enum, append(agent, "none")) {
		t.Errorf("the agent's phase-1 enum: got %v, want %v and none", enum, agent)
	}
	if calls := e.faults.Calls(); len(calls) != 0 {
		t.Errorf("the agent's request ran %v, want nothing", calls)
	}

	out = e.do(t, request{method: "POST", path: "/v1/route", body: `{"query":"echo hi"}`, headers: bearer(teamKey)})
	if res, _ := out.body["result"].(map[string]any); res["text"] != "hi" || out.body["identity"] != "acme/research" {
		t.Errorf("the team's route: got %s, want the echo, as acme/research", out.raw)
	}
	logs := e.logs.String()
	for _, want := range []string{`"identity":"acme/research/summariser","credential":"research-bot"`, `"identity":"acme/research","credential":"research-bot"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("the access log lacks %s:\n%s", want, logs)
		}
	}
}

// TestHostHeader goes through a real listener: a Host other than the listen address (a rebound
// hostname) is refused before anything runs, whatever the credential; the loopback names and
// http.allowed_hosts are served, and /healthz answers any host.
func TestHostHeader(t *testing.T) {
	e := newAuthEnv(t, server.Options{AllowedHosts: []string{"toolrouter.internal", "gw.example:443"}},
		choose("calculator.add"), addArgs(2, 3))
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(e.base, "http://"))
	tests := []struct {
		host string
		path string
		want int
	}{
		{"rebind.example:" + port, "/v1/inventory", http.StatusForbidden},
		{"rebind.example", "/readyz", http.StatusForbidden},
		{"127.0.0.1.nip.io:" + port, "/v1/inventory", http.StatusForbidden},
		{"gw.example:8443", "/v1/inventory", http.StatusForbidden},
		{"localhost:" + port + "0", "/v1/inventory", http.StatusForbidden},
		{"rebind.example:" + port, "/healthz", http.StatusOK},
		{"127.0.0.1:" + port, "/v1/inventory", http.StatusOK},
		{"localhost:" + port, "/v1/inventory", http.StatusOK},
		{"LOCALHOST:" + port, "/v1/inventory", http.StatusOK},
		{"[::1]:" + port, "/v1/inventory", http.StatusOK},
		{"toolrouter.internal:9999", "/v1/inventory", http.StatusOK},
		{"toolrouter.internal", "/v1/inventory", http.StatusOK},
		{"gw.example:443", "/v1/inventory", http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.host+tc.path, func(t *testing.T) {
			r := e.do(t, request{method: "GET", path: tc.path, headers: map[string]string{"Host": tc.host, "Authorization": "Bearer " + adminKey}})
			if r.status != tc.want {
				t.Fatalf("got %d %s, want %d", r.status, r.raw, tc.want)
			}
			if tc.want == http.StatusForbidden {
				if code, msg := errorBody(t, r.raw); code != "host_not_allowed" || !strings.Contains(msg, "http.allowed_hosts") {
					t.Errorf("got code %q message %q, want host_not_allowed naming http.allowed_hosts", code, msg)
				}
			}
		})
	}
	// A rebound page's POST, with a stolen key even, runs nothing.
	r := e.do(t, request{method: "POST", path: "/v1/route", body: `{"query":"2+3"}`, headers: map[string]string{"Host": "rebind.example:" + port, "Authorization": "Bearer " + teamKey}})
	if r.status != http.StatusForbidden || len(e.model.Requests()) != 0 {
		t.Errorf("got %d with %d model requests, want 403 and none", r.status, len(e.model.Requests()))
	}
}

// TestBrowserPostWithKeyRunsNothing: a cross-origin page's text/plain POST is refused before
// anything runs, even when it carries a valid key.
func TestBrowserPostWithKeyRunsNothing(t *testing.T) {
	e := newAuthEnv(t, server.Options{}, choose("calculator.add"), addArgs(2, 3))
	for _, tc := range []struct {
		name, origin, contentType string
		want                      int
	}{
		{"foreign origin, text/plain", "http://evil.example", "text/plain;charset=UTF-8", http.StatusForbidden},
		{"foreign origin, JSON", "http://evil.example", "application/json", http.StatusForbidden},
		{"no origin, text/plain", "", "text/plain", http.StatusUnsupportedMediaType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, e.base+"/v1/route", bytes.NewReader([]byte(`{"query":"2+3"}`)))
			req.Header.Set("Content-Type", tc.contentType)
			req.Header.Set("Authorization", "Bearer "+teamKey)
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("got %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
	if n := len(e.model.Requests()); n != 0 {
		t.Errorf("got %d model requests, want none", n)
	}
}

// choose is a phase-1 answer choosing one tool.
func choose(tool string) fakeollama.Reply {
	b, _ := json.Marshal(map[string]any{"reasoning": "r", "use_tool": true, "calls": []map[string]string{{"tool": tool, "task": "t"}},
		"needs_more": false, "direct": true})
	return fakeollama.Reply{Content: string(b)}
}

func echoArgs(msg string) fakeollama.Reply {
	b, _ := json.Marshal(map[string]string{"message": msg})
	return fakeollama.Reply{Content: string(b)}
}

func addArgs(a, b int) fakeollama.Reply {
	s, _ := json.Marshal(map[string]int{"a": a, "b": b})
	return fakeollama.Reply{Content: string(s)}
}
