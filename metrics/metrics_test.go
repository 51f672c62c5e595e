package metrics_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"toolrouter/internal/testhttp"

	"github.com/ollama/ollama/api"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"toolrouter/auth"
	"toolrouter/council"
	"toolrouter/internal/fakeollama"
	"toolrouter/internal/testmcp"
	"toolrouter/inventory"
	"toolrouter/metrics"
	"toolrouter/observe"
	"toolrouter/provider"
	"toolrouter/router"
	"toolrouter/server"
)

var quiet = slog.New(slog.DiscardHandler)

// Tokens the fake model reports for each call.
const (
	selectPrompt, selectCompletion = 100, 10
	argsPrompt, argsCompletion     = 50, 5
)

// fakeModel is a fake Ollama that routes by the query's words: "add" to calculator.add, "fail" to
// faults.fail (which answers isError), "made-up" to a tool no server has (the router answers
// without a tool, degraded), anything else to no tool.
func fakeModel(t *testing.T) *fakeollama.Server {
	return fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply {
		format := string(req.Format)
		if !strings.Contains(format, "needs_more") { // phase 2: the chosen tool's arguments
			args := "{}"
			if strings.Contains(format, `"a"`) {
				args = `{"a":2,"b":3}`
			}
			return fakeollama.Reply{Content: args, PromptTokens: argsPrompt, CompletionTokens: argsCompletion}
		}
		// The request's query, not a later round's follow-up: that one holds the results' random
		// boundary, whose hex digits may spell a word the switch looks for.
		i := slices.IndexFunc(req.Messages, func(m api.Message) bool { return m.Role == "user" })
		query := req.Messages[i].Content
		tool := ""
		switch {
		case strings.Contains(query, "add"):
			tool = "calculator.add"
		case strings.Contains(query, "fail"):
			tool = "faults.fail"
		case strings.Contains(query, "made-up"):
			tool = "nowhere.nothing"
		}
		sel := map[string]any{"reasoning": "r", "use_tool": tool != "", "calls": []map[string]string{}, "needs_more": false, "direct": true}
		if tool != "" {
			sel["calls"] = []map[string]string{{"tool": tool, "task": "t"}}
		}
		b, _ := json.Marshal(sel)
		return fakeollama.Reply{Content: string(b), PromptTokens: selectPrompt, CompletionTokens: selectCompletion}
	})
}

// newInventory starts a real inventory: the built-in calculator and the in-process fault server.
func newInventory(t *testing.T) *inventory.Manager {
	t.Helper()
	return testmcp.Inventory(t, testmcp.NewFaults(), inventory.Options{Logger: quiet})
}

// env is the API as main wires it with metrics: server.Serve on a loopback listener, a real
// router over real MCP servers and a fake model named "fake".
type env struct {
	base string
	inv  *inventory.Manager
	m    *metrics.Metrics
}

func newEnv(t *testing.T, models []string, authn server.Authenticator) *env {
	t.Helper()
	return newEnvWith(t, fakeModel(t), models, authn)
}

// newEnvWith is newEnv over the fake model fake.
func newEnvWith(t *testing.T, fake *fakeollama.Server, models []string, authn server.Authenticator) *env {
	t.Helper()
	return newEnvSettings(t, fake, models, authn, router.Settings{})
}

// newEnvSettings is newEnvWith with the router's settings set (its model and call timeout are
// the fake's).
func newEnvSettings(t *testing.T, fake *fakeollama.Server, models []string, authn server.Authenticator, set router.Settings) *env {
	t.Helper()
	inv := newInventory(t)
	m := metrics.New(metrics.Options{Inventory: inv, Models: models})
	set.Model, set.CallTimeout = "fake", 10*time.Second
	rt := router.New(fake.Client(), inv, inv, set, quiet)
	deps := server.Deps{Router: rt, Inventory: inv, Model: fake.Client(), Observer: m, Metrics: m.Handler()}
	o := server.Options{Model: "fake", ModelHost: fake.URL, Logger: quiet}
	if authn != nil {
		deps.Auth, o.AdminMetrics, o.AdminReadyz = authn, true, true
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- server.Serve(ctx, ln, deps, o) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serving: %v", err)
		}
	})
	return &env{base: "http://" + ln.Addr().String(), inv: inv, m: m}
}

// send makes one request and returns the status, the body and the headers.
func send(t *testing.T, method, url, body string, headers map[string]string) (int, string, http.Header) {
	t.Helper()
	status, h, b := testhttp.Send(t, method, url, body, headers)
	return status, string(b), h
}

// scrape is one parsed scrape of /metrics.
type scrape map[string]*dto.MetricFamily

// parse reads the Prometheus text format.
func parse(t *testing.T, text string) scrape {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parsing the scrape: %v\n%s", err, text)
	}
	return fams
}

// get scrapes url.
func get(t *testing.T, url string, headers map[string]string) scrape {
	t.Helper()
	status, body, h := send(t, http.MethodGet, url, "", headers)
	if status != http.StatusOK {
		t.Fatalf("GET %s: got status %d, want 200 (body %s)", url, status, body)
	}
	if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("GET %s: got Content-Type %q, want the text format", url, ct)
	}
	return parse(t, body)
}

// value is the value of the sample of name with exactly labels (a counter's, a gauge's, or a
// histogram's count), and whether there is one.
func (s scrape) value(name string, labels map[string]string) (float64, bool) {
	fam, ok := s[name]
	if !ok {
		return 0, false
	}
	for _, m := range fam.Metric {
		if len(m.Label) != len(labels) {
			continue
		}
		match := true
		for _, l := range m.Label {
			if labels[l.GetName()] != l.GetValue() {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// sum is the sum of the histogram of name with exactly labels, and whether there is one.
func (s scrape) sum(name string, labels map[string]string) (float64, bool) {
	fam, ok := s[name]
	if !ok {
		return 0, false
	}
	for _, m := range fam.Metric {
		if len(m.Label) != len(labels) || m.Histogram == nil {
			continue
		}
		match := true
		for _, l := range m.Label {
			if labels[l.GetName()] != l.GetValue() {
				match = false
			}
		}
		if match {
			return m.Histogram.GetSampleSum(), true
		}
	}
	return 0, false
}

// labelValues lists the values label takes in name's samples.
func (s scrape) labelValues(name, label string) map[string]bool {
	out := map[string]bool{}
	if fam, ok := s[name]; ok {
		for _, m := range fam.Metric {
			for _, l := range m.Label {
				if l.GetName() == label {
					out[l.GetValue()] = true
				}
			}
		}
	}
	return out
}

// want checks one sample's value.
func (s scrape) want(t *testing.T, name string, labels map[string]string, want float64) {
	t.Helper()
	got, ok := s.value(name, labels)
	if !ok {
		t.Errorf("%s%v: no sample, want %v (samples: %v)", name, labels, want, s[name])
		return
	}
	if got != want {
		t.Errorf("%s%v: got %v, want %v", name, labels, got, want)
	}
}

// TestCountsWhatWasServed routes queries through the real server and checks that the scrape of
// /metrics counts exactly them: requests by route and status, decisions, model calls and tokens
// from the routings' traces, tool calls by server, tool and outcome, and the inventory's state.
func TestCountsWhatWasServed(t *testing.T) {
	e := newEnv(t, []string{"fake"}, nil)
	queries := map[string]int{"please add two and three": 3, "this one will fail": 2, "call a made-up tool": 1, "just chat": 2}
	var (
		routes, selects, arguments int
		decisions                  = map[[2]string]int{}
		toolCalls                  = map[[3]string]int{}
	)
	for q, n := range queries {
		for range n {
			body, _ := json.Marshal(map[string]string{"query": q})
			status, raw, _ := send(t, http.MethodPost, e.base+"/v1/route", string(body), nil)
			if status != http.StatusOK {
				t.Fatalf("POST /v1/route %q: got %d, want 200 (%s)", q, status, raw)
			}
			routes++
			var out router.Outcome
			if err := json.Unmarshal([]byte(raw), &out); err != nil {
				t.Fatal(err)
			}
			decision, degraded := "no_tool", "none"
			if out.UseTool {
				decision = "tool"
			}
			if out.DegradedReason != "" {
				degraded = string(out.DegradedReason)
			}
			decisions[[2]string{decision, degraded}]++
			for _, s := range out.Trace {
				switch s.Kind {
				case router.StepSelect:
					selects++
				case router.StepArguments:
					arguments++
				}
			}
			for _, c := range out.Calls {
				switch {
				case c.ReusedFrom > 0:
					toolCalls[[3]string{c.Server, c.Tool, "reused"}]++
				case c.Server == "calculator" && c.Tool == "add" && c.Error == nil && !c.Result.IsError:
					toolCalls[[3]string{"calculator", "add", "ok"}]++
				case c.Server == "faults" && c.Tool == "fail" && c.Error == nil && c.Result.IsError:
					toolCalls[[3]string{"faults", "fail", "tool_error"}]++
				default:
					t.Fatalf("query %q made an unexpected call %+v", q, c)
				}
			}
		}
	}
	// A failing tool is chosen again in later rounds, up to the call budget, and answered from
	// its first call.
	if toolCalls[[3]string{"calculator", "add", "ok"}] != 3 || toolCalls[[3]string{"faults", "fail", "tool_error"}] != 2 ||
		toolCalls[[3]string{"faults", "fail", "reused"}] == 0 {
		t.Fatalf("the routings made calls %v, want 3 adds, 2 failures and the failures' repeats", toolCalls)
	}
	if n := decisions[[2]string{"no_tool", "unknown_tool"}]; n != 1 {
		t.Fatalf("got %d routings degraded for an unknown tool (decisions %v), want the made-up tool's 1", n, decisions)
	}
	status, _, _ := send(t, http.MethodGet, e.base+"/v1/nope", "", nil)
	if status != http.StatusNotFound {
		t.Fatalf("GET /v1/nope: got %d, want 404", status)
	}

	s := get(t, e.base+"/metrics", nil)
	s.want(t, "toolrouter_http_requests_total", map[string]string{"route": "/v1/route", "status": "200"}, float64(routes))
	s.want(t, "toolrouter_http_requests_total", map[string]string{"route": "other", "status": "404"}, 1)
	s.want(t, "toolrouter_http_request_duration_seconds", map[string]string{"route": "/v1/route"}, float64(routes))
	if _, ok := s.value("toolrouter_http_requests_total", map[string]string{"route": "/metrics", "status": "200"}); ok {
		t.Error("the first scrape counts itself, want it counted once answered")
	}
	for k, n := range decisions {
		s.want(t, "toolrouter_route_decisions_total", map[string]string{"decision": k[0], "degraded": k[1]}, float64(n))
	}
	s.want(t, "toolrouter_model_calls_total", map[string]string{"phase": "select", "model": "fake", "outcome": "ok"}, float64(selects))
	s.want(t, "toolrouter_model_calls_total", map[string]string{"phase": "arguments", "model": "fake", "outcome": "ok"}, float64(arguments))
	s.want(t, "toolrouter_model_call_duration_seconds", map[string]string{"phase": "select", "model": "fake"}, float64(selects))
	s.want(t, "toolrouter_model_tokens_total", map[string]string{"phase": "select", "model": "fake", "kind": "prompt"}, float64(selects*selectPrompt))
	s.want(t, "toolrouter_model_tokens_total", map[string]string{"phase": "select", "model": "fake", "kind": "completion"}, float64(selects*selectCompletion))
	s.want(t, "toolrouter_model_tokens_total", map[string]string{"phase": "arguments", "model": "fake", "kind": "prompt"}, float64(arguments*argsPrompt))
	for k, n := range toolCalls {
		s.want(t, "toolrouter_tool_calls_total", map[string]string{"server": k[0], "tool": k[1], "outcome": k[2]}, float64(n))
	}
	// Only executed calls have a duration: not those an earlier identical call answered.
	s.want(t, "toolrouter_tool_call_duration_seconds", map[string]string{"server": "calculator"}, 3)
	s.want(t, "toolrouter_tool_call_duration_seconds", map[string]string{"server": "faults"}, float64(toolCalls[[3]string{"faults", "fail", "tool_error"}]))
	if got := s.labelValues("toolrouter_tool_calls_total", "tool"); got["nothing"] || got["nowhere.nothing"] {
		t.Errorf("got tool labels %v, want the made-up tool's name nowhere", got)
	}
	for _, srv := range e.inv.Snapshot().Servers {
		s.want(t, "toolrouter_server_up", map[string]string{"server": srv.Name}, 1)
		s.want(t, "toolrouter_inventory_tools", map[string]string{"server": srv.Name}, float64(len(srv.Tools)))
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if _, ok := s[name]; !ok {
			t.Errorf("the scrape has no %s, want the Go runtime and process collectors", name)
		}
	}
	// The scrape itself was counted once answered.
	s = get(t, e.base+"/metrics", nil)
	s.want(t, "toolrouter_http_requests_total", map[string]string{"route": "/metrics", "status": "200"}, 1)
	s.want(t, "toolrouter_http_requests_total", map[string]string{"route": "/v1/route", "status": "200"}, float64(routes))
}

// TestModelLabelsAreConfiguredNames: a model the configuration does not name is "other".
func TestModelLabelsAreConfiguredNames(t *testing.T) {
	tests := []struct {
		name      string
		models    []string
		wantLabel string
	}{
		{"configured", []string{"fake", "chair"}, "fake"},
		{"not configured", []string{"chair"}, metrics.Other},
		{"none configured", nil, metrics.Other},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.models, nil)
			if status, raw, _ := send(t, http.MethodPost, e.base+"/v1/route", `{"query":"please add"}`, nil); status != http.StatusOK {
				t.Fatalf("got %d %s, want 200", status, raw)
			}
			s := get(t, e.base+"/metrics", nil)
			if got := s.labelValues("toolrouter_model_calls_total", "model"); len(got) != 1 || !got[tc.wantLabel] {
				t.Errorf("got model labels %v, want only %q", got, tc.wantLabel)
			}
			s.want(t, "toolrouter_model_calls_total", map[string]string{"phase": "select", "model": tc.wantLabel, "outcome": "ok"}, 1)
		})
	}
}

// The keys of the authenticated server: a team's, and an admin's.
const (
	teamKey  = "tr_research-team-key-0123456789"
	adminKey = "tr_ops-admin-key-0123456789abcd"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestMetricsForAdminsWhenCallersAuthenticate: with auth configured only an admin reads
// /metrics; a caller without a credential gets 401 and one without admin scope 403, both with
// the JSON error body. Without auth, /metrics is open.
func TestMetricsForAdminsWhenCallersAuthenticate(t *testing.T) {
	authn, err := auth.New(t.Context(), auth.Config{Keys: []auth.Key{
		{Name: "research-bot", SHA256: sha(teamKey), Org: "acme", Team: "research"},
		{Name: "ops-admin", SHA256: sha(adminKey), Org: "acme", Team: "ops"},
	}, Admins: []string{"acme/ops"}}, auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	authed, open := newEnv(t, []string{"fake"}, authn), newEnv(t, []string{"fake"}, nil)
	bearer := func(k string) map[string]string { return map[string]string{"Authorization": "Bearer " + k} }
	tests := []struct {
		name       string
		base       string
		headers    map[string]string
		wantStatus int
		wantCode   string
	}{
		{"no credential", authed.base, nil, http.StatusUnauthorized, "missing_credential"},
		{"wrong key", authed.base, bearer("tr_not-a-key-000000000000000000"), http.StatusUnauthorized, "invalid_credential"},
		{"not an admin", authed.base, bearer(teamKey), http.StatusForbidden, "forbidden"},
		{"admin", authed.base, bearer(adminKey), http.StatusOK, ""},
		{"no auth configured", open.base, nil, http.StatusOK, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body, _ := send(t, http.MethodGet, tc.base+"/metrics", "", tc.headers)
			if status != tc.wantStatus {
				t.Fatalf("got status %d, want %d (body %s)", status, tc.wantStatus, body)
			}
			if tc.wantCode == "" {
				if s := parse(t, body); len(s["toolrouter_server_up"].GetMetric()) == 0 {
					t.Errorf("got a scrape without toolrouter_server_up: %s", body)
				}
				return
			}
			var e struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Code != tc.wantCode || e.Error.Message == "" {
				t.Errorf("got body %s, want error code %q with a message", body, tc.wantCode)
			}
			if strings.Contains(body, "toolrouter_") {
				t.Errorf("a refused scrape shows metrics: %s", body)
			}
		})
	}
}

// TestNoMetricsWithoutHandler: a server without Deps.Metrics has no /metrics.
func TestNoMetricsWithoutHandler(t *testing.T) {
	app := server.New(server.Deps{}, server.Options{Logger: quiet})
	resp, err := app.Test(must(http.NewRequest(http.MethodGet, "/metrics", nil)), 5000)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("got status %d, want 404", resp.StatusCode)
	}
}

func must(r *http.Request, err error) *http.Request {
	if err != nil {
		panic(err)
	}
	return r
}

// TestCallbacks: the rate limiter's and the usage recorder's counts.
func TestCallbacks(t *testing.T) {
	inv := newInventory(t)
	m := metrics.New(metrics.Options{Inventory: inv})
	m.RateLimited("team", "requests")
	m.RateLimited("team", "requests")
	m.RateLimited("org", "tokens")
	m.UsageDropped()
	m.RedisUp(true)
	srv := newHTTP(t, m.Handler())
	s := get(t, srv+"/metrics", nil)
	s.want(t, "toolrouter_rate_limited_total", map[string]string{"level": "team", "limit": "requests"}, 2)
	s.want(t, "toolrouter_rate_limited_total", map[string]string{"level": "org", "limit": "tokens"}, 1)
	s.want(t, "toolrouter_usage_dropped_total", nil, 1)
	s.want(t, "toolrouter_rate_limit_redis_up", nil, 1)
	m.RedisUp(false)
	get(t, srv+"/metrics", nil).want(t, "toolrouter_rate_limit_redis_up", nil, 0)
}

// newHTTP serves h on a loopback listener until the test ends and returns its base URL.
func newHTTP(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return "http://" + ln.Addr().String()
}

// TestToolLabelsAreInventoryNames: a call of a tool the model made up is labelled "unknown"; one
// of a tool the inventory does not hold (any more) "other"; a model outside the configuration
// "other", whatever its phase.
func TestToolLabelsAreInventoryNames(t *testing.T) {
	inv := newInventory(t)
	m := metrics.New(metrics.Options{Inventory: inv, Models: []string{"fake", "m1", "chair-model"}})
	ok := &router.Result{Text: "5"}
	m.Observe(context.Background(), &observe.Report{Endpoint: "/v1/answer", Status: 200, Duration: time.Second,
		Outcome: &router.Outcome{UseTool: true, Calls: []router.Call{
			{Step: 1, Server: "calculator", Tool: "add", Result: ok, ExecuteMS: 2},
			{Step: 2, Tool: "what the model wrote", Error: &router.Error{Code: router.CodeUnknownTool, Message: "not a tool"}},
			{Step: 3, Server: "gone", Tool: "tool", Result: ok, ExecuteMS: 1},
			{Step: 4, Server: "calculator", Tool: "add", Result: ok, ReusedFrom: 1},
		}},
		Council: &council.Result{
			Stage1: []council.Answer{{Model: "one", ModelID: "m1"}, {Model: "two", ModelID: "m2", Error: "timed out"}},
			Stage3: &council.Synthesis{Model: "chair", ModelID: "chair-model", Usage: council.CallUsage{PromptTokens: 7, CompletionTokens: 3, DurationMS: 40}},
		},
		ModelCalls: []observe.ModelCall{{Phase: "completion", Model: "someone-elses", PromptTokens: 4}},
	})
	s := get(t, newHTTP(t, m.Handler())+"/metrics", nil)
	s.want(t, "toolrouter_tool_calls_total", map[string]string{"server": "calculator", "tool": "add", "outcome": "ok"}, 1)
	s.want(t, "toolrouter_tool_calls_total", map[string]string{"server": "calculator", "tool": "add", "outcome": "reused"}, 1)
	s.want(t, "toolrouter_tool_calls_total", map[string]string{"server": metrics.Unknown, "tool": metrics.Unknown, "outcome": "unknown_tool"}, 1)
	s.want(t, "toolrouter_tool_calls_total", map[string]string{"server": metrics.Other, "tool": metrics.Other, "outcome": "ok"}, 1)
	s.want(t, "toolrouter_tool_call_duration_seconds", map[string]string{"server": "calculator"}, 1) // not the reused call
	s.want(t, "toolrouter_model_calls_total", map[string]string{"phase": "stage1", "model": "m1", "outcome": "ok"}, 1)
	s.want(t, "toolrouter_model_calls_total", map[string]string{"phase": "stage1", "model": metrics.Other, "outcome": "error"}, 1)
	s.want(t, "toolrouter_model_calls_total", map[string]string{"phase": "stage3", "model": "chair-model", "outcome": "ok"}, 1)
	s.want(t, "toolrouter_model_tokens_total", map[string]string{"phase": "stage3", "model": "chair-model", "kind": "completion"}, 3)
	s.want(t, "toolrouter_model_calls_total", map[string]string{"phase": "completion", "model": metrics.Other, "outcome": "ok"}, 1)
	s.want(t, "toolrouter_route_decisions_total", map[string]string{"decision": "tool", "degraded": "none"}, 1)
	for _, label := range []string{"server", "tool"} {
		for v := range s.labelValues("toolrouter_tool_calls_total", label) {
			if v != "calculator" && v != "add" && v != metrics.Unknown && v != metrics.Other {
				t.Errorf("got %s label %q, want only inventory names, unknown and other", label, v)
			}
		}
	}
}

// TestModelCallParts: each model call's server time by part and its tokens per call, as the fake
// model scripts them, are observed by phase and model: the router's calls through the real
// server, the council's and a completion's from their report. A call the server never finished
// is not observed, nor the durations of a server that reports none.
func TestModelCallParts(t *testing.T) {
	cached := 80
	fake := fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply {
		if !strings.Contains(string(req.Format), "needs_more") {
			return fakeollama.Reply{Content: `{"a":2,"b":3}`, PromptTokens: 40, CompletionTokens: 9,
				LoadDuration: 2 * time.Millisecond, PrefillDuration: 10 * time.Millisecond, DecodeDuration: 90 * time.Millisecond, TotalDuration: 110 * time.Millisecond}
		}
		return fakeollama.Reply{Content: `{"reasoning":"r","use_tool":true,"calls":[{"tool":"calculator.add","task":"t"}],"needs_more":false,"direct":true}`,
			PromptTokens: 100, CachedTokens: &cached, CompletionTokens: 12,
			LoadDuration: time.Millisecond, PrefillDuration: 30 * time.Millisecond, DecodeDuration: 200 * time.Millisecond, TotalDuration: 250 * time.Millisecond}
	})
	e := newEnvWith(t, fake, []string{"fake", "m1", "gpt"}, nil)
	status, raw, _ := send(t, http.MethodPost, e.base+"/v1/route", `{"query":"add two and three"}`, nil)
	if status != http.StatusOK {
		t.Fatalf("POST /v1/route: got %d, want 200 (%s)", status, raw)
	}
	var out router.Outcome
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		t.Fatal(err)
	}
	if out.Usage.LLMCalls != 2 {
		t.Fatalf("got %d model calls (%s), want a selection and the arguments", out.Usage.LLMCalls, raw)
	}
	e.m.Observe(context.Background(), &observe.Report{Endpoint: "/v1/answer", Status: 200,
		Council: &council.Result{Stage1: []council.Answer{
			{Model: "one", ModelID: "m1", Usage: council.CallUsage{PromptTokens: 500, CompletionTokens: 50,
				Breakdown: provider.Breakdown{LoadMS: 3000, PrefillMS: 400, DecodeMS: 1500, RestMS: 100, UncachedTokens: 500}}},
			{Model: "one", ModelID: "m1", Error: "timed out"}, // cut short: nothing reported
		}},
		ModelCalls: []observe.ModelCall{{Phase: "completion", Model: "gpt", PromptTokens: 30, CompletionTokens: 4,
			Breakdown: provider.Breakdown{UncachedTokens: 10}}}, // an OpenAI-compatible server: tokens, no durations
	})
	s := get(t, e.base+"/metrics", nil)
	parts := []struct {
		phase, model, part string
		n                  float64
		sum                float64 // seconds
	}{
		{"select", "fake", "load", 1, 0.001}, {"select", "fake", "prefill", 1, 0.030}, {"select", "fake", "decode", 1, 0.200}, {"select", "fake", "rest", 1, 0.019},
		{"arguments", "fake", "load", 1, 0.002}, {"arguments", "fake", "prefill", 1, 0.010}, {"arguments", "fake", "decode", 1, 0.090}, {"arguments", "fake", "rest", 1, 0.008},
		{"stage1", "m1", "load", 1, 3}, {"stage1", "m1", "prefill", 1, 0.4}, {"stage1", "m1", "decode", 1, 1.5}, {"stage1", "m1", "rest", 1, 0.1},
	}
	for _, p := range parts {
		labels := map[string]string{"phase": p.phase, "model": p.model, "part": p.part}
		s.want(t, "toolrouter_model_call_part_seconds", labels, p.n)
		if got, _ := s.sum("toolrouter_model_call_part_seconds", labels); got < p.sum-1e-9 || got > p.sum+1e-9 {
			t.Errorf("toolrouter_model_call_part_seconds%v: got sum %v, want %v", labels, got, p.sum)
		}
	}
	if _, ok := s.value("toolrouter_model_call_part_seconds", map[string]string{"phase": "completion", "model": "gpt", "part": "decode"}); ok {
		t.Error("a completion whose server reports no durations was observed with 0 s, want it left out")
	}
	tokens := []struct {
		phase, model, kind string
		sum                float64
	}{
		{"select", "fake", "uncached_prompt", 20}, {"select", "fake", "decode", 12},
		{"arguments", "fake", "uncached_prompt", 40}, {"arguments", "fake", "decode", 9},
		{"stage1", "m1", "uncached_prompt", 500}, {"stage1", "m1", "decode", 50},
		{"completion", "gpt", "uncached_prompt", 10}, {"completion", "gpt", "decode", 4},
	}
	for _, k := range tokens {
		labels := map[string]string{"phase": k.phase, "model": k.model, "kind": k.kind}
		s.want(t, "toolrouter_model_call_tokens", labels, 1) // one call each: the cut-short stage-1 call is not observed
		if got, _ := s.sum("toolrouter_model_call_tokens", labels); got != k.sum {
			t.Errorf("toolrouter_model_call_tokens%v: got sum %v, want %v", labels, got, k.sum)
		}
	}
}

// TestSelectionConfidence: each selection's confidence, as the fake model's logprobs give it, is
// observed by kind, and a routing degraded for a confidence below router.min_confidence is
// counted with its reason.
func TestSelectionConfidence(t *testing.T) {
	toolP := map[string]float64{"sure: add two and three": 0.8, "unsure: add two and three": 0.3}
	const useToolP = 0.9
	fake := fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply {
		if !strings.Contains(string(req.Format), "needs_more") {
			return fakeollama.Reply{Content: `{"a":2,"b":3}`}
		}
		return fakeollama.Scored("calculator.add", "faults", toolP[req.Messages[len(req.Messages)-1].Content], useToolP, selectPrompt)
	})
	e := newEnvSettings(t, fake, []string{"fake"}, nil, router.Settings{MinConfidence: 0.5})
	degraded := map[router.DegradedReason]int{}
	for q := range toolP {
		body, _ := json.Marshal(map[string]string{"query": q})
		status, raw, _ := send(t, http.MethodPost, e.base+"/v1/route", string(body), nil)
		if status != http.StatusOK {
			t.Fatalf("POST /v1/route %q: got %d, want 200 (%s)", q, status, raw)
		}
		var out router.Outcome
		if err := json.Unmarshal([]byte(raw), &out); err != nil {
			t.Fatal(err)
		}
		degraded[out.DegradedReason]++
	}
	if degraded[router.DegradedLowConfidence] != 1 {
		t.Fatalf("got degraded reasons %v, want the unsure query's low_confidence", degraded)
	}
	s := get(t, e.base+"/metrics", nil)
	for _, k := range []struct {
		kind string
		sum  float64
	}{{"tool", 0.8 + 0.3}, {"use_tool", 2 * useToolP}} {
		labels := map[string]string{"kind": k.kind}
		s.want(t, "toolrouter_selection_confidence", labels, 2)
		if got, _ := s.sum("toolrouter_selection_confidence", labels); got < k.sum-1e-9 || got > k.sum+1e-9 {
			t.Errorf("toolrouter_selection_confidence%v: got sum %v, want %v", labels, got, k.sum)
		}
	}
	s.want(t, "toolrouter_route_decisions_total", map[string]string{"decision": "tool", "degraded": "none"}, 1)
	if got := s.labelValues("toolrouter_route_decisions_total", "degraded"); !got["low_confidence"] || got[metrics.Other] {
		t.Errorf("got degraded labels %v, want low_confidence and no other", got)
	}
}
