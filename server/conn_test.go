package server_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/internal/fakeollama"
	"toolrouter/provider"
	"toolrouter/router"
	"toolrouter/server"
)

// rawPost opens a TCP connection to base, sends one POST with a JSON body and returns the
// connection unread: the test decides when the client leaves.
func rawPost(t *testing.T, base, path, body string) net.Conn {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, u.Host, len(body), body)
	return conn
}

// hangingModel is a fake model whose first call hangs until its client gives up and whose later
// calls answer "no tool"; started is closed when the first call arrives, and calls counts them all.
func hangingModel(t *testing.T) (model *fakeollama.Server, started <-chan struct{}, calls *atomic.Int32) {
	ch := make(chan struct{})
	calls = new(atomic.Int32)
	model = fakeollama.NewFunc(t, func(api.ChatRequest) fakeollama.Reply {
		if calls.Add(1) == 1 {
			close(ch)
			return fakeollama.Reply{Hang: true}
		}
		return fakeollama.Reply{Content: `{"reasoning":"r","use_tool":false,"calls":[],"needs_more":false,"direct":false}`}
	})
	return model, ch, calls
}

// doneRouter tells when each Route call has returned.
type doneRouter struct {
	server.Router
	done chan struct{}
}

func (r doneRouter) Route(ctx context.Context, req router.Request) (*router.Outcome, error) {
	defer func() { r.done <- struct{}{} }()
	return r.Router.Route(ctx, req)
}

// wait fails the test unless ch receives within d.
func wait[T any](t *testing.T, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("%s did not happen within %s", what, d)
	}
	var zero T
	return zero
}

// TestClientDisconnectCancelsWork: a client that closes its connection while a non-streaming
// request waits for the model cancels the request: the model call in flight is aborted, and no
// model call is made after the client left. Before, the request ran on for nobody until its
// timeouts.
func TestClientDisconnectCancelsWork(t *testing.T) {
	for _, path := range []string{"/v1/route", "/v1/answer"} {
		for _, mode := range []router.FailureMode{router.NoTool, router.Fail} {
			t.Run(path+" "+string(mode), func(t *testing.T) {
				model, started, calls := hangingModel(t)
				inv := newInventory(t)
				rt := router.New(model.Client(), inv, inv, router.Settings{Model: "fake", CallTimeout: time.Minute, OnModelFailure: mode}, quiet)
				routed := make(chan struct{}, 1)
				base := listen(t, server.New(server.Deps{Router: doneRouter{rt, routed}, Inventory: inv, Model: model.Client()}, server.Options{Logger: quiet}))

				conn := rawPost(t, base, path, `{"query":"add 2 and 3"}`)
				wait(t, started, 10*time.Second, "the first model call")
				conn.Close() // the client leaves while the model is thinking
				wait(t, model.Aborted(), 5*time.Second, "the model call's cancellation after the client left")
				wait(t, routed, 5*time.Second, "the end of the routing after the client left")
				if n := calls.Load(); n != 1 {
					t.Errorf("got %d model calls, want 1: none after the client left", n)
				}
			})
		}
	}
}

// TestStreamDisconnectNoticedAtOnce: a stream whose client leaves is cancelled within a second,
// not at the next keep-alive write (which a closed socket may still accept once).
func TestStreamDisconnectNoticedAtOnce(t *testing.T) {
	model, started, calls := hangingModel(t)
	e := newEnv(t, model, router.Settings{CallTimeout: time.Minute}, server.Options{StreamHeartbeat: time.Hour})
	base := listen(t, e.app)
	conn := rawPost(t, base, "/v1/route/stream", `{"query":"add 2 and 3"}`)
	wait(t, started, 10*time.Second, "the first model call")
	conn.Close()
	left := time.Now()
	wait(t, model.Aborted(), 5*time.Second, "the model call's cancellation after the client left")
	if d := time.Since(left); d > time.Second {
		t.Errorf("the model call was cancelled %s after the client left, want within 1s", d)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("got %d model calls, want 1", n)
	}
}

// TestKeepAliveAfterWatchedRequest: the connection watch leaves a kept-alive connection as it
// found it: a second request on it is served. The model takes longer than the watch's delay, so
// that the watch runs.
func TestKeepAliveAfterWatchedRequest(t *testing.T) {
	model := fakeollama.NewFunc(t, func(api.ChatRequest) fakeollama.Reply {
		time.Sleep(20 * time.Millisecond) // a model's time: the connection is watched meanwhile
		return fakeollama.Reply{Content: `{"reasoning":"r","use_tool":false,"calls":[],"needs_more":false,"direct":false}`}
	})
	e := newEnv(t, model, router.Settings{}, server.Options{ReadTimeout: 5 * time.Second})
	base := listen(t, e.app)
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	for i := range 2 {
		resp, err := client.Post(base+"/v1/route", "application/json", strings.NewReader(`{"query":"hello"}`))
		if err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: got %d %s, want 200", i+1, resp.StatusCode, body)
		}
	}
}

// TestModelFloodIsAModelFailure: a model that streams without end (433 MB once took the sidecar
// to 1.87 GB) is cut at ollama.max_response_bytes and counted as a model failure naming the
// reason, whether the model client bounds it (provider.Ollama) or only the router does
// (api.Client); the fake sees the reading stop.
func TestModelFloodIsAModelFailure(t *testing.T) {
	const limit = 64 << 10
	for _, client := range []string{"provider.Ollama", "api.Client"} {
		for _, mode := range []router.FailureMode{router.NoTool, router.Fail} {
			t.Run(client+" "+string(mode), func(t *testing.T) {
				model := fakeollama.New(t, fakeollama.Reply{Flood: 1 << 30})
				var chat router.Chatter = model.Client()
				if client == "provider.Ollama" {
					u, _ := url.Parse(model.URL)
					chat = provider.NewOllama(u, nil, provider.WithMaxResponseBytes(limit))
				}
				inv := newInventory(t)
				rt := router.New(chat, inv, inv, router.Settings{Model: "fake", OnModelFailure: mode, MaxResponseBytes: limit}, quiet)
				base := listen(t, server.New(server.Deps{Router: rt, Inventory: inv, Model: model.Client()}, server.Options{Logger: quiet}))
				resp, err := http.Post(base+"/v1/route", "application/json", strings.NewReader(`{"query":"add 2 and 3"}`))
				if err != nil {
					t.Fatal(err)
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				body := string(raw)
				switch mode {
				case router.Fail:
					if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, `"model_unavailable"`) {
						t.Errorf("got %d %s, want 502 model_unavailable", resp.StatusCode, body)
					}
				default:
					if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"degraded_reason":"model_failure"`) {
						t.Errorf("got %d %s, want 200 degraded by a model failure", resp.StatusCode, body)
					}
				}
				if !strings.Contains(body, provider.ErrResponseTooLarge.Error()) {
					t.Errorf("got %s, want the reason %q", body, provider.ErrResponseTooLarge)
				}
				if n := wait(t, model.Flooded(), 20*time.Second, "the end of the flood"); n > 32<<20 {
					t.Errorf("the model wrote %d bytes before the sidecar stopped reading, want at most %d", n, 32<<20)
				}
			})
		}
	}
}
