package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"toolrouter/access"
	"toolrouter/server"
)

// stubMCP stands in for the MCP server's handler: a GET streams one event, then a second once
// release is closed, then waits for its request's end (signalled on ended); anything else answers
// JSON naming the method and the identity in the request's context.
type stubMCP struct {
	release chan struct{}
	ended   chan error
}

func (s *stubMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, ok := access.IdentityFrom(r.Context())
	if r.Method != http.MethodGet {
		w.Header().Set("Content-Type", "application/json")
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, `{"method":%q,"identity":%q,"has_identity":%v,"body":%q}`, r.Method, id.String(), ok, body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "data: first\n\n")
	w.(http.Flusher).Flush()
	select {
	case <-s.release:
		fmt.Fprint(w, "data: second\n\n")
		w.(http.Flusher).Flush()
	case <-r.Context().Done():
	}
	<-r.Context().Done()
	s.ended <- context.Cause(r.Context())
}

// TestMCPThroughGuard: /mcp's POST needs JSON, its DELETE (and GET, see
// TestMCPStreamFlushesAndShutdown) none, and all get the Host and Origin checks and the request's
// identity, as every route does.
func TestMCPThroughGuard(t *testing.T) {
	stub := &stubMCP{release: make(chan struct{}), ended: make(chan error, 4)}
	close(stub.release)
	seen := make(reports, 16)
	app := server.New(server.Deps{MCP: stub, Observer: seen}, server.Options{Logger: quiet, Listen: "127.0.0.1:8090", AllowedOrigins: []string{"https://app.example"}})
	for _, tc := range []struct {
		name, method, ctype, origin, host string
		wantStatus                        int
		want                              string
	}{
		{"post json", http.MethodPost, "application/json", "", "127.0.0.1:8090", 200, `"method":"POST","identity":"default","has_identity":true`},
		{"post text", http.MethodPost, "text/plain", "", "127.0.0.1:8090", 415, "unsupported_media_type"},
		{"delete", http.MethodDelete, "", "", "127.0.0.1:8090", 200, `"method":"DELETE"`},
		{"foreign host", http.MethodDelete, "", "", "evil.example:8090", 403, "host_not_allowed"},
		{"foreign origin", http.MethodPost, "application/json", "https://evil.example", "127.0.0.1:8090", 403, "origin_not_allowed"},
		{"allowed origin", http.MethodPost, "application/json", "https://app.example", "127.0.0.1:8090", 200, `"method":"POST"`},
		{"put", http.MethodPut, "", "", "127.0.0.1:8090", 405, "method_not_allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader
			if tc.method == http.MethodPost {
				body = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
			}
			req := httptest.NewRequest(tc.method, "/mcp", body)
			req.Host = tc.host
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err := app.Test(req, 2000)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantStatus || !strings.Contains(string(got), tc.want) {
				t.Errorf("got %d %q, want %d with %q", resp.StatusCode, got, tc.wantStatus, tc.want)
			}
			// A request the MCP handler served is not reported: the MCP server reports its tool
			// calls. One refused before it is, as any refused request.
			select {
			case rep := <-seen:
				if tc.wantStatus == http.StatusOK || rep.Status != tc.wantStatus {
					t.Errorf("got a report with status %d, want none for a served request and one with %d for a refused one", rep.Status, tc.wantStatus)
				}
			default:
				if tc.wantStatus != http.StatusOK {
					t.Errorf("got no report of a request refused with %d", tc.wantStatus)
				}
			}
		})
	}
}

// TestMCPStreamFlushesAndShutdown: each flush of the MCP handler reaches the client at once, not
// when the handler ends; a GET stream has no request timeout, and a shutdown ends it at once
// (cause: shutting down) instead of waiting for http.shutdown_timeout.
func TestMCPStreamFlushesAndShutdown(t *testing.T) {
	stub := &stubMCP{release: make(chan struct{}), ended: make(chan error, 1)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	const timeout = 10 * time.Second
	served := make(chan error, 1)
	go func() {
		served <- server.Serve(ctx, ln, server.Deps{MCP: stub},
			server.Options{Logger: quiet, ShutdownTimeout: timeout, RequestTimeout: 200 * time.Millisecond})
	}()
	resp, err := http.Get("http://" + ln.Addr().String() + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("got Content-Type %q, want text/event-stream", ct)
	}
	r := bufio.NewReader(resp.Body)
	line, err := r.ReadString('\n')
	if err != nil || line != "data: first\n" {
		t.Fatalf("got %q, %v; want the first event while the handler still runs", line, err)
	}
	// The behaviour under test is time itself: past the request timeout the stream is still served.
	<-time.After(400 * time.Millisecond)
	close(stub.release)
	for line == "data: first\n" || line == "\n" {
		if line, err = r.ReadString('\n'); err != nil {
			t.Fatalf("reading the second event: %v", err)
		}
	}
	if line != "data: second\n" {
		t.Fatalf("got %q, want the second event", line)
	}
	start := time.Now()
	stop()
	select {
	case cause := <-stub.ended:
		if cause == nil || !strings.Contains(cause.Error(), "shutting down") {
			t.Errorf("the stream's context ended with %v, want the shutdown", cause)
		}
	case <-time.After(timeout):
		t.Fatal("the stream was not ended by the shutdown")
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if d := time.Since(start); d > timeout/2 {
		t.Errorf("shutdown took %s with a stream open, want well under %s", d, timeout)
	}
	if _, err := io.ReadAll(r); err != nil && !strings.Contains(err.Error(), "EOF") {
		t.Errorf("the stream ended with %v, want its end", err)
	}
}
