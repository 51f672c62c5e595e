package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"toolrouter/internal/fakeollama"
	"toolrouter/internal/testmcp"
	"toolrouter/inventory/builtin"
)

// TestLogIsJSON runs the binary with MCP servers that make the MCP client library log (a stdio
// server that cannot be answered, a streamable-HTTP server it listens to) and serves requests and
// probes: every line on stderr is one JSON object; each request has one line at info, probes none
// at info, and durations are numbers of milliseconds.
func TestLogIsJSON(t *testing.T) {
	bin := buildBinary(t)
	// A server of the generation before 2026-07-28, whose streamable HTTP client opens the GET
	// stream and logs from it (a 2026-07-28 server is listened to through subscriptions/listen).
	web := httptest.NewServer(beforeDiscover(must(builtin.Handler("calculator"))))
	t.Cleanup(web.Close)
	model := fakeollama.New(t,
		reply(map[string]any{"reasoning": "math", "use_tool": true, "calls": []map[string]string{{"tool": "calculator.multiply", "task": "6*7"}}, "needs_more": false, "direct": true}),
		reply(map[string]any{"a": 6, "b": 7}),
		reply(map[string]any{"reasoning": "math", "use_tool": true, "calls": []map[string]string{{"tool": "calculator.multiply", "task": "6*7"}}, "needs_more": false, "direct": true}),
		reply(map[string]any{"a": 6, "b": 7}),
	)
	path := writeConfig(t, map[string]any{
		"listen": "127.0.0.1:0",
		"ollama": map[string]any{"host": model.URL, "model": "fake"},
		"servers": map[string]any{
			"deaf": map[string]any{"purpose": "nothing", "transport": "stdio", "command": "sh", "args": []string{"-c", testmcp.DeafStdioScript},
				"connect_timeout": "2s"},
			"web": map[string]any{"purpose": "arithmetic over HTTP", "transport": "streamable-http", "url": web.URL + "/mcp"},
		},
	})
	p := startBinary(t, bin, "-config", path)

	// What the MCP client library logs comes after start-up: wait for its lines.
	logged := func(msg string) bool {
		return slices.ContainsFunc(p.lines(), func(l string) bool { return strings.Contains(l, `"msg":"`+msg+`"`) })
	}
	for deadline := time.Now().Add(30 * time.Second); !(logged("Error writing response") && logged("server down")); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no line from the stdio transport and the inventory within 30s:\n%s", strings.Join(p.lines(), "\n"))
		}
	}
	for _, probe := range []string{"/healthz", "/readyz"} {
		if status, _ := get(t, p.Base+probe); status != http.StatusOK {
			t.Errorf("GET %s: got %d, want 200", probe, status)
		}
	}
	if out := post(t, p.Base+"/v1/route", `{"query":"six times seven"}`); out["use_tool"] != true {
		t.Errorf("route: got %v, want a tool used", out)
	}
	resp, err := http.Post(p.Base+"/v1/route/stream", "application/json", strings.NewReader(`{"query":"six times seven"}`))
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	resp.Body.Close()
	if !strings.Contains(body.String(), "event: complete") {
		t.Errorf("stream: got %s, want it to complete", body.String())
	}

	var requests []map[string]any
	msgs := map[string]map[string]any{}
	for _, line := range p.stop(t) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("a stderr line is not JSON (%v): %s", err, line)
			continue
		}
		msg, _ := rec["msg"].(string)
		msgs[msg] = rec
		if msg == "request" {
			requests = append(requests, rec)
		}
	}
	if rec := msgs["Error writing response"]; rec["server"] != "deaf" {
		t.Errorf("got the stdio transport's line %v, want it with server deaf", rec)
	}
	if rec := msgs["listening to server forever"]; rec["server"] != "web" {
		t.Errorf("got the HTTP transport's line %v, want it with server web", rec)
	}
	if ms, ok := msgs["server down"]["retry_in_ms"].(float64); !ok || ms <= 0 {
		t.Errorf("got server down %v, want retry_in_ms a number of milliseconds", msgs["server down"])
	}
	if _, ok := msgs["shutting down"]["timeout_ms"].(float64); !ok {
		t.Errorf("got shutting down %v, want timeout_ms a number", msgs["shutting down"])
	}
	var paths []string
	for _, r := range requests {
		paths = append(paths, r["path"].(string))
		if r["level"] != "INFO" || r["use_tool"] != true || r["identity"] != "default" {
			t.Errorf("got request line %v, want it at info with the identity and the decision", r)
		}
		if _, ok := r["duration_ms"].(float64); !ok {
			t.Errorf("got request line %v, want duration_ms a number", r)
		}
	}
	if want := []string{"/v1/route", "/v1/route/stream"}; !slices.Equal(paths, want) {
		t.Errorf("got request lines for %v, want one for each of %v (probes at debug)", paths, want)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// beforeDiscover serves h as a server that predates server/discover: it answers that method
// "method not found", as servers before 2026-07-28 do, so a client falls back to initialize.
func beforeDiscover(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var msg struct {
			ID     any    `json:"id"`
			Method string `json:"method"`
		}
		if json.Unmarshal(body, &msg) == nil && msg.Method == string(mcp.MethodServerDiscover) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID,
				"error": map[string]any{"code": mcp.METHOD_NOT_FOUND, "message": "Method not found"}})
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	})
}
