package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"toolrouter/internal/fakeollama"
	"toolrouter/router"
	"toolrouter/server"
)

// readEvents reads SSE events (name and data) until the stream ends or stop returns true.
func readEvents(t *testing.T, r *bufio.Reader, stop func(name string) bool) (names []string, data []string) {
	t.Helper()
	var name string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return names, data
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			names = append(names, name)
			data = append(data, strings.TrimPrefix(line, "data: "))
			if stop != nil && stop(name) {
				return names, data
			}
		}
	}
}

func TestRouteStreamEventOrder(t *testing.T) {
	model := fakeollama.New(t,
		fakeollama.Reply{Content: `{"reasoning":"r","use_tool":true,"calls":[{"tool":"calculator.add","task":"add"}],"needs_more":false,"direct":true}`},
		fakeollama.Reply{Content: `{"a":2,"b":3}`})
	e := newEnv(t, model, router.Settings{}, server.Options{})
	base := listen(t, e.app)
	resp, err := http.Post(base+"/v1/route/stream", "application/json", strings.NewReader(`{"query":"2+3?"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("got content type %q, want text/event-stream", ct)
	}
	names, data := readEvents(t, bufio.NewReader(resp.Body), nil)
	want := "select_start,select_complete,tool_call_start,tool_call_complete,tool_result,complete"
	if got := strings.Join(names, ","); got != want {
		t.Fatalf("got events %s, want %s", got, want)
	}
	var out router.Outcome
	if err := json.Unmarshal([]byte(data[len(data)-1]), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Calls) != 1 || out.Calls[0].Result == nil || out.Calls[0].Result.Text != "5" || len(out.Trace) == 0 {
		t.Errorf("complete event carries %+v, want the outcome with its call and trace", out)
	}
	var ev router.Event
	_ = json.Unmarshal([]byte(data[4]), &ev)
	if ev.Call == nil || ev.Call.Result == nil || ev.Call.Result.Text != "5" {
		t.Errorf("tool_result event = %s, want the call's result", data[4])
	}
}

// TestRouteStreamStopsOnDisconnect: when the client goes away, the model call in flight is
// cancelled (the fake model sees its request aborted).
func TestRouteStreamStopsOnDisconnect(t *testing.T) {
	model, started, _ := hangingModel(t)
	e := newEnv(t, model, router.Settings{}, server.Options{StreamHeartbeat: 20 * time.Millisecond})
	base := listen(t, e.app)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/route/stream", bytes.NewReader([]byte(`{"query":"q"}`)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	names, _ := readEvents(t, bufio.NewReader(resp.Body), func(name string) bool { return name == "select_start" })
	if len(names) != 1 {
		t.Fatalf("got events %v, want select_start first", names)
	}
	wait(t, started, 10*time.Second, "the model call")
	cancel() // the client leaves while the model is thinking
	resp.Body.Close()
	select {
	case <-model.Aborted():
	case <-time.After(10 * time.Second):
		t.Fatal("the model call was not cancelled within 10s of the client leaving")
	}
}

func TestRouteStreamBadRequestIsJSON(t *testing.T) {
	model := fakeollama.New(t)
	e := newEnv(t, model, router.Settings{}, server.Options{})
	status, raw, _ := do(t, e.app, http.MethodPost, "/v1/route/stream", []byte(`{"query":""}`))
	if code, _ := errorBody(t, raw); status != http.StatusBadRequest || code != "empty_query" {
		t.Errorf("got %d %s, want 400 empty_query", status, raw)
	}
}

func TestRouteRequestLimits(t *testing.T) {
	model := fakeollama.New(t,
		fakeollama.Reply{Content: `{"reasoning":"r","use_tool":true,"calls":[{"tool":"calculator.add","task":"a"},{"tool":"calculator.multiply","task":"m"}],"needs_more":false,"direct":false}`},
		fakeollama.Reply{Content: `{"a":2,"b":3}`})
	e := newEnv(t, model, router.Settings{MaxToolCalls: 4}, server.Options{})
	status, raw, _ := do(t, e.app, http.MethodPost, "/v1/route", []byte(`{"query":"q","max_tool_calls":1,"deadline_ms":5000}`))
	var out router.Outcome
	if err := json.Unmarshal(raw, &out); err != nil || status != http.StatusOK {
		t.Fatalf("got %d %s", status, raw)
	}
	if len(out.Calls) != 1 || out.Stopped != router.StopMaxToolCalls {
		t.Errorf("got %d calls stopped %q, want 1 and max_tool_calls", len(out.Calls), out.Stopped)
	}
	for _, body := range []string{`{"query":"q","max_tool_calls":0}`, `{"query":"q","deadline_ms":-5}`, `{"query":"q","max_tool_calls":"two"}`} {
		if status, raw, _ := do(t, e.app, http.MethodPost, "/v1/route", []byte(body)); status != http.StatusBadRequest {
			t.Errorf("%s: got %d %s, want 400", body, status, raw)
		}
	}
}

// TestStreamPanicIsAnErrorEvent: a panic while streaming (outside the handler, where the recover
// middleware cannot reach) becomes an error event, and the process keeps serving.
func TestStreamPanicIsAnErrorEvent(t *testing.T) {
	rt := routerFunc(func(_ context.Context, req router.Request) (*router.Outcome, error) {
		if req.Query == "panic" {
			panic("router exploded")
		}
		return &router.Outcome{Reasoning: "still here"}, nil
	})
	base := listen(t, server.New(server.Deps{Router: rt}, server.Options{Logger: quiet}))
	for _, q := range []string{"panic", "fine"} {
		resp, err := http.Post(base+"/v1/route/stream", "application/json", strings.NewReader(`{"query":"`+q+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		names, data := readEvents(t, bufio.NewReader(resp.Body), nil)
		resp.Body.Close()
		want := "complete"
		if q == "panic" {
			want = "error"
		}
		if len(names) != 1 || names[0] != want {
			t.Fatalf("%s: got events %v %v, want %s", q, names, data, want)
		}
		if q == "panic" && !strings.Contains(data[0], `"code":"internal"`) {
			t.Errorf("got %s, want an internal error", data[0])
		}
	}
}
