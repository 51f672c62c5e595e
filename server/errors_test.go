package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"toolrouter/council"
	"toolrouter/router"
	"toolrouter/server"
)

// captured is a slog.Handler that keeps every record, for tests that read the log.
type captured struct {
	mu   sync.Mutex // guards recs
	recs []slog.Record
}

func (h *captured) Enabled(context.Context, slog.Level) bool { return true }
func (h *captured) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *captured) WithGroup(string) slog.Handler            { return h }
func (h *captured) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}

// accessStatuses returns the status of every access-log record, in order.
func (h *captured) accessStatuses() []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []int64
	for _, r := range h.recs {
		if r.Message != "request" {
			continue
		}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "status" {
				out = append(out, a.Value.Int64())
			}
			return true
		})
	}
	return out
}

// TestErrorStatusIsLogged: the access log records the status the client got, for every kind of
// error the one mapping knows.
func TestErrorStatusIsLogged(t *testing.T) {
	multiLine := errors.Join(router.ErrModel, &router.PhaseError{Phase: "selecting tool", Err: errors.New("out of memory")})
	tests := []struct {
		name       string
		route      routerFunc
		wantStatus int
		wantCode   string
	}{
		{"request timeout", func(ctx context.Context, _ router.Request) (*router.Outcome, error) {
			<-ctx.Done() // the request's timeout
			return nil, fmt.Errorf("selecting tool: %w", ctx.Err())
		}, http.StatusGatewayTimeout, "timeout"},
		{"model unavailable", func(context.Context, router.Request) (*router.Outcome, error) {
			return nil, multiLine
		}, http.StatusBadGateway, "model_unavailable"},
		{"quorum not met", func(context.Context, router.Request) (*router.Outcome, error) {
			return nil, fmt.Errorf("council: %w", &council.QuorumError{Quorum: 2, Members: 2})
		}, http.StatusBadGateway, "quorum_not_met"},
		{"internal", func(context.Context, router.Request) (*router.Outcome, error) {
			return nil, errors.New("secret")
		}, http.StatusInternalServerError, "internal"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			logs := &captured{}
			app := server.New(server.Deps{Router: tc.route},
				server.Options{RequestTimeout: 20 * time.Millisecond, Logger: slog.New(logs)})
			status, raw, _ := do(t, app, http.MethodPost, "/v1/route", []byte(`{"query":"q"}`))
			if status != tc.wantStatus {
				t.Fatalf("got status %d, want %d (body %s)", status, tc.wantStatus, raw)
			}
			if code, msg := errorBody(t, raw); code != tc.wantCode || strings.ContainsAny(msg, "\r\n") {
				t.Errorf("got code %q message %q, want %q on one line", code, msg, tc.wantCode)
			}
			if got := logs.accessStatuses(); len(got) != 1 || got[0] != int64(tc.wantStatus) {
				t.Errorf("got access-log statuses %v, want [%d]", got, tc.wantStatus)
			}
		})
	}
}

// TestErrorMessagesAreOneLine: an error whose text has line breaks (errors.Join) reaches the client
// on one line, in a JSON response and in a stream's error event.
func TestErrorMessagesAreOneLine(t *testing.T) {
	rt := routerFunc(func(context.Context, router.Request) (*router.Outcome, error) {
		return nil, errors.Join(router.ErrModel, &router.PhaseError{Phase: "selecting tool", Err: errors.New("out of memory")})
	})
	app := server.New(server.Deps{Router: rt}, server.Options{Logger: quiet})
	const want = "model failed; selecting tool: out of memory"

	_, raw, _ := do(t, app, http.MethodPost, "/v1/route", []byte(`{"query":"q"}`))
	if _, msg := errorBody(t, raw); msg != want {
		t.Errorf("response: got message %q, want %q", msg, want)
	}

	resp, err := http.Post(listen(t, app)+"/v1/route/stream", "application/json", strings.NewReader(`{"query":"q"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	names, data := readEvents(t, bufio.NewReader(resp.Body), nil)
	if len(names) != 1 || names[0] != string(router.EventError) {
		t.Fatalf("got events %v, want one error event", names)
	}
	var ev struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Status  int    `json:"status"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(data[0]), &ev); err != nil {
		t.Fatalf("decoding %s: %v", data[0], err)
	}
	if ev.Error.Message != want || ev.Error.Code != "model_unavailable" || ev.Error.Status != http.StatusBadGateway {
		t.Errorf("stream: got error %+v, want model_unavailable, 502 and message %q", ev.Error, want)
	}
}
