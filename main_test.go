package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/internal/fakeollama"
	"toolrouter/internal/npmservers"
)

// serve runs the real command line in the background and returns the API's base URL; the
// command is stopped (and must return nil) when the test ends.
func serve(t *testing.T, args ...string) string {
	t.Helper()
	return serveLogging(t, io.Discard, append([]string{"-log-level", "error"}, args...)...)
}

// serveLogging is serve with the log written to stderr.
func serveLogging(t *testing.T, stderr io.Writer, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append(args, "-listen", "127.0.0.1:0"), io.Discard, stderr, func(a string) { addr <- a })
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run returned %v after shutdown, want nil", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("run did not return within 30s of shutdown")
		}
	})
	select {
	case a := <-addr:
		return "http://" + a
	case err := <-done:
		t.Fatalf("run: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("API did not start listening within 60s")
	}
	return ""
}

func post(t *testing.T, url, body string) map[string]any {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: status %d: %s", url, resp.StatusCode, b)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return out
}

func get(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("decoding %s: %v", url, err)
	}
	return resp.StatusCode, out
}

func reply(v any) fakeollama.Reply {
	b, _ := json.Marshal(v)
	return fakeollama.Reply{Content: string(b), PromptTokens: 300, CompletionTokens: 20}
}

// TestEverythingServerEndToEnd routes queries to the npm reference server-everything over stdio,
// through the real command line, HTTP API, router and a fake model.
func TestEverythingServerEndToEnd(t *testing.T) {
	dir := npmservers.Dir(t)
	cfg := map[string]any{"servers": map[string]any{"everything": map[string]any{
		"purpose": "MCP reference test server", "transport": "stdio", "command": "node",
		"args": []string{npmservers.Entry(dir, "everything"), "stdio"}, "connect_timeout": "60s",
	}}}
	path := filepath.Join(t.TempDir(), "config.json")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	model := fakeollama.New(t,
		reply(map[string]any{"reasoning": "a sum", "use_tool": true, "tool": "everything.get-sum", "direct": true}),
		reply(map[string]any{"a": 19, "b": 23}),
		reply(map[string]any{"reasoning": "echo it", "use_tool": true, "tool": "everything.echo", "direct": true}),
		reply(map[string]any{"message": "hello council"}),
	)
	base := serve(t, "-config", path, "-ollama", model.URL, "-model", "fake")

	_, inv := get(t, base+"/v1/inventory")
	if !strings.Contains(fmt.Sprint(inv), "everything.get-sum") {
		t.Fatalf("inventory lacks everything.get-sum: %v", inv)
	}
	tests := []struct {
		query, tool, want string
	}{
		{"What is 19 plus 23?", "get-sum", "42"},
		{"Echo 'hello council' back to me", "echo", "hello council"},
	}
	for _, tc := range tests {
		t.Run(tc.tool, func(t *testing.T) {
			body, _ := json.Marshal(map[string]string{"query": tc.query})
			out := post(t, base+"/v1/route", string(body))
			if out["use_tool"] != true || out["server"] != "everything" || out["tool"] != tc.tool {
				t.Fatalf("got %v, want everything.%s", out, tc.tool)
			}
			res, _ := out["result"].(map[string]any)
			if text, _ := res["text"].(string); !strings.Contains(text, tc.want) || res["is_error"] != false {
				t.Errorf("got result %v, want text containing %q", res, tc.want)
			}
		})
	}
	// What the model was sent: the npm server's tools in the inventory and the format enum (of
	// the first request that names tools: the first continues the selection with use_tool).
	var first api.ChatRequest
	for _, r := range model.Requests() {
		if strings.Contains(string(r.Format), `"enum"`) {
			first = r
			break
		}
	}
	if len(first.Messages) == 0 || !strings.Contains(first.Messages[0].Content, "everything.get-sum") || !strings.Contains(string(first.Format), `"everything.echo"`) {
		t.Errorf("selection request lacks the npm server's tools")
	}
}

// TestDefaultsWithoutModel runs the committed config.json with no model server: the built-ins come
// up, /readyz says why it is not ready, and /v1/route degrades to "no tool" instead of hanging.
func TestDefaultsWithoutModel(t *testing.T) {
	model := fakeollama.New(t)
	model.Close() // a model URL where nothing listens
	base := serve(t, "-config", "config.json", "-ollama", model.URL)

	status, ready := get(t, base+"/readyz")
	if status != http.StatusServiceUnavailable || ready["ready"] != false {
		t.Errorf("got /readyz %d %v, want 503 not ready", status, ready)
	}
	servers, _ := ready["servers"].([]any)
	if len(servers) != 2 {
		t.Errorf("got servers %v, want calculator and clock", servers)
	}
	for _, s := range servers {
		if m, _ := s.(map[string]any); m["status"] != "up" {
			t.Errorf("server %v is not up", m)
		}
	}
	out := post(t, base+"/v1/route", `{"query":"what is 2+2?"}`)
	if out["use_tool"] != false || !strings.Contains(fmt.Sprint(out["degraded"]), "connection refused") {
		t.Errorf("got %v, want a degraded no-tool answer naming the refused connection", out)
	}
	if status, _ := get(t, base+"/healthz"); status != http.StatusOK {
		t.Errorf("got /healthz %d, want 200", status)
	}
}

// TestCommands runs the route and inventory subcommands and a bad configuration.
func TestCommands(t *testing.T) {
	model := fakeollama.New(t,
		reply(map[string]any{"reasoning": "math", "use_tool": true, "tool": "calculator.multiply", "direct": true}),
		reply(map[string]any{"a": 6, "b": 7}),
	)
	tests := []struct {
		name    string
		args    []string
		want    string // in stdout
		wantErr string
	}{
		{"route", []string{"-ollama", model.URL, "-model", "fake", "route", "six times seven"}, `"text": "42"`, ""},
		{"inventory", []string{"inventory"}, `"name": "clock.current_time"`, ""},
		{"search", []string{"search", "what time is it in Tokyo"}, `"name": "clock.current_time"`, ""},
		{"search needs a query", []string{"search"}, "", "usage"},
		{"flags after command", []string{"inventory", "-log-level", "error"}, `"name": "calculator.add"`, ""},
		{"route needs a query", []string{"route"}, "", "usage"},
		{"unknown command", []string{"frobnicate"}, "", `unknown command "frobnicate"`},
		{"invalid config value", []string{"-ollama", "ftp://x", "inventory"}, "", "ollama.host"},
		{"missing config file", []string{"-config", "nope.json", "inventory"}, "", "nope.json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			err := run(context.Background(), append([]string{"-log-level", "error"}, tc.args...), &out, io.Discard, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("stdout lacks %s:\n%s", tc.want, out.String())
			}
		})
	}
}

// TestCouncilAndTrajectoryWiring runs the command line with a council of two members on the fake
// model and the trajectory log on: /v1/answer is answered by the council, and /readyz counts the
// trajectory records.
func TestCouncilAndTrajectoryWiring(t *testing.T) {
	model := councilModel(t)
	dir := t.TempDir()
	cfg := map[string]any{
		"council": map[string]any{
			"members":  []map[string]any{{"name": "one", "model": "m1"}, {"name": "two", "model": "m2"}},
			"chairman": map[string]any{"name": "chair", "model": "m3"},
		},
		"trajectory": map[string]any{"path": filepath.Join(dir, "traj.jsonl")},
	}
	path := filepath.Join(dir, "config.json")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	// Registered before serve, so it runs after the command has shut down and flushed the log.
	t.Cleanup(func() {
		b, err := os.ReadFile(filepath.Join(dir, "traj.jsonl"))
		if n := strings.Count(string(b), "\n"); err != nil || n < 3 {
			t.Errorf("trajectory log has %d records (%v), want the select, arguments and execute records", n, err)
		}
	})
	base := serve(t, "-config", path, "-ollama", model.URL, "-model", "fake")
	out := post(t, base+"/v1/answer", `{"query":"what time is it?"}`)
	if out["answered_by"] != "council" || out["final"] != "It is now, in UTC." {
		t.Fatalf("got %v, want the chairman's answer", out)
	}
	_, ready := get(t, base+"/readyz")
	if traj, ok := ready["trajectory"].(map[string]any); !ok || traj["dropped"] != 0.0 {
		t.Errorf("got trajectory %v in /readyz, want its counts with nothing dropped", ready["trajectory"])
	}
}

// TestEstimateExceededCounted: a model call whose real prompt size was over the router's estimate
// is counted in /readyz.
func TestEstimateExceededCounted(t *testing.T) {
	model := fakeollama.New(t, fakeollama.Reply{Content: `{"use_tool":false,"calls":[],"needs_more":false,"direct":false}`,
		PromptTokens: 1_000_000, CompletionTokens: 5})
	base := serve(t, "-config", "", "-ollama", model.URL, "-model", "fake")
	_, before := get(t, base+"/readyz")
	if n := before["model"].(map[string]any)["estimate_exceeded"]; n != float64(0) {
		t.Fatalf("got estimate_exceeded %v before any call, want 0", n)
	}
	post(t, base+"/v1/route", `{"query": "hello there"}`)
	_, after := get(t, base+"/readyz")
	if n := after["model"].(map[string]any)["estimate_exceeded"]; n != float64(1) {
		t.Errorf("got estimate_exceeded %v after a call counted at a million tokens, want 1", n)
	}
}

// councilModel is a fake model for a council run: selection chooses clock.current_time, the
// arguments are {"timezone":"UTC"}, members answer, reviewers rank A over B, the chairman writes.
func councilModel(t *testing.T) *fakeollama.Server {
	t.Helper()
	return fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply {
		system := req.Messages[0].Content
		switch {
		case strings.Contains(string(req.Format), "needs_more"):
			return reply(map[string]any{"reasoning": "time", "use_tool": true, "calls": []map[string]string{{"tool": "clock.current_time", "task": "now"}},
				"needs_more": false, "direct": false})
		case req.Format != nil:
			return reply(map[string]any{"timezone": "UTC"})
		case strings.Contains(system, "You are reviewing answers"):
			return fakeollama.Reply{Content: "FINAL RANKING:\n1. Response A\n2. Response B"}
		case strings.Contains(system, "You are the chairman"):
			return fakeollama.Reply{Content: "It is now, in UTC."}
		}
		return fakeollama.Reply{Content: "a member's answer"}
	})
}
