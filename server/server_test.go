package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"toolrouter/access"
	"toolrouter/config"
	"toolrouter/internal/fakeollama"
	"toolrouter/internal/testmcp"
	"toolrouter/inventory"
	"toolrouter/inventory/builtin"
	"toolrouter/router"
	"toolrouter/server"
)

var quiet = slog.New(slog.DiscardHandler)

// testTimeout is what app.Test waits for one request; every request here must finish well inside it.
const testTimeout = 5000

// newInventory starts a real inventory with the built-in calculator and the in-process fault server.
func newInventory(tb testing.TB) *inventory.Manager {
	tb.Helper()
	return testmcp.Inventory(tb, testmcp.NewFaults(), inventory.Options{Logger: quiet})
}

// startInventory starts an inventory of servers, each given 10 seconds to connect and to answer a
// call, and closes it when t ends.
func startInventory(t *testing.T, servers map[string]config.Server, o inventory.Options) *inventory.Manager {
	t.Helper()
	timed := make(map[string]config.Server, len(servers))
	for name, s := range servers {
		s.ConnectTimeout, s.CallTimeout = config.Duration(10*time.Second), config.Duration(10*time.Second)
		timed[name] = s
	}
	inv := inventory.New(timed, o)
	inv.Start(context.Background())
	t.Cleanup(inv.Close)
	return inv
}

// waitInventory waits up to 30 seconds for inv's snapshot to satisfy ready, and fails t naming
// what it waited for when it does not.
func waitInventory(t *testing.T, inv *inventory.Manager, what string, ready func(*inventory.Snapshot) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := inv.Wait(ctx, ready); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// calculatorServer serves the built-in calculator over streamable HTTP, at /mcp, until t ends.
func calculatorServer(t *testing.T) *httptest.Server {
	t.Helper()
	calc, err := builtin.Handler("calculator")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(calc)
	t.Cleanup(srv.Close)
	return srv
}

// env is the API wired to a real router, a fake model and real MCP servers.
type env struct {
	app   *fiber.App
	model *fakeollama.Server
	inv   *inventory.Manager
}

func newEnv(t *testing.T, model *fakeollama.Server, set router.Settings, o server.Options) *env {
	t.Helper()
	inv := newInventory(t)
	if set.Model == "" {
		set.Model = "fake"
	}
	if set.CallTimeout == 0 {
		set.CallTimeout = 10 * time.Second
	}
	if o.Model == "" {
		o.Model = set.Model
	}
	o.ModelHost = model.URL
	o.Logger = quiet
	rt := router.New(model.Client(), inv, inv, set, quiet)
	return &env{app: server.New(server.Deps{Router: rt, Inventory: inv, Model: model.Client()}, o), model: model, inv: inv}
}

// do sends one request through app.Test and returns the status, the raw body and the body decoded
// as a JSON object (nil when it is not one).
func do(t *testing.T, app *fiber.App, method, path string, body []byte) (int, []byte, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := app.Test(req, testTimeout)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading response: %v", err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s %s: got Content-Type %q, want application/json", method, path, ct)
	}
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, raw, m
}

// errorBody checks raw is exactly {"error":{"code","message"}} and returns its code and message.
func errorBody(t *testing.T, raw []byte) (code, msg string) {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || len(top) != 1 || top["error"] == nil {
		t.Fatalf("got body %s, want {\"error\":{\"code\",\"message\"}}", raw)
	}
	var e map[string]any
	if err := json.Unmarshal(top["error"], &e); err != nil || len(e) != 2 {
		t.Fatalf("got error %s, want exactly code and message", top["error"])
	}
	code, _ = e["code"].(string)
	msg, _ = e["message"].(string)
	if code == "" || msg == "" {
		t.Fatalf("got error %s, want a non-empty string code and message", top["error"])
	}
	return code, msg
}

// alwaysWritten returns the JSON names of t's fields that are not omitempty.
func alwaysWritten(t reflect.Type) map[string]bool {
	out := map[string]bool{}
	for f := range t.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.IsExported() && name != "-" && !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			out[name] = true
		}
	}
	return out
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestRouteRejectsBadBodies(t *testing.T) {
	model := fakeollama.New(t) // any chat request would be recorded, and answered 500
	e := newEnv(t, model, router.Settings{}, server.Options{MaxQueryBytes: 32, MaxHistory: 2, BodyLimit: 4096})
	hist := func(n int) string {
		return `[` + strings.TrimSuffix(strings.Repeat(`{"role":"user","content":"hi"},`, n), ",") + `]`
	}
	tests := []struct {
		name     string
		body     string
		wantCode string
		wantMsg  string // in the message
	}{
		{"empty body", ``, "empty_body", "body is empty"},
		{"whitespace body", " \n\t", "empty_body", "body is empty"},
		{"truncated JSON", `{"query":`, "malformed_json", "unexpected end"},
		{"syntax error", `{"query" "x"}`, "malformed_json", "at byte"},
		{"array body", `[]`, "wrong_type", "body must be a JSON object, got array"},
		{"string body", `"x"`, "wrong_type", "body must be a JSON object, got string"},
		{"number body", `42`, "wrong_type", "body must be a JSON object, got number"},
		{"null body", `null`, "wrong_type", "body must be a JSON object, got null"},
		{"query missing", `{}`, "missing_query", "query is required"},
		{"query missing with history", `{"history":[]}`, "missing_query", "query is required"},
		{"query null", `{"query":null}`, "missing_query", "query is required"},
		{"query number", `{"query":42}`, "wrong_type", "query must be a string, got number"},
		{"query object", `{"query":{"text":"hi"}}`, "wrong_type", "query must be a string, got object"},
		{"query array", `{"query":["hi"]}`, "wrong_type", "query must be a string, got array"},
		{"query bool", `{"query":true}`, "wrong_type", "query must be a string, got bool"},
		{"query empty", `{"query":""}`, "empty_query", "query must not be empty"},
		{"query whitespace", `{"query":" \t\n "}`, "empty_query", "query must not be empty"},
		{"query too long", `{"query":"` + strings.Repeat("x", 33) + `"}`, "query_too_long", "query is 33 bytes; the limit is 32"},
		{"query too long in bytes not runes", `{"query":"` + strings.Repeat("é", 17) + `"}`, "query_too_long", "query is 34 bytes; the limit is 32"},
		{"history string", `{"query":"q","history":"hi"}`, "wrong_type", "history must be an array, got string"},
		{"history object", `{"query":"q","history":{"role":"user","content":"hi"}}`, "wrong_type", "history must be an array, got object"},
		{"history item not an object", `{"query":"q","history":["hi"]}`, "wrong_type", "history must be an object {role, content}, got string"},
		{"history item wrong role", `{"query":"q","history":[{"role":"system","content":"hi"}]}`, "bad_history", `history[0].role must be "user" or "assistant", got "system"`},
		{"history item no role", `{"query":"q","history":[{"role":"user","content":"a"},{"content":"hi"}]}`, "bad_history", `history[1].role must be "user" or "assistant", got ""`},
		{"history item content number", `{"query":"q","history":[{"role":"user","content":5}]}`, "wrong_type", "history.content must be a string, got number"},
		{"history item role number", `{"query":"q","history":[{"role":1,"content":"hi"}]}`, "wrong_type", "history.role must be a string, got number"},
		{"history item unknown field", `{"query":"q","history":[{"role":"user","content":"hi","name":"x"}]}`, "unknown_field", `unknown field "name"`},
		{"too many history messages", `{"query":"q","history":` + hist(3) + `}`, "history_too_long", "history has 3 messages; the limit is 2"},
		{"history too many bytes", `{"query":"q","history":[{"role":"user","content":"` + strings.Repeat("y", 128) + `"}]}`, "history_too_long", "query and history are 129 bytes; the limit is 128"},
		{"caller number", `{"query":"q","caller":7}`, "wrong_type", "caller must be a string, got number"},
		{"caller object", `{"query":"q","caller":{}}`, "wrong_type", "caller must be a string, got object"},
		{"caller too long", `{"query":"q","caller":"` + strings.Repeat("c", 129) + `"}`, "caller_too_long", "caller is 129 bytes; the limit is 128"},
		{"unknown field", `{"query":"q","model":"llama"}`, "unknown_field", `unknown field "model"; allowed: query, history, caller`},
		{"two objects", `{"query":"a"}{"query":"b"}`, "malformed_json", "exactly one JSON object"},
		{"trailing garbage", `{"query":"a"} x`, "malformed_json", "exactly one JSON object"},
		{"invalid UTF-8 in a string", "{\"query\":\"caf\xe9\"}", "bad_encoding", "UTF-8"},
		{"invalid UTF-8 outside strings", "{\"query\":\"q\"}\xff", "bad_encoding", "UTF-8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, raw, _ := do(t, e.app, http.MethodPost, "/v1/route", []byte(tc.body))
			if status != http.StatusBadRequest {
				t.Errorf("got status %d, want 400 (body %s)", status, raw)
			}
			code, msg := errorBody(t, raw)
			if code != tc.wantCode {
				t.Errorf("got code %q, want %q (message %q)", code, tc.wantCode, msg)
			}
			if !strings.Contains(msg, tc.wantMsg) {
				t.Errorf("got message %q, want it to contain %q", msg, tc.wantMsg)
			}
		})
	}
	if n := len(e.model.Requests()); n != 0 {
		t.Errorf("got %d model requests for bad bodies, want 0: the router must not be called", n)
	}
}

func TestErrorsAreJSON(t *testing.T) {
	model := fakeollama.New(t)
	e := newEnv(t, model, router.Settings{}, server.Options{})
	tests := []struct {
		name       string
		method     string
		path       string
		body       []byte
		wantStatus int
		wantCode   string
		wantMsg    string
	}{
		{"unknown path", http.MethodGet, "/v1/nope", nil, http.StatusNotFound, "not_found", "no route GET /v1/nope"},
		{"root", http.MethodGet, "/", nil, http.StatusNotFound, "not_found", "no route GET /"},
		{"GET route", http.MethodGet, "/v1/route", nil, http.StatusMethodNotAllowed, "method_not_allowed", "GET is not allowed on /v1/route; use POST"},
		{"POST inventory", http.MethodPost, "/v1/inventory", []byte(`{}`), http.StatusMethodNotAllowed, "method_not_allowed", "use GET"},
		{"DELETE healthz", http.MethodDelete, "/healthz", nil, http.StatusMethodNotAllowed, "method_not_allowed", "use GET"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, raw, _ := do(t, e.app, tc.method, tc.path, tc.body)
			if status != tc.wantStatus {
				t.Errorf("got status %d, want %d (body %s)", status, tc.wantStatus, raw)
			}
			code, msg := errorBody(t, raw)
			if code != tc.wantCode || !strings.Contains(msg, tc.wantMsg) {
				t.Errorf("got code %q message %q, want code %q and a message containing %q", code, msg, tc.wantCode, tc.wantMsg)
			}
		})
	}
	if n := len(e.model.Requests()); n != 0 {
		t.Errorf("got %d model requests, want 0", n)
	}
}

// listen serves app on a real loopback listener until the test ends and returns its base URL.
func listen(tb testing.TB, app *fiber.App) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- app.Listener(ln) }()
	tb.Cleanup(func() {
		if err := app.ShutdownWithTimeout(5 * time.Second); err != nil {
			tb.Errorf("shutdown: %v", err)
		}
		if err := <-served; err != nil {
			tb.Errorf("serving: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// TestBodyTooLarge goes through a real listener: fasthttp rejects an oversized body while reading
// the request, before any handler, and app.Test reports that as its own error.
func TestBodyTooLarge(t *testing.T) {
	model := fakeollama.New(t)
	e := newEnv(t, model, router.Settings{}, server.Options{BodyLimit: 256})
	base := listen(t, e.app)
	body := `{"query":"` + strings.Repeat("x", 1000) + `"}`
	tests := []struct {
		name string
		body io.Reader
		size int64 // -1 sends the body chunked
	}{
		{"content-length", strings.NewReader(body), int64(len(body))},
		{"chunked", io.MultiReader(strings.NewReader(body)), -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, base+"/v1/route", tc.body)
			if err != nil {
				t.Fatal(err)
			}
			req.ContentLength = tc.size
			req.Header.Set("Content-Type", "application/json")
			client := &http.Client{Timeout: 5 * time.Second}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Errorf("got status %d, want 413 (body %s)", resp.StatusCode, raw)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("got Content-Type %q, want application/json", ct)
			}
			if code, msg := errorBody(t, raw); code != "body_too_large" {
				t.Errorf("got code %q message %q, want body_too_large", code, msg)
			}
		})
	}
	// A body within the limit on the same server is decoded as usual.
	resp, err := http.Post(base+"/v1/route", "application/json", strings.NewReader(`{"query":""}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if raw, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusBadRequest || !bytes.Contains(raw, []byte("empty_query")) {
		t.Errorf("got %d %s, want 400 empty_query", resp.StatusCode, raw)
	}
	if n := len(model.Requests()); n != 0 {
		t.Errorf("got %d model requests, want 0", n)
	}
}

func TestRouteHappyPath(t *testing.T) {
	model := fakeollama.New(t,
		fakeollama.Reply{Content: `{"reasoning":"r","use_tool":true,"tool":"calculator.add","direct":true}`, PromptTokens: 100, CompletionTokens: 10},
		fakeollama.Reply{Content: `{"a":2,"b":3}`, PromptTokens: 50, CompletionTokens: 5},
	)
	e := newEnv(t, model, router.Settings{}, server.Options{})
	status, raw, out := do(t, e.app, http.MethodPost, "/v1/route",
		[]byte(`{"query":"what is 2 plus 3?","history":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}],"caller":"council-1"}`))
	if status != http.StatusOK {
		t.Fatalf("got status %d, want 200 (body %s)", status, raw)
	}
	// The documented fields, and besides them only fields router.Outcome always writes: a clean run
	// has no degraded, error or argument_attempts, and the server adds no envelope.
	want := []string{"arguments", "direct", "reasoning", "result", "server", "timings_ms", "tool", "usage", "use_tool"}
	for _, k := range want {
		if _, ok := out[k]; !ok {
			t.Errorf("response lacks %q (body %s)", k, raw)
		}
	}
	always := alwaysWritten(reflect.TypeFor[router.Outcome]())
	for _, k := range keys(out) {
		if !slices.Contains(want, k) && !always[k] {
			t.Errorf("response has field %q, want only %v and fields router.Outcome always writes (body %s)", k, want, raw)
		}
	}
	if out["use_tool"] != true || out["server"] != "calculator" || out["tool"] != "add" || out["reasoning"] != "r" || out["direct"] != true {
		t.Errorf("got use_tool=%v server=%v tool=%v reasoning=%v direct=%v, want true calculator add r true",
			out["use_tool"], out["server"], out["tool"], out["reasoning"], out["direct"])
	}
	if a, _ := out["arguments"].(map[string]any); a["a"] != 2.0 || a["b"] != 3.0 || len(a) != 2 {
		t.Errorf("got arguments %v, want {a:2, b:3}", out["arguments"])
	}
	result, _ := out["result"].(map[string]any)
	if result["text"] != "5" || result["is_error"] != false {
		t.Errorf("got result %v, want text 5 and is_error false", out["result"])
	}
	for _, k := range keys(result) {
		if !slices.Contains([]string{"text", "is_error", "structured", "content"}, k) {
			t.Errorf("result has undocumented field %q", k)
		}
	}
	timings, _ := out["timings_ms"].(map[string]any)
	if got := keys(timings); !slices.Equal(got, []string{"arguments", "execute", "select", "total"}) {
		t.Errorf("got timings_ms fields %v, want select, arguments, execute, total", got)
	}
	if total, _ := timings["total"].(float64); total <= 0 {
		t.Errorf("got timings_ms.total %v, want > 0", timings["total"])
	}
	usage, _ := out["usage"].(map[string]any)
	// The fake reports no durations and no cached count: every prompt token is uncached.
	wantUsage := map[string]any{"llm_calls": 2.0, "prompt_tokens": 150.0, "completion_tokens": 15.0,
		"load_ms": 0.0, "prefill_ms": 0.0, "decode_ms": 0.0, "rest_ms": 0.0, "uncached_prompt_tokens": 150.0}
	if len(usage) != len(wantUsage) {
		t.Errorf("got usage %v, want %v", usage, wantUsage)
	}
	for k, v := range wantUsage {
		if usage[k] != v {
			t.Errorf("got usage.%s = %v, want %v", k, usage[k], v)
		}
	}
	// The history reached the model ahead of the query.
	reqs := e.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("got %d model requests, want 2", len(reqs))
	}
	msgs := reqs[0].Messages
	if n := len(msgs); n < 3 || msgs[n-3].Content != "hi" || msgs[n-2].Content != "hello" || msgs[n-1].Content != "what is 2 plus 3?" {
		t.Errorf("got phase 1 messages %+v, want history then the query", msgs)
	}
}

// routerFunc is a fake Router.
type routerFunc func(ctx context.Context, req router.Request) (*router.Outcome, error)

func (f routerFunc) Route(ctx context.Context, req router.Request) (*router.Outcome, error) {
	return f(ctx, req)
}

func TestRoutePassesTheRequestThrough(t *testing.T) {
	got := make(chan router.Request, 1)
	app := server.New(server.Deps{Router: routerFunc(func(ctx context.Context, req router.Request) (*router.Outcome, error) {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("router context has no deadline, want RequestTimeout applied")
		}
		got <- req
		return &router.Outcome{Reasoning: "no tool needed"}, nil
	})}, server.Options{Logger: quiet})
	status, raw, out := do(t, app, http.MethodPost, "/v1/route",
		[]byte(`{"query":"  hi  ","history":[{"role":"assistant","content":"x"}],"caller":"c"}`))
	if status != http.StatusOK || out["reasoning"] != "no tool needed" || out["use_tool"] != false {
		t.Fatalf("got %d %s, want 200 with the router's outcome", status, raw)
	}
	// Without a credential the request is anonymous, for org default: its caller names a team.
	want := router.Request{Query: "  hi  ", History: []router.Message{{Role: "assistant", Content: "x"}},
		Identity: access.Identity{Org: access.DefaultOrg, Team: "c", Name: "anonymous", Anonymous: true}}
	if req := <-got; req.Query != want.Query || req.Identity != want.Identity || !slices.Equal(req.History, want.History) {
		t.Errorf("got request %+v, want %+v", req, want)
	}
}

func TestRouteModelFailure(t *testing.T) {
	sel := fakeollama.Reply{Content: `{"reasoning":"r","use_tool":true,"tool":"calculator.add","direct":true}`}
	down := fakeollama.Reply{Status: http.StatusInternalServerError, Error: "out of memory"}
	tests := []struct {
		name         string
		mode         router.FailureMode
		replies      []fakeollama.Reply
		wantStatus   int
		wantCode     string // for errors
		wantDegraded string // for 200s
	}{
		{"fail in selection", router.Fail, []fakeollama.Reply{down}, http.StatusBadGateway, "model_unavailable", ""},
		{"fail in arguments", router.Fail, []fakeollama.Reply{sel, down}, http.StatusBadGateway, "model_unavailable", ""},
		{"default degrades in selection", "", []fakeollama.Reply{down}, http.StatusOK, "", "selecting tool"},
		{"default degrades in arguments", "", []fakeollama.Reply{sel, down}, http.StatusOK, "", "writing arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, fakeollama.New(t, tc.replies...), router.Settings{OnModelFailure: tc.mode}, server.Options{})
			status, raw, out := do(t, e.app, http.MethodPost, "/v1/route", []byte(`{"query":"add 2 and 3"}`))
			if status != tc.wantStatus {
				t.Fatalf("got status %d, want %d (body %s)", status, tc.wantStatus, raw)
			}
			if tc.wantCode != "" {
				code, msg := errorBody(t, raw)
				if code != tc.wantCode || !strings.Contains(msg, "out of memory") {
					t.Errorf("got code %q message %q, want %q naming the model's error", code, msg, tc.wantCode)
				}
				return
			}
			degraded, _ := out["degraded"].(string)
			if out["use_tool"] != false || out["direct"] != false || !strings.Contains(degraded, tc.wantDegraded) || !strings.Contains(degraded, "out of memory") {
				t.Errorf("got use_tool=%v direct=%v degraded=%q, want no tool and a reason containing %q and the model's error",
					out["use_tool"], out["direct"], degraded, tc.wantDegraded)
			}
		})
	}
}

// TestRouteTimeout: a request deadline is not an error, even in Fail mode: the caller gets what was
// gathered, with the reason, well within the deadline.
func TestRouteTimeout(t *testing.T) {
	model := fakeollama.New(t, fakeollama.Reply{Hang: true})
	e := newEnv(t, model, router.Settings{OnModelFailure: router.Fail}, server.Options{RequestTimeout: 50 * time.Millisecond})
	start := time.Now()
	status, raw, _ := do(t, e.app, http.MethodPost, "/v1/route", []byte(`{"query":"add 2 and 3"}`))
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("request took %v with a 50ms request timeout", d)
	}
	if status != http.StatusOK {
		t.Fatalf("got status %d, want 200 (body %s)", status, raw)
	}
	var out router.Outcome
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	// The router reports the time that was left of the request's 50ms when it started.
	if out.Stopped != router.StopDeadline || out.UseTool || !strings.Contains(out.Degraded, "reached before a tool was chosen") {
		t.Errorf("got stopped %q use_tool %v degraded %q, want the deadline before any tool", out.Stopped, out.UseTool, out.Degraded)
	}
}

func TestPanicIsRecovered(t *testing.T) {
	rt := routerFunc(func(_ context.Context, req router.Request) (*router.Outcome, error) {
		switch req.Query {
		case "panic":
			panic("router exploded")
		case "error":
			return nil, errors.New("secret internal detail")
		}
		return &router.Outcome{Reasoning: "still here"}, nil
	})
	var logs syncBuffer
	app := server.New(server.Deps{Router: rt}, server.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	tests := []struct {
		query      string
		wantStatus int
		wantCode   string
	}{
		{"panic", http.StatusInternalServerError, "internal"},
		{"fine", http.StatusOK, ""},
		{"error", http.StatusInternalServerError, "internal"},
		{"panic", http.StatusInternalServerError, "internal"},
		{"fine", http.StatusOK, ""},
	}
	for i, tc := range tests {
		status, raw, out := do(t, app, http.MethodPost, "/v1/route", []byte(`{"query":"`+tc.query+`"}`))
		if status != tc.wantStatus {
			t.Fatalf("request %d (%s): got status %d, want %d (body %s)", i, tc.query, status, tc.wantStatus, raw)
		}
		if tc.wantCode == "" {
			if out["reasoning"] != "still here" {
				t.Errorf("request %d: got %s, want the router's outcome", i, raw)
			}
			continue
		}
		code, msg := errorBody(t, raw)
		if code != tc.wantCode || msg != "internal error" {
			t.Errorf("request %d (%s): got code %q message %q, want %q and no internals", i, tc.query, code, msg, tc.wantCode)
		}
	}
	if status, _, _ := do(t, app, http.MethodGet, "/healthz", nil); status != http.StatusOK {
		t.Errorf("GET /healthz after panics: got status %d, want 200", status)
	}
	// Server-side failures reach the operator's log at warn, each internal error once; successes
	// at info.
	if got := strings.Count(logs.String(), `"level":"WARN","msg":"request","method":"POST","path":"/v1/route","status":500`); got != 3 {
		t.Errorf("got %d warn access-log lines for the three 500s, want 3:\n%s", got, logs.String())
	}
	if got := strings.Count(logs.String(), `"msg":"internal error"`); got != 3 {
		t.Errorf("got %d internal error lines for the three 500s, want 3:\n%s", got, logs.String())
	}
	if got := strings.Count(logs.String(), `"level":"INFO","msg":"request","method":"POST","path":"/v1/route","status":200`); got != 2 {
		t.Errorf("got %d info access-log lines for the two 200s, want 2:\n%s", got, logs.String())
	}
}

func TestInventory(t *testing.T) {
	e := newEnv(t, fakeollama.New(t), router.Settings{}, server.Options{})
	status, raw, _ := do(t, e.app, http.MethodGet, "/v1/inventory", nil)
	if status != http.StatusOK {
		t.Fatalf("got status %d, want 200 (body %s)", status, raw)
	}
	var got struct {
		Version *uint64 `json:"version"`
		Servers []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
			Tools  []struct {
				Name        string          `json:"name"`
				InputSchema json.RawMessage `json:"input_schema"`
			} `json:"tools"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	if got.Version == nil {
		t.Errorf("got no version in %s", raw)
	}
	names := map[string]bool{}
	for _, s := range got.Servers {
		if s.Status != string(inventory.StateUp) {
			t.Errorf("server %s: got status %q, want up", s.Name, s.Status)
		}
		if len(s.Tools) == 0 {
			t.Errorf("server %s: got no tools", s.Name)
		}
		for _, tool := range s.Tools {
			names[tool.Name] = true
			if !strings.HasPrefix(tool.Name, s.Name+".") {
				t.Errorf("server %s: got tool name %q, want it qualified with the server", s.Name, tool.Name)
			}
			var schema map[string]any
			if err := json.Unmarshal(tool.InputSchema, &schema); err != nil || schema["type"] != "object" {
				t.Errorf("tool %s: got input_schema %s, want an object schema", tool.Name, tool.InputSchema)
			}
		}
	}
	for _, want := range []string{"calculator.add", "calculator.evaluate", "faults.echo"} {
		if !names[want] {
			t.Errorf("inventory lacks %s: got %v", want, keysOf(names))
		}
	}
}

func keysOf(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestHealthz(t *testing.T) {
	app := server.New(server.Deps{}, server.Options{Logger: quiet})
	status, raw, _ := do(t, app, http.MethodGet, "/healthz", nil)
	if status != http.StatusOK || string(raw) != `{"status":"ok"}` {
		t.Errorf("got %d %s, want 200 {\"status\":\"ok\"}", status, raw)
	}
}

func TestReadyz(t *testing.T) {
	tests := []struct {
		name          string
		model         string
		closed        bool
		wantStatus    int
		wantReachable bool
		wantPulled    bool
		wantErr       string // in model.error
	}{
		{"pulled", "fake", false, http.StatusOK, true, true, ""},
		{"pulled with tag", "fake:latest", false, http.StatusOK, true, true, ""},
		{"not pulled", "qwen3:8b", false, http.StatusServiceUnavailable, true, false, "run `ollama pull qwen3:8b`"},
		{"model server down", "fake", true, http.StatusServiceUnavailable, false, false, "connect"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			model := fakeollama.New(t)
			e := newEnv(t, model, router.Settings{Model: tc.model}, server.Options{ProbeTimeout: 2 * time.Second})
			if tc.closed {
				model.Close()
			}
			status, raw, _ := do(t, e.app, http.MethodGet, "/readyz", nil)
			if status != tc.wantStatus {
				t.Errorf("got status %d, want %d (body %s)", status, tc.wantStatus, raw)
			}
			var got struct {
				Ready bool `json:"ready"`
				Model struct {
					Host      string `json:"host"`
					Name      string `json:"name"`
					Reachable bool   `json:"reachable"`
					Pulled    bool   `json:"pulled"`
					Error     string `json:"error"`
				} `json:"model"`
				Servers []struct {
					Name   string `json:"name"`
					Status string `json:"status"`
					Tools  int    `json:"tools"`
				} `json:"servers"`
			}
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatalf("decoding %s: %v", raw, err)
			}
			if got.Ready != (tc.wantStatus == http.StatusOK) || got.Model.Reachable != tc.wantReachable || got.Model.Pulled != tc.wantPulled {
				t.Errorf("got ready=%v reachable=%v pulled=%v, want %v %v %v",
					got.Ready, got.Model.Reachable, got.Model.Pulled, tc.wantStatus == http.StatusOK, tc.wantReachable, tc.wantPulled)
			}
			if got.Model.Name != tc.model || got.Model.Host != model.URL {
				t.Errorf("got model %q at %q, want %q at %q", got.Model.Name, got.Model.Host, tc.model, model.URL)
			}
			if tc.wantErr == "" && got.Model.Error != "" {
				t.Errorf("got model error %q, want none", got.Model.Error)
			}
			if !strings.Contains(got.Model.Error, tc.wantErr) {
				t.Errorf("got model error %q, want it to contain %q", got.Model.Error, tc.wantErr)
			}
			// The servers are listed whether or not the model is ready.
			var names []string
			for _, s := range got.Servers {
				names = append(names, s.Name)
				if s.Status != string(inventory.StateUp) || s.Tools == 0 {
					t.Errorf("server %s: got status %q with %d tools, want up with tools", s.Name, s.Status, s.Tools)
				}
			}
			if !slices.Equal(names, []string{"calculator", "faults"}) {
				t.Errorf("got servers %v, want [calculator faults]", names)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestInventoryForCaller(t *testing.T) {
	e := newEnv(t, fakeollama.New(t), router.Settings{}, server.Options{})
	// Requests without a credential act for org default; its team kiosk may use the calculator.
	h, err := access.New(access.Orgs{access.DefaultOrg: {Teams: map[string]access.Team{"kiosk": {Allow: []string{"calculator"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	app := server.New(server.Deps{Inventory: e.inv, Access: h}, server.Options{Logger: quiet})
	tools := func(query string) []string {
		_, raw, _ := do(t, app, http.MethodGet, "/v1/inventory"+query, nil)
		var got struct {
			Servers []struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			} `json:"servers"`
		}
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatalf("decoding %s: %v", raw, err)
		}
		var names []string
		for _, s := range got.Servers {
			for _, tl := range s.Tools {
				names = append(names, tl.Name)
			}
		}
		return names
	}
	kiosk, all := tools("?caller=kiosk"), tools("")
	for _, n := range kiosk {
		if !strings.HasPrefix(n, "calculator.") {
			t.Errorf("kiosk sees %s", n)
		}
	}
	if len(kiosk) == 0 || len(all) <= len(kiosk) {
		t.Errorf("got %d tools for the kiosk and %d for everyone, want a non-empty strict subset", len(kiosk), len(all))
	}
}
