package server_test

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"toolrouter/config"
	"toolrouter/internal/fakeollama"
	"toolrouter/router"
	"toolrouter/server"
)

// logEnv is an API on model whose log, every level, is written to logs.
func logEnv(t *testing.T, model *fakeollama.Server, o server.Options) (*fiber.App, *syncBuffer) {
	t.Helper()
	inv := newInventory(t)
	rt := router.New(model.Client(), inv, inv, router.Settings{Model: "fake", CallTimeout: 10 * time.Second}, quiet)
	logs := &syncBuffer{}
	o.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if o.Model == "" {
		o.Model = "fake"
	}
	o.ModelHost = model.URL
	return server.New(server.Deps{Router: rt, Inventory: inv, Model: model.Client()}, o), logs
}

// requestLines returns the request log's lines, decoded.
func requestLines(t *testing.T, logs *syncBuffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		if rec["msg"] == "request" {
			out = append(out, rec)
		}
	}
	return out
}

const secretQuery = "add two and three, said the secret query"

// TestRequestLog: one line per request, at the level log.requests says, with who asked, what was
// decided and how long it took, never the query; probes at debug; a server-side failure at warn
// even with the log off.
func TestRequestLog(t *testing.T) {
	type want struct {
		path, level string
		status      float64
	}
	tests := []struct {
		name    string
		log     config.RequestLog
		model   string // the model the API checks for: another than "fake" makes /readyz 503
		replies []fakeollama.Reply
		want    []want
	}{
		{"info by default", "", "fake", selectAdd(true), []want{
			{"/v1/route", "INFO", 200}, {"/healthz", "DEBUG", 200}, {"/readyz", "DEBUG", 200}, {"/v1/answer", "WARN", 503}}},
		{"probe of a model that is down", config.RequestLogInfo, "absent", selectAdd(true), []want{
			{"/v1/route", "INFO", 200}, {"/healthz", "DEBUG", 200}, {"/readyz", "DEBUG", 503}, {"/v1/answer", "WARN", 503}}},
		{"debug", config.RequestLogDebug, "fake", selectAdd(true), []want{
			{"/v1/route", "DEBUG", 200}, {"/healthz", "DEBUG", 200}, {"/readyz", "DEBUG", 200}, {"/v1/answer", "WARN", 503}}},
		{"off", config.RequestLogOff, "fake", selectAdd(true), []want{{"/v1/answer", "WARN", 503}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			app, logs := logEnv(t, fakeollama.New(t, tc.replies...), server.Options{RequestLog: tc.log, Model: tc.model})
			body, _ := json.Marshal(map[string]string{"query": secretQuery})
			do(t, app, http.MethodPost, "/v1/route", body)
			do(t, app, http.MethodGet, "/healthz", nil)
			do(t, app, http.MethodGet, "/readyz", nil)
			// Without a council: 503 no_council, a server-side refusal.
			do(t, app, http.MethodPost, "/v1/answer", []byte(`{"query":"q","synthesize":"always"}`))

			lines := requestLines(t, logs)
			if len(lines) != len(tc.want) {
				t.Fatalf("got %d request lines, want %d:\n%s", len(lines), len(tc.want), logs.String())
			}
			for i, w := range tc.want {
				got := lines[i]
				if got["path"] != w.path || got["level"] != w.level || got["status"] != w.status {
					t.Errorf("line %d: got %v %v %v, want %s %s %v", i, got["path"], got["level"], got["status"], w.path, w.level, w.status)
				}
				if _, ok := got["duration_ms"].(float64); !ok {
					t.Errorf("line %d: got duration_ms %v, want a number", i, got["duration_ms"])
				}
				if w.path == "/v1/route" {
					if got["identity"] != "default" || got["use_tool"] != true || !strings.Contains(toJSON(got["tools"]), `"calculator.add"`) {
						t.Errorf("route line: got %v, want identity default, use_tool and the tool called", got)
					}
				}
				if w.path == "/v1/answer" && got["error_code"] != "no_council" {
					t.Errorf("answer line: got error_code %v, want no_council", got["error_code"])
				}
			}
			if strings.Contains(logs.String(), "secret query") {
				t.Errorf("the log holds the query:\n%s", logs.String())
			}
		})
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestStreamLoggedOnceAtItsEnd: a stream is logged once, when its work has ended, with the
// routing it did, which is known only then.
func TestStreamLoggedOnceAtItsEnd(t *testing.T) {
	app, logs := logEnv(t, fakeollama.New(t, selectAdd(true)...), server.Options{})
	base := listen(t, app)
	resp, err := http.Post(base+"/v1/route/stream", "application/json", strings.NewReader(`{"query":"2+3?"}`))
	if err != nil {
		t.Fatal(err)
	}
	names, _ := readEvents(t, bufio.NewReader(resp.Body), nil)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if len(names) == 0 || names[len(names)-1] != "complete" {
		t.Fatalf("got events %v, want complete last", names)
	}
	// The line is written as the last event is queued: the client may have it a moment before.
	var lines []map[string]any
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if lines = requestLines(t, logs); len(lines) > 0 {
			break
		}
	}
	if len(lines) != 1 {
		t.Fatalf("got %d request lines, want 1:\n%s", len(lines), logs.String())
	}
	if got := lines[0]; got["path"] != "/v1/route/stream" || got["level"] != "INFO" || got["use_tool"] != true || !strings.Contains(toJSON(got["tools"]), `"calculator.add"`) {
		t.Errorf("got %v, want the stream's path at info with its routing", got)
	}
}
