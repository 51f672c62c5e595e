package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/internal/fakeollama"
	"toolrouter/router"
	"toolrouter/server"
)

// TestShutdownAnswersRequestsInFlight: when the shutdown timeout runs out while the model hangs,
// a request in flight gets a final 503 shutting_down and a stream a final error event with that
// code, a request arriving meanwhile gets the same 503, and Serve returns within the timeout.
func TestShutdownAnswersRequestsInFlight(t *testing.T) {
	started := make(chan struct{}, 2)
	model := fakeollama.NewFunc(t, func(api.ChatRequest) fakeollama.Reply {
		started <- struct{}{}
		return fakeollama.Reply{Hang: true}
	})
	inv := newInventory(t)
	rt := router.New(model.Client(), inv, inv, router.Settings{Model: "fake", CallTimeout: time.Minute}, quiet)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	const timeout = 2 * time.Second
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	served := make(chan error, 1)
	go func() {
		served <- server.Serve(ctx, ln, server.Deps{Router: rt, Inventory: inv, Model: model.Client()},
			server.Options{Logger: quiet, ShutdownTimeout: timeout, StreamHeartbeat: time.Hour})
	}()

	type answer struct {
		status int
		body   string
	}
	plain := make(chan answer, 1)
	go func() {
		resp, err := http.Post(base+"/v1/route", "application/json", strings.NewReader(`{"query":"add 2 and 3"}`))
		if err != nil {
			plain <- answer{body: err.Error()}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		plain <- answer{resp.StatusCode, string(b)}
	}()
	resp, err := http.Post(base+"/v1/route/stream", "application/json", strings.NewReader(`{"query":"add 2 and 3"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := bufio.NewReader(resp.Body)
	wait(t, started, 10*time.Second, "the first model call")
	wait(t, started, 10*time.Second, "the second model call")

	stop() // SIGTERM
	begun := time.Now()
	names, data := readEvents(t, events, nil)
	if len(names) == 0 || names[len(names)-1] != "error" || !strings.Contains(data[len(data)-1], `"code":"shutting_down"`) {
		t.Errorf("stream: got events %v, last %v; want a final error event shutting_down", names, data)
	}
	got := wait(t, plain, 2*timeout, "the answer to the request in flight")
	var e struct{ Error struct{ Code string } }
	if got.status != http.StatusServiceUnavailable || json.Unmarshal([]byte(got.body), &e) != nil || e.Error.Code != "shutting_down" {
		t.Errorf("request in flight: got %d %s, want 503 shutting_down", got.status, got.body)
	}
	if err := wait(t, served, 2*timeout, "Serve's return"); err != nil {
		t.Errorf("Serve: got %v, want nil: every request had its answer", err)
	}
	if d := time.Since(begun); d > timeout+500*time.Millisecond {
		t.Errorf("shutdown took %s, want at most the timeout %s", d, timeout)
	}
}

// TestShutdownRefusesNewRequests: a request that comes in while the server shuts down (here the
// second of two pipelined on one connection) gets 503 shutting_down without running.
func TestShutdownRefusesNewRequests(t *testing.T) {
	started := make(chan struct{}, 2)
	model := fakeollama.NewFunc(t, func(api.ChatRequest) fakeollama.Reply {
		started <- struct{}{}
		return fakeollama.Reply{Hang: true}
	})
	inv := newInventory(t)
	rt := router.New(model.Client(), inv, inv, router.Settings{Model: "fake", CallTimeout: time.Minute}, quiet)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	served := make(chan error, 1)
	go func() {
		served <- server.Serve(ctx, ln, server.Deps{Router: rt, Inventory: inv, Model: model.Client()},
			server.Options{Logger: quiet, ShutdownTimeout: time.Second})
	}()
	conn := rawPost(t, "http://"+ln.Addr().String(), "/v1/route", `{"query":"add 2 and 3"}`)
	body := `{"query":"subtract 2 from 3"}`
	_, _ = io.WriteString(conn, "POST /v1/route HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "+
		strconv.Itoa(len(body))+"\r\n\r\n"+body)
	wait(t, started, 10*time.Second, "the model call")
	stop()
	r := bufio.NewReader(conn)
	for i, what := range []string{"the request in flight", "the request that came in during the shutdown"} {
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), `"shutting_down"`) {
			t.Errorf("%s (%d): got %d %s, want 503 shutting_down", what, i+1, resp.StatusCode, b)
		}
	}
	if err := wait(t, served, 5*time.Second, "Serve's return"); err != nil {
		t.Errorf("Serve: %v", err)
	}
	select {
	case <-started:
		t.Error("the request that came in during the shutdown called the model")
	default:
	}
}
