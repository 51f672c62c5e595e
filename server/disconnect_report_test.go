package server_test

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"toolrouter/router"
	"toolrouter/server"
)

// TestClientDisconnectReported: a request whose client leaves before the answer, streamed or not,
// is reported as 499 client_closed_request, so the access log, the usage records and the metrics
// count a client that left, not a deadline (plain) or a success (stream).
func TestClientDisconnectReported(t *testing.T) {
	tests := []struct {
		name, path string
		// leave cancels the request once the model call is in flight and the response has come: a
		// stream's after its first event; nil cancels a plain request at once.
		leave func(t *testing.T, resp *http.Response, cancel context.CancelFunc)
	}{
		{name: "route", path: "/v1/route"},
		{name: "answer", path: "/v1/answer"},
		{name: "route stream", path: "/v1/route/stream", leave: func(t *testing.T, resp *http.Response, cancel context.CancelFunc) {
			line, err := bufio.NewReader(resp.Body).ReadString('\n')
			if err != nil || !strings.HasPrefix(line, "event: ") {
				t.Fatalf("got first line %q, %v, want an event", line, err)
			}
			cancel()
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			model, started, _ := hangingModel(t)
			inv := newInventory(t)
			rt := router.New(model.Client(), inv, inv, router.Settings{Model: "fake", CallTimeout: time.Minute}, quiet)
			got := make(reports, 4)
			base := listen(t, server.New(server.Deps{Router: rt, Inventory: inv, Model: model.Client(), Observer: got},
				server.Options{Model: "fake", ModelHost: model.URL, Logger: quiet, StreamHeartbeat: time.Hour}))

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+tc.path, strings.NewReader(`{"query":"add 2 and 3"}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			responded := make(chan *http.Response, 1)
			failed := make(chan error, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					failed <- err
					return
				}
				responded <- resp
			}()
			wait(t, started, 10*time.Second, "the first model call")
			if tc.leave == nil {
				cancel() // the client leaves while the model is thinking
				if err := wait(t, failed, 5*time.Second, "the client's request to end"); !errors.Is(err, context.Canceled) {
					t.Fatalf("got client error %v, want context.Canceled", err)
				}
			} else {
				resp := wait(t, responded, 5*time.Second, "the stream's response")
				defer resp.Body.Close()
				tc.leave(t, resp, cancel)
			}
			wait(t, model.Aborted(), 5*time.Second, "the model call's cancellation after the client left")

			rep := got.next(t)
			if rep.Status != 499 || rep.ErrorCode != "client_closed_request" {
				t.Errorf("got status %d code %q, want 499 client_closed_request", rep.Status, rep.ErrorCode)
			}
			if out := rep.Outcome; out != nil && out.DegradedReason != "" {
				t.Errorf("got degraded reason %q, want none: the client left, nothing degraded the answer", out.DegradedReason)
			}
		})
	}
}
