package server_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"toolrouter/internal/fakeollama"
	"toolrouter/observe"
	"toolrouter/router"
	"toolrouter/server"
)

// reports is an observer that hands each report to the test.
type reports chan observe.Report

func (r reports) Observe(_ context.Context, rep *observe.Report) { r <- *rep }

func (r reports) next(t *testing.T) observe.Report {
	t.Helper()
	select {
	case rep := <-r:
		return rep
	case <-time.After(5 * time.Second):
		t.Fatal("no report within 5 s")
		return observe.Report{}
	}
}

// TestObserverSeesEachRequest: every request, streamed or not, failed or not, reaches the observer
// exactly once, with its route, status, identity, routing and trace context.
func TestObserverSeesEachRequest(t *testing.T) {
	const selectAdd = `{"reasoning":"r","use_tool":true,"calls":[{"tool":"calculator.add","task":"add"}],"needs_more":false,"direct":true}`
	model := fakeollama.New(t,
		fakeollama.Reply{Content: selectAdd}, fakeollama.Reply{Content: `{"a":2,"b":3}`},
		fakeollama.Reply{Content: selectAdd}, fakeollama.Reply{Content: `{"a":2,"b":3}`})
	inv := newInventory(t)
	rt := router.New(model.Client(), inv, inv, router.Settings{Model: "fake", CallTimeout: 10 * time.Second}, quiet)
	got := make(reports, 8)
	app := server.New(server.Deps{Router: rt, Inventory: inv, Model: model.Client(), Observer: got},
		server.Options{Model: "fake", ModelHost: model.URL, Logger: quiet})
	base := listen(t, app)
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

	post := func(path, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("traceparent", parent)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	resp := post("/v1/route", `{"query":"2+3?"}`)
	resp.Body.Close()
	rep := got.next(t)
	if rep.Endpoint != "/v1/route" || rep.Status != http.StatusOK || rep.ErrorCode != "" || !rep.Authenticated {
		t.Errorf("route report: got endpoint %q status %d code %q authenticated %v, want /v1/route 200 \"\" true",
			rep.Endpoint, rep.Status, rep.ErrorCode, rep.Authenticated)
	}
	if rep.Outcome == nil || len(rep.Outcome.Calls) != 1 || rep.Outcome.Calls[0].Tool != "add" {
		t.Errorf("route report: got outcome %+v, want the call of calculator.add", rep.Outcome)
	}
	if rep.Header == nil || rep.Header("traceparent") != parent {
		t.Errorf("route report: traceparent not kept")
	}
	if rep.Duration <= 0 || rep.Start.IsZero() {
		t.Errorf("route report: got start %v duration %v, want both set", rep.Start, rep.Duration)
	}

	resp = post("/v1/route", `{"query":""}`)
	resp.Body.Close()
	rep = got.next(t)
	if rep.Status != http.StatusBadRequest || rep.ErrorCode != "empty_query" || rep.Outcome != nil {
		t.Errorf("bad request report: got status %d code %q outcome %v, want 400 empty_query nil", rep.Status, rep.ErrorCode, rep.Outcome)
	}

	resp = post("/v1/route/stream", `{"query":"2+3?"}`)
	names, _ := readEvents(t, bufio.NewReader(resp.Body), nil)
	resp.Body.Close()
	if len(names) == 0 || names[len(names)-1] != "complete" {
		t.Fatalf("stream: got events %v, want them to end with complete", names)
	}
	rep = got.next(t)
	if rep.Endpoint != "/v1/route/stream" || rep.Status != http.StatusOK || rep.Outcome == nil || len(rep.Outcome.Calls) != 1 {
		t.Errorf("stream report: got endpoint %q status %d outcome %+v, want /v1/route/stream 200 with one call", rep.Endpoint, rep.Status, rep.Outcome)
	}
	resp = post("/nowhere", `{}`)
	resp.Body.Close()
	if rep = got.next(t); rep.Endpoint != "other" || rep.Status != http.StatusNotFound {
		t.Errorf("unmatched path: got endpoint %q status %d, want other 404", rep.Endpoint, rep.Status)
	}
	select {
	case extra := <-got:
		t.Errorf("got an extra report %+v; want one per request", extra)
	default:
	}
}
