//go:build realollama

package realollama_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"toolrouter/council"
	"toolrouter/provider"
	"toolrouter/router"
	"toolrouter/server"
)

// httpAPI is toolrouter's HTTP API on a real listener: the router on the json variant, and a council
// of two members and a chairman on the wholly random model, all through rec.
type httpAPI struct {
	base string
	rec  *recorder
}

func newAPI(t *testing.T, o ollama) *httpAPI {
	t.Helper()
	rec := newRecorder(t, o)
	inv := newInventory(t, nil)
	rt := newRouter(t, o, rec, inv, router.Settings{MaxToolCalls: 1})
	// Random text ends only at num_predict: keep it short.
	member := func(name string, seed int) council.Member {
		return council.Member{Name: name, Timeout: 2 * time.Minute, Model: provider.ChatModel{Client: rec.chatter(), Model: o.tiny,
			Options: map[string]any{"num_predict": 16, "temperature": 0.7, "seed": seed}}}
	}
	c := council.New([]council.Member{member("alpha", 1), member("beta", 2)}, member("chair", 3),
		council.Options{PeerReview: true, Quorum: 2, Logger: quiet})
	app := server.New(server.Deps{Router: rt, Inventory: inv, Model: rec.chatter(), Council: c},
		server.Options{Model: o.model, ModelHost: rec.URL().String(), Logger: quiet})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.ShutdownWithTimeout(5 * time.Second) })
	return &httpAPI{base: "http://" + ln.Addr().String(), rec: rec}
}

func (a *httpAPI) post(t *testing.T, path, body string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// events reads a Server-Sent Events stream to its end: each event's name and data.
func events(t *testing.T, resp *http.Response) (names []string, data []string) {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("got content type %q, want text/event-stream", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 4<<20)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			names = append(names, name)
			data = append(data, strings.TrimPrefix(line, "data: "))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	return names, data
}

// answerBody is the part of /v1/answer's response the tests read.
type answerBody struct {
	Final      string          `json:"final"`
	AnsweredBy string          `json:"answered_by"`
	Routing    router.Outcome  `json:"routing"`
	Council    *council.Result `json:"council"`
	Usage      struct {
		Total struct {
			LLMCalls int `json:"llm_calls"`
		} `json:"total"`
	} `json:"usage"`
}

// TestAPI drives the HTTP API on the real server: readiness, a route, both streams and an answer
// by the council. Every router call on the wire is checked as in TestRoute; council calls must
// all be 2xx answers.
func TestAPI(t *testing.T) {
	o := realOllama(t)
	a := newAPI(t, o)

	t.Run("readyz", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.base+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("got /readyz %d, want 200 (the model is on the server)", resp.StatusCode)
		}
	})

	t.Run("route", func(t *testing.T) {
		n := a.rec.mark()
		resp := a.post(t, "/v1/route", `{"query":"what is 2 plus 40?"}`)
		var out router.Outcome
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("got status %d (decode error %v), want 200 and an outcome", resp.StatusCode, err)
		}
		checkWire(t, a.rec.of(n, o.model), false)
		checkFormatted(t, a.rec.since(n))
		if !out.UseTool || out.Server+"."+out.Tool != o.favoured || out.Result == nil {
			t.Errorf("got use_tool=%v %s.%s result=%+v degraded=%q, want %s run", out.UseTool, out.Server, out.Tool, out.Result, out.Degraded, o.favoured)
		}
	})

	t.Run("route stream", func(t *testing.T) {
		n := a.rec.mark()
		names, data := events(t, a.post(t, "/v1/route/stream", `{"query":"what is 2 plus 40?"}`))
		want := []string{"select_start", "select_complete", "tool_call_start", "tool_call_complete", "tool_result", "complete"}
		for _, w := range want {
			if !slices.Contains(names, w) {
				t.Errorf("got events %v, want %s among them", names, w)
			}
		}
		if len(names) == 0 || names[len(names)-1] != "complete" {
			t.Fatalf("got events %v, want complete last", names)
		}
		var out router.Outcome
		if err := json.Unmarshal([]byte(data[len(data)-1]), &out); err != nil || out.Result == nil {
			t.Errorf("complete event %s: want the outcome with the tool's result (decode error %v)", data[len(data)-1], err)
		}
		checkWire(t, a.rec.of(n, o.model), false)
	})

	t.Run("answer by the council", func(t *testing.T) {
		n := a.rec.mark()
		resp := a.post(t, "/v1/answer", `{"query":"what is 2 plus 40?","synthesize":"always"}`)
		var body answerBody
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("got status %d (decode error %v), want 200 and an answer", resp.StatusCode, err)
		}
		checkCouncil(t, a, n, o, body)
	})

	t.Run("answer stream", func(t *testing.T) {
		n := a.rec.mark()
		names, data := events(t, a.post(t, "/v1/answer/stream", `{"query":"what is 2 plus 40?","synthesize":"always"}`))
		for _, w := range []string{"select_start", "tool_result", "stage1_start", "stage1_complete", "stage2_complete", "stage3_complete", "complete"} {
			if !slices.Contains(names, w) {
				t.Errorf("got events %v, want %s among them", names, w)
			}
		}
		if len(names) == 0 || names[len(names)-1] != "complete" {
			t.Fatalf("got events %v, want complete last", names)
		}
		var body answerBody
		if err := json.NewDecoder(bytes.NewReader([]byte(data[len(data)-1]))).Decode(&body); err != nil {
			t.Fatalf("complete event: %v", err)
		}
		checkCouncil(t, a, n, o, body)
	})
}

// checkCouncil: the routing ran the favoured tool, both members answered stage 1, the chairman (or
// the fallback) wrote a final answer, and every council call was a 2xx answer.
func checkCouncil(t *testing.T, a *httpAPI, n int, o ollama, body answerBody) {
	t.Helper()
	checkWire(t, a.rec.of(n, o.model), false)
	cs := a.rec.of(n, o.tiny)
	for i, x := range cs {
		if x.status >= 400 || x.errMsg != "" || x.final == nil {
			t.Errorf("council call %d: got status %d error %q done=%v, want a 2xx answer", i+1, x.status, x.errMsg, x.final != nil)
		}
	}
	if body.Routing.Result == nil {
		t.Errorf("got routing %+v, want the favoured tool's result", body.Routing)
	}
	if body.Council == nil || len(body.Council.Stage1) != 2 {
		t.Fatalf("got council %+v, want two stage-1 answers", body.Council)
	}
	for _, s := range body.Council.Stage1 {
		if s.Error != "" || s.Response == "" {
			t.Errorf("member %s: got error %q response %q, want an answer", s.Model, s.Error, s.Response)
		}
	}
	if body.AnsweredBy != string(council.AnsweredByCouncil) && body.AnsweredBy != string(council.AnsweredByFallback) || body.Final == "" {
		t.Errorf("got answered_by %q final %q, want the council's answer", body.AnsweredBy, body.Final)
	}
	// Members answer, review each other, and the chairman writes: 2 + 2 + 1 calls.
	if len(cs) != 5 {
		t.Errorf("got %d council calls on the wire, want 5", len(cs))
	}
	if got, want := body.Usage.Total.LLMCalls, body.Routing.Usage.LLMCalls+len(cs); got != want {
		t.Errorf("got usage.total.llm_calls %d, want routing's %d + the council's %d", got, body.Routing.Usage.LLMCalls, len(cs))
	}
	t.Logf("answered_by=%s final=%q routing calls=%d council calls=%d", body.AnsweredBy, body.Final, body.Routing.Usage.LLMCalls, len(cs))
}
