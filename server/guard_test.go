package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"toolrouter/internal/fakeollama"
	"toolrouter/router"
	"toolrouter/server"
)

// TestBrowserRequestsRunNothing goes through a real listener, as a browser would: a page on
// another site (or a rebound hostname) can POST text/plain to the loopback API without a
// preflight. Such requests, and any with an Origin that http.allowed_origins does not list, are
// refused before anything runs: the model gets no call.
func TestBrowserRequestsRunNothing(t *testing.T) {
	const allowed = "https://console.example.com"
	noTool := fakeollama.Reply{Content: `{"reasoning":"r","use_tool":false,"calls":[],"needs_more":false,"direct":false}`}
	tests := []struct {
		name        string
		method      string
		path        string
		contentType string
		origin      string
		wantStatus  int
		wantCode    string // "" for a success
		wantCalls   int
	}{
		{"text/plain from a foreign origin", http.MethodPost, "/v1/route", "text/plain;charset=UTF-8", "http://evil.example", http.StatusForbidden, "origin_not_allowed", 0},
		{"form from a rebound hostname", http.MethodPost, "/v1/answer", "application/x-www-form-urlencoded", "http://rebind.example:8090", http.StatusForbidden, "origin_not_allowed", 0},
		{"JSON from a foreign origin", http.MethodPost, "/v1/route/stream", "application/json", "http://evil.example", http.StatusForbidden, "origin_not_allowed", 0},
		{"GET from a foreign origin", http.MethodGet, "/v1/inventory", "", "http://evil.example", http.StatusForbidden, "origin_not_allowed", 0},
		{"sandboxed page (Origin null)", http.MethodPost, "/v1/route", "application/json", "null", http.StatusForbidden, "origin_not_allowed", 0},
		{"text/plain without an origin", http.MethodPost, "/v1/route", "text/plain", "", http.StatusUnsupportedMediaType, "unsupported_media_type", 0},
		{"no content type", http.MethodPost, "/v1/answer", "", "", http.StatusUnsupportedMediaType, "unsupported_media_type", 0},
		{"multipart", http.MethodPost, "/v1/route", "multipart/form-data; boundary=x", "", http.StatusUnsupportedMediaType, "unsupported_media_type", 0},
		{"JSON with a charset", http.MethodPost, "/v1/route", "application/json; charset=utf-8", "", http.StatusOK, "", 1},
		{"JSON from an allowed origin", http.MethodPost, "/v1/route", "application/json", allowed, http.StatusOK, "", 1},
		{"text/plain from an allowed origin", http.MethodPost, "/v1/route", "text/plain", allowed, http.StatusUnsupportedMediaType, "unsupported_media_type", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			model := fakeollama.New(t, noTool)
			e := newEnv(t, model, router.Settings{}, server.Options{AllowedOrigins: []string{allowed}})
			base := listen(t, e.app)
			var body io.Reader
			if tc.method == http.MethodPost {
				body = strings.NewReader(`{"query":"add 2 and 3"}`)
			}
			req, _ := http.NewRequest(tc.method, base+tc.path, body)
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("got status %d (%s), want %d", resp.StatusCode, raw, tc.wantStatus)
			}
			if tc.wantCode != "" {
				code, msg := errorBody(t, raw)
				if code != tc.wantCode {
					t.Errorf("got code %q, want %q", code, tc.wantCode)
				}
				if !strings.Contains(msg, "http.allowed_origins") && !strings.Contains(msg, "Content-Type: application/json") {
					t.Errorf("got message %q, want it to name the setting or the header to send", msg)
				}
			}
			if got := resp.Header.Get("Access-Control-Allow-Origin"); (tc.origin == allowed) != (got == allowed) {
				t.Errorf("got Access-Control-Allow-Origin %q for origin %q, want it only for %q", got, tc.origin, allowed)
			}
			if n := len(model.Requests()); n != tc.wantCalls {
				t.Errorf("got %d model calls, want %d", n, tc.wantCalls)
			}
		})
	}
}

// TestAllowedOriginPreflight: a browser's preflight from an allowed origin is answered, so its
// JSON POSTs can follow; one from another origin is refused.
func TestAllowedOriginPreflight(t *testing.T) {
	e := newEnv(t, fakeollama.New(t), router.Settings{}, server.Options{AllowedOrigins: []string{"https://console.example.com"}})
	base := listen(t, e.app)
	for _, tc := range []struct {
		origin string
		want   int
	}{{"https://console.example.com", http.StatusNoContent}, {"https://evil.example", http.StatusForbidden}} {
		req, _ := http.NewRequest(http.MethodOptions, base+"/v1/route", nil)
		req.Header.Set("Origin", tc.origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "content-type")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("preflight from %s: got %d, want %d", tc.origin, resp.StatusCode, tc.want)
		}
		if tc.want == http.StatusNoContent && !strings.Contains(strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers")), "content-type") {
			t.Errorf("preflight from %s: got Access-Control-Allow-Headers %q, want Content-Type", tc.origin, resp.Header.Get("Access-Control-Allow-Headers"))
		}
	}
}

// TestDeadlineOutOfRange goes through a real listener: a deadline_ms that would overflow a
// time.Duration once wrapped into a deadline of under a millisecond; any value outside 1 ms to
// router.deadline is now a 400 naming the range.
func TestDeadlineOutOfRange(t *testing.T) {
	model := fakeollama.New(t)
	e := newEnv(t, model, router.Settings{}, server.Options{MaxDeadline: 60_000_000_000})
	base := listen(t, e.app)
	for _, v := range []string{"9223372036854775", "9223372036854775807", "60001", "0", "-1"} {
		resp, err := http.Post(base+"/v1/route", "application/json", strings.NewReader(`{"query":"q","deadline_ms":`+v+`}`))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var out struct {
			Error struct{ Code, Message string }
		}
		_ = json.Unmarshal(raw, &out)
		if resp.StatusCode != http.StatusBadRequest || out.Error.Code != "bad_deadline" || !strings.Contains(out.Error.Message, "from 1 to 60000") {
			t.Errorf("deadline_ms %s: got %d %s, want 400 bad_deadline naming 1 to 60000", v, resp.StatusCode, raw)
		}
	}
	if n := len(model.Requests()); n != 0 {
		t.Errorf("got %d model calls, want none", n)
	}
}
