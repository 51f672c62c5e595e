//go:build realollama

package realollama_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"toolrouter/config"
	"toolrouter/internal/bfcltools"
	"toolrouter/inventory"
	"toolrouter/retrieve"
	"toolrouter/router"
)

// TestMeasure prints the figures docs/real-ollama.md quotes. It is slow and asserts nothing beyond
// the wire checks, so it runs only with REAL_OLLAMA_MEASURE=1:
//
//	eval "$(scripts/real-ollama up)"
//	REAL_OLLAMA_MEASURE=1 go test -tags realollama -run TestMeasure -v -timeout 60m ./internal/realollama/
//
// REAL_OLLAMA_MEASURE_NUM_CTX (default 8192) is the num_ctx of the inventory-size runs.
func TestMeasure(t *testing.T) {
	if os.Getenv("REAL_OLLAMA_MEASURE") != "1" {
		t.Skip("set REAL_OLLAMA_MEASURE=1 to measure")
	}
	o := realOllama(t)
	t.Run("calls per query and prefill by round", func(t *testing.T) { measureRounds(t, o) })
	numCtx := 8192
	if s := os.Getenv("REAL_OLLAMA_MEASURE_NUM_CTX"); s != "" {
		numCtx, _ = strconv.Atoi(s)
	}
	for _, n := range []int{10, 200, 2000} {
		for _, shortlist := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d tools shortlist=%v", n, shortlist), func(t *testing.T) { measureInventory(t, o, n, shortlist, numCtx) })
		}
	}
}

// measureRounds: a warm model with an empty prompt cache routes one query with the default budget
// of 4 calls (the json variant always asks for more, so the route runs 4 rounds), then a second
// query; each call's prefill and wall time.
func measureRounds(t *testing.T, o ollama) {
	rec := newRecorder(t, o)
	rt := newRouter(t, o, rec, newInventory(t, nil), router.Settings{})
	reload(t, o, o.model, 8192)
	for i, q := range []string{"what is 2 plus 40?", "what time is it in Tokyo?"} {
		n := rec.mark()
		start := time.Now()
		out, err := rt.Route(context.Background(), router.Request{Query: q})
		if err != nil {
			t.Fatal(err)
		}
		xs := rec.since(n)
		checkWire(t, xs, false)
		t.Logf("query %d: %d model calls (%d rounds, %d tool calls, stopped %s) in %s", i+1, len(xs), out.Rounds, len(out.Calls), out.Stopped, ms(time.Since(start)))
		logCalls(t, xs)
	}
}

func logCalls(t *testing.T, xs []*exchange) {
	t.Helper()
	round := 0
	for _, x := range xs {
		kind := "phase 2"
		if bytes.Contains(x.req.Format, []byte(`"use_tool"`)) { // the selection schema
			round++
			kind = fmt.Sprintf("phase 1, round %d", round)
		}
		if x.final == nil {
			t.Logf("  %-17s status %d, no done line", kind, x.status)
			continue
		}
		m := x.final.Metrics
		t.Logf("  %-17s prompt %5d tokens, prefill %9s, %3d tokens out in %9s, wall %9s", kind, m.PromptEvalCount,
			ms(m.PromptEvalDuration), m.EvalCount, ms(m.EvalDuration), ms(x.wall))
	}
}

// measureInventory routes the BFCL question over n BFCL tools, with the BM25 shortlist or without
// it, and logs each call's real prompt tokens.
func measureInventory(t *testing.T, o ollama, n int, shortlist bool, numCtx int) {
	big, fns := bfcltools.Server(t, n)
	question := fns[0].Question
	inv := inventory.New(map[string]config.Server{"big": builtin("big")},
		inventory.Options{Logger: quiet, InProcess: map[string]*server.MCPServer{"big": big}})
	inv.Start(context.Background())
	t.Cleanup(inv.Close)
	if got := len(inv.Snapshot().Available()); got != n {
		t.Fatalf("got %d tools, want %d", got, n)
	}
	set := router.Settings{MaxToolCalls: 1, Options: map[string]any{"temperature": 0, "seed": 42, "num_ctx": numCtx}}
	if shortlist {
		ret, err := retrieve.NewRetriever(retrieve.NewIndex(), nil, retrieve.DenseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		set.Ranker = retrieve.NewCatalog(ret, nil, quiet)
	}
	rec := newRecorder(t, o)
	rt := newRouter(t, o, rec, inv, set)
	start := time.Now()
	out, err := rt.Route(context.Background(), router.Request{Query: question})
	if err != nil {
		t.Fatal(err)
	}
	xs := rec.since(0)
	shown := n
	if len(out.Shortlists) > 0 {
		shown = len(out.Shortlists[0].Tools)
	}
	t.Logf("%d tools, shortlist=%v, num_ctx %d: %d tools shown, %d model calls, stopped %s, degraded %q, %s",
		n, shortlist, numCtx, shown, len(xs), out.Stopped, out.Degraded, ms(time.Since(start)))
	for _, s := range out.Trace {
		if s.EstimatedTokens > 0 {
			t.Logf("  trace %-10s estimated %6d tokens, counted %6d", s.Kind, s.EstimatedTokens, s.PromptTokens)
		}
	}
	if len(xs) > 0 {
		checkWire(t, xs, false)
	}
	logCalls(t, xs)
}
