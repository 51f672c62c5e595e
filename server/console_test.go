package server_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"toolrouter/access"
	"toolrouter/console"
	"toolrouter/observe"
	"toolrouter/router"
	"toolrouter/server"
)

// consoleApp serves the console over a router that answers every query with no tool; with keys,
// callers authenticate with teamKey (acme/research) or adminKey (acme/ops, an admin). Every report
// goes to the console's ring and to seen.
func consoleApp(t *testing.T, keys bool, seen *[]string) (*fiber.App, *console.Recent) {
	t.Helper()
	files, err := console.NewFiles()
	if err != nil {
		t.Fatal(err)
	}
	recent := console.NewRecent(2, 0)
	rt := routerFunc(func(context.Context, router.Request) (*router.Outcome, error) {
		return &router.Outcome{Calls: []router.Call{}, Stopped: router.StopNoTool}, nil
	})
	d := server.Deps{Router: rt, Observer: observe.Fanout{recent, observerFunc(func(r *observe.Report) { *seen = append(*seen, r.Endpoint) })},
		Console: &server.Console{Files: files, Recent: recent, Build: console.Build{Version: "v1.2.3", Go: "go1.26"},
			Usage: server.UsageStore{Backend: "sqlite", Where: "/var/lib/toolrouter/usage.db"}}}
	o := server.Options{Logger: quiet, Listen: "127.0.0.1:8090"}
	if keys {
		d.Auth, o.AdminReadyz = authKeys(t), true
	}
	return server.New(d, o), recent
}

type observerFunc func(*observe.Report)

func (f observerFunc) Observe(_ context.Context, r *observe.Report) { f(r) }

// send makes one request to app with headers and returns the response and its body.
func sendTo(t *testing.T, app *fiber.App, method, path, body string, headers map[string]string) (*http.Response, []byte) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Host = "127.0.0.1:8090"
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := app.Test(req, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, raw
}

// TestConsoleFiles: the page and its files are served to anyone the Host check admits, with a
// Content-Security-Policy, an ETag (304 when the client has it) and gzip when the client takes
// it; they are not reported to the observers. Without the console, /ui is a 404.
func TestConsoleFiles(t *testing.T) {
	var seen []string
	app, _ := consoleApp(t, true, &seen)
	files, _ := console.NewFiles()
	index, _ := files.Open(console.Index)
	appJS, _ := files.Open("app.js")
	tests := []struct {
		name, path string
		headers    map[string]string
		status     int
		body       []byte // the body, once inflated when gzipped
		gzip       bool
		etag       string
	}{
		{name: "the page, without a credential", path: "/ui", status: 200, body: index.Body, etag: index.ETag},
		{name: "a trailing slash", path: "/ui/", status: 200, body: index.Body, etag: index.ETag},
		{name: "a module, gzipped", path: "/ui/assets/app.js", headers: map[string]string{"Accept-Encoding": "br, gzip"},
			status: 200, body: appJS.Body, gzip: true, etag: strings.TrimSuffix(appJS.ETag, `"`) + `-gzip"`},
		{name: "gzip refused", path: "/ui/assets/app.js", headers: map[string]string{"Accept-Encoding": "gzip;q=0, *"},
			status: 200, body: appJS.Body, etag: appJS.ETag},
		{name: "the client has it", path: "/ui/assets/app.js", headers: map[string]string{"If-None-Match": appJS.ETag},
			status: 304, etag: appJS.ETag},
		{name: "the client has another version", path: "/ui/assets/app.js", headers: map[string]string{"If-None-Match": `"old"`},
			status: 200, body: appJS.Body, etag: appJS.ETag},
		{name: "no such file", path: "/ui/assets/nosuch.js", status: 404},
		{name: "another host", path: "/ui", headers: map[string]string{"Host": "evil.example:8090"}, status: 403},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, raw := sendTo(t, app, http.MethodGet, tc.path, "", tc.headers)
			if resp.StatusCode != tc.status {
				t.Fatalf("got status %d (%s), want %d", resp.StatusCode, raw, tc.status)
			}
			if tc.status >= 400 {
				return
			}
			if got := resp.Header.Get("ETag"); got != tc.etag {
				t.Errorf("ETag: got %s, want %s", got, tc.etag)
			}
			if got := resp.Header.Get("Content-Security-Policy"); got != console.CSP {
				t.Errorf("Content-Security-Policy: got %q, want %q", got, console.CSP)
			}
			if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options: got %q, want nosniff", got)
			}
			if tc.status == 304 {
				return
			}
			if got := resp.Header.Get("Content-Encoding") == "gzip"; got != tc.gzip {
				t.Fatalf("gzipped: got %v, want %v", got, tc.gzip)
			}
			if tc.gzip {
				zr, err := gzip.NewReader(bytes.NewReader(raw))
				if err != nil {
					t.Fatal(err)
				}
				if raw, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(raw, tc.body) {
				t.Errorf("body: got %d bytes, want the file's %d", len(raw), len(tc.body))
			}
		})
	}
	consoleUnobserved(t, seen)

	off := server.New(server.Deps{}, server.Options{Logger: quiet})
	if resp, raw := sendTo(t, off, http.MethodGet, "/ui", "", nil); resp.StatusCode != 404 {
		t.Errorf("console off: GET /ui got %d (%s), want 404", resp.StatusCode, raw)
	}
}

// TestConsoleAPI: /ui/api/about tells anyone authenticated who they are, and admins where the
// usage records and the rate limits are; the recent requests are for admins, one of them whole
// while the ring holds it.
func TestConsoleAPI(t *testing.T) {
	var seen []string
	app, recent := consoleApp(t, true, &seen)
	for range 3 { // the ring keeps two: request 1 is gone (and 2 once the 401 below is kept)
		recent.Observe(context.Background(), &observe.Report{Start: time.Now(), Endpoint: "/v1/route", Method: "POST", Status: 200,
			Identity: access.Identity{Org: "acme", Team: "research"}, Authenticated: true, Outcome: &router.Outcome{UseTool: true,
				Calls: []router.Call{{Step: 1, Server: "calculator", Tool: "multiply", Result: &router.Result{Text: "391"}}}}})
	}
	bearer := func(k string) map[string]string { return map[string]string{"Authorization": "Bearer " + k} }
	tests := []struct {
		name, path string
		headers    map[string]string
		status     int
		code       string
		has, lacks []string
	}{
		{name: "about, no credential", path: "/ui/api/about", status: 401, code: "missing_credential"},
		{name: "about, a team", path: "/ui/api/about", headers: bearer(teamKey), status: 200,
			has: []string{`"identity":"acme/research"`, `"admin":false`, `"authenticates":true`, `"version":"v1.2.3"`}, lacks: []string{"usage", "limits"}},
		{name: "about, an admin", path: "/ui/api/about", headers: bearer(adminKey), status: 200,
			has: []string{`"identity":"acme/ops"`, `"admin":true`, `"usage":{"backend":"sqlite","where":"/var/lib/toolrouter/usage.db"}`, `"recent_requests":2`}},
		{name: "requests, a team", path: "/ui/api/requests", headers: bearer(teamKey), status: 403, code: "forbidden"},
		{name: "requests, an admin", path: "/ui/api/requests", headers: bearer(adminKey), status: 200,
			has: []string{`"capacity":2`, `"id":3`, `"tools":["calculator.multiply"]`}, lacks: []string{`"id":1,`}},
		{name: "one request", path: "/ui/api/requests/3", headers: bearer(adminKey), status: 200,
			has: []string{`"id":3`, `"outcome":{`, `"text":"391"`}},
		{name: "one request, a team", path: "/ui/api/requests/3", headers: bearer(teamKey), status: 403, code: "forbidden"},
		{name: "a request the ring let go", path: "/ui/api/requests/1", headers: bearer(adminKey), status: 404, code: "not_found"},
		{name: "not a request id", path: "/ui/api/requests/x", headers: bearer(adminKey), status: 400, code: "bad_id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, raw := sendTo(t, app, http.MethodGet, tc.path, "", tc.headers)
			if resp.StatusCode != tc.status {
				t.Fatalf("got status %d (%s), want %d", resp.StatusCode, raw, tc.status)
			}
			if tc.code != "" {
				if code, _ := errorBody(t, raw); code != tc.code {
					t.Errorf("got code %q, want %q", code, tc.code)
				}
				return
			}
			if !json.Valid(raw) {
				t.Fatalf("got %s, want JSON", raw)
			}
			for _, s := range tc.has {
				if !bytes.Contains(raw, []byte(s)) {
					t.Errorf("got %s, want %s in it", raw, s)
				}
			}
			for _, s := range tc.lacks {
				if bytes.Contains(raw, []byte(s)) {
					t.Errorf("got %s, want no %s in it", raw, s)
				}
			}
		})
	}
	consoleUnobserved(t, seen)
}

// consoleUnobserved fails when the observers were told of a request the console served (a request
// refused before it reached the console, by the Host check or for its credential, is reported
// as any refused request is, as "other").
func consoleUnobserved(t *testing.T, seen []string) {
	t.Helper()
	for _, e := range seen {
		if strings.HasPrefix(e, "/ui") {
			t.Errorf("observed: got %v, want none of the console's requests", seen)
			return
		}
	}
}

// TestConsoleOrigin: with the console on, a browser's request from the server's own origin (the
// console's POSTs carry it) passes the Origin check; any other origin is refused as before, and a
// Host the server does not answer is refused first.
func TestConsoleOrigin(t *testing.T) {
	var seen []string
	app, _ := consoleApp(t, false, &seen)
	off := server.New(server.Deps{Router: routerFunc(func(context.Context, router.Request) (*router.Outcome, error) {
		return &router.Outcome{Calls: []router.Call{}}, nil
	})}, server.Options{Logger: quiet, Listen: "127.0.0.1:8090"})
	tests := []struct {
		name         string
		app          *fiber.App
		host, origin string
		status       int
		code         string
	}{
		{name: "the console's own origin", app: app, host: "127.0.0.1:8090", origin: "http://127.0.0.1:8090", status: 200},
		{name: "by another loopback name", app: app, host: "localhost:8090", origin: "http://localhost:8090", status: 200},
		{name: "behind a TLS proxy", app: app, host: "localhost:8090", origin: "https://localhost:8090", status: 200},
		{name: "another origin", app: app, host: "127.0.0.1:8090", origin: "http://evil.example", status: 403, code: "origin_not_allowed"},
		{name: "the same host, another port", app: app, host: "127.0.0.1:8090", origin: "http://127.0.0.1:9999", status: 403, code: "origin_not_allowed"},
		{name: "a rebound name", app: app, host: "evil.example:8090", origin: "http://evil.example:8090", status: 403, code: "host_not_allowed"},
		{name: "console off", app: off, host: "127.0.0.1:8090", origin: "http://127.0.0.1:8090", status: 403, code: "origin_not_allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, raw := sendTo(t, tc.app, http.MethodPost, "/v1/route", `{"query":"hello"}`,
				map[string]string{"Host": tc.host, "Origin": tc.origin, "Content-Type": "application/json"})
			if resp.StatusCode != tc.status {
				t.Fatalf("got status %d (%s), want %d", resp.StatusCode, raw, tc.status)
			}
			if tc.code != "" {
				if code, _ := errorBody(t, raw); code != tc.code {
					t.Errorf("got code %q, want %q", code, tc.code)
				}
			} else if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "" {
				t.Errorf("Access-Control-Allow-Origin: got %q, want none for the same origin", got)
			}
		})
	}
}
