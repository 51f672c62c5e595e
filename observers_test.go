package main

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/internal/fakeollama"
)

// TestMetricsListenerAndTraces runs the command line with metrics.listen and the OTEL_*
// variables set: /metrics is served on its own listener (and nothing else there) and on the API's,
// both counting the requests served; on shutdown the metrics listener is closed and the traces are
// flushed to the OTLP receiver.
func TestMetricsListenerAndTraces(t *testing.T) {
	var exports atomic.Int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/traces" {
			exports.Add(1)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(receiver.Close)
	for _, v := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		t.Setenv(v, "")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.URL)

	model := fakeollama.NewFunc(t, func(api.ChatRequest) fakeollama.Reply {
		return reply(map[string]any{"reasoning": "none", "use_tool": false, "calls": []any{}, "needs_more": false, "direct": false})
	})
	path := writeConfig(t, map[string]any{"metrics": map[string]any{"listen": "127.0.0.1:0"}})
	logs := &syncBuffer{}
	var metricsAddr string
	// Registered before serving, so it runs once the command has returned.
	t.Cleanup(func() {
		if metricsAddr == "" {
			return
		}
		if c, err := net.DialTimeout("tcp", metricsAddr, time.Second); err == nil {
			c.Close()
			t.Errorf("the metrics listener %s still accepts connections after shutdown", metricsAddr)
		}
		if exports.Load() == 0 {
			t.Error("no trace export reached the receiver by the end of the shutdown, want the spans flushed")
		}
	})
	base := serveLogging(t, logs, "-config", path, "-ollama", model.URL, "-model", "fake", "-log-level", "info")
	metricsAddr = logged(t, logs.String(), "serving metrics", "listen")
	if !strings.Contains(logs.String(), `"msg":"exporting traces"`) {
		t.Errorf("the log does not say traces are exported: %s", logs)
	}

	const routes = 3
	for range routes {
		post(t, base+"/v1/route", `{"query":"hello"}`)
	}
	for _, url := range []string{"http://" + metricsAddr + "/metrics", base + "/metrics"} {
		status, _, body := send(t, http.MethodGet, url, "", nil)
		if status != http.StatusOK {
			t.Fatalf("GET %s: got %d, want 200 (%s)", url, status, body)
		}
		want := `toolrouter_http_requests_total{route="/v1/route",status="200"} 3`
		if !strings.Contains(string(body), want) {
			t.Errorf("GET %s lacks %s", url, want)
		}
	}
	if status, _, body := send(t, http.MethodPost, "http://"+metricsAddr+"/v1/route", `{"query":"hello"}`, nil); status != http.StatusNotFound {
		t.Errorf("POST /v1/route on the metrics listener: got %d, want 404 (%s)", status, body)
	}
}

// logged returns the value of key in the first JSON log line whose msg is msg.
func logged(t *testing.T, log, msg, key string) string {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == msg {
			if v, ok := line[key].(string); ok {
				return v
			}
		}
	}
	t.Fatalf("no log line %q with %s in:\n%s", msg, key, log)
	return ""
}

// TestRateLimitedInMetrics: a request the rate limits refuse is counted by level and limit on
// /metrics, beside its 429.
func TestRateLimitedInMetrics(t *testing.T) {
	model := fakeollama.NewFunc(t, func(api.ChatRequest) fakeollama.Reply {
		return reply(map[string]any{"reasoning": "none", "use_tool": false, "calls": []any{}, "needs_more": false, "direct": false})
	})
	path := writeConfig(t, map[string]any{"limits": map[string]any{"anonymous": map[string]any{"requests_per_minute": 1}}})
	base := serveLogging(t, &syncBuffer{}, "-config", path, "-ollama", model.URL, "-model", "fake")
	for i, want := range []int{http.StatusOK, http.StatusTooManyRequests} {
		if status, _, body := send(t, http.MethodPost, base+"/v1/route", `{"query":"hello"}`, nil); status != want {
			t.Fatalf("route %d: got %d, want %d (%s)", i+1, status, want, body)
		}
	}
	_, _, body := send(t, http.MethodGet, base+"/metrics", "", nil)
	for _, want := range []string{
		`toolrouter_rate_limited_total{level="anonymous",limit="requests_per_minute"} 1`,
		`toolrouter_http_requests_total{route="/v1/route",status="429"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
