//go:build realollama

package realollama_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/router"
)

// reload unloads model and loads it again with num_ctx, so the next call finds the model warm and
// its prompt cache empty. It polls /api/ps for the unload (a deadline, no sleep to synchronise).
func reload(t testing.TB, o ollama, model string, numCtx int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := o.client()
	stream := false
	zero := &api.Duration{Duration: 0}
	if err := c.Generate(ctx, &api.GenerateRequest{Model: model, KeepAlive: zero, Stream: &stream}, func(api.GenerateResponse) error { return nil }); err != nil {
		t.Fatalf("unloading %s: %v", model, err)
	}
	for {
		ps, err := c.ListRunning(ctx)
		if err != nil {
			t.Fatalf("listing running models: %v", err)
		}
		loaded := false
		for _, m := range ps.Models {
			loaded = loaded || m.Name == model || m.Name == model+":latest"
		}
		if !loaded {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s still loaded after the deadline", model)
		case <-time.After(50 * time.Millisecond):
		}
	}
	err := c.Chat(ctx, &api.ChatRequest{Model: model, Stream: &stream, Options: map[string]any{"num_ctx": numCtx}},
		func(api.ChatResponse) error { return nil })
	if err != nil {
		t.Fatalf("loading %s: %v", model, err)
	}
}

// phase1 returns the phase-1 calls among xs (those whose format is the selection schema).
func phase1(xs []*exchange) []*exchange {
	var out []*exchange
	for _, x := range xs {
		// Phase 1's format is the selection schema; phase 2 may open with the same system prompt.
		if len(x.req.Messages) > 0 && x.req.Messages[0].Role == "system" && bytes.Contains(x.req.Format, []byte(`"use_tool"`)) {
			out = append(out, x)
		}
	}
	return out
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// TestPrefixCache: two queries over the same inventory share phase 1's system prompt, so the
// server evaluates only the second query's own tokens: prompt_eval_cached_count covers all but a
// few of them. Phase 2 runs between the two phase-1 calls, with its own prompt or (with
// router.shared_prefix) one opening with phase 1's system prompt. Ollama 0.17.4's engine, with
// one slot, lost phase 1's prefix to phase 2's own prompt; llama-server keeps it, whatever the
// slots (OLLAMA_NUM_PARALLEL) and either way, which this asserts.
func TestPrefixCache(t *testing.T) {
	o := realOllama(t)
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared_prefix=%v", shared), func(t *testing.T) {
			rec := newRecorder(t, o)
			rt := newRouter(t, o, rec, newInventory(t, nil), router.Settings{MaxToolCalls: 1, SharedPrefix: shared})
			reload(t, o, o.model, 8192)
			for _, q := range []string{"what is 2 plus 40?", "what time is it in Tokyo?"} {
				if _, err := rt.Route(context.Background(), router.Request{Query: q}); err != nil {
					t.Fatalf("Route(%q): %v", q, err)
				}
			}
			xs := rec.since(0)
			checkWire(t, xs, false)
			p1 := phase1(xs)
			if len(p1) != 2 || p1[0].final == nil || p1[1].final == nil {
				t.Fatalf("got %d phase-1 calls with answers, want 2", len(p1))
			}
			first, second := p1[0].final.Metrics, p1[1].final.Metrics
			if second.PromptEvalCachedCount == nil {
				t.Fatal("no prompt_eval_cached_count in the second answer")
			}
			uncached := second.PromptEvalCount - *second.PromptEvalCachedCount
			t.Logf("OLLAMA_NUM_PARALLEL=%q shared_prefix=%v: phase-1 prefill, first query %s (%d tokens), second query %s (%d tokens, %d not from the cache)",
				os.Getenv("OLLAMA_NUM_PARALLEL"), shared, ms(first.PromptEvalDuration), first.PromptEvalCount,
				ms(second.PromptEvalDuration), second.PromptEvalCount, uncached)
			if first.PromptEvalCount < 500 {
				t.Fatalf("got a first prompt of %d tokens, want the inventory's (500+)", first.PromptEvalCount)
			}
			// Cached, the second query evaluates its own few dozen tokens of about 1,500.
			if uncached*10 > second.PromptEvalCount {
				t.Errorf("got %d of the second query's %d prompt tokens not from the cache, want under a tenth (the system prompt cached)",
					uncached, second.PromptEvalCount)
			}
		})
	}
}

// TestRoundsExtendThePrefix: a route of four rounds (the json variant always asks for more) sends
// each round's phase 1 the earlier answers byte for byte as generated, so from round 2 on the
// server serves most of the prompt from its cache: the prompt tokens it did not serve
// (prompt_eval_count − prompt_eval_cached_count) stay at or under a quarter of each phase-1 prompt.
// The router reports the same count in each select step (uncached_prompt_tokens).
func TestRoundsExtendThePrefix(t *testing.T) {
	o := realOllama(t)
	rec := newRecorder(t, o)
	rt := newRouter(t, o, rec, newInventory(t, nil), router.Settings{})
	out, err := rt.Route(context.Background(), router.Request{Query: "what is 2 plus 40?"})
	if err != nil {
		t.Fatal(err)
	}
	p1 := phase1(rec.since(0))
	if len(p1) < 2 || out.Rounds < 2 {
		t.Fatalf("got %d phase-1 calls over %d rounds, want several rounds", len(p1), out.Rounds)
	}
	var steps []router.Step
	for _, s := range out.Trace {
		if s.Kind == router.StepSelect {
			steps = append(steps, s)
		}
	}
	for i, x := range p1 {
		if x.final == nil || x.final.PromptEvalCachedCount == nil {
			t.Fatalf("round %d: no prompt_eval_cached_count in the answer", i+1)
		}
		m := x.final.Metrics
		uncached := m.PromptEvalCount - *m.PromptEvalCachedCount
		t.Logf("round %d: prompt %d tokens, %d not from the cache (%.1f%%)", i+1, m.PromptEvalCount, uncached, 100*float64(uncached)/float64(m.PromptEvalCount))
		if i < len(steps) && (steps[i].Breakdown == nil || steps[i].UncachedTokens != uncached) {
			t.Errorf("round %d: select step %+v, want uncached_prompt_tokens %d", i+1, steps[i].Breakdown, uncached)
		}
		if i > 0 && uncached*4 > m.PromptEvalCount {
			t.Errorf("round %d: %d of %d prompt tokens not from the cache, want at most a quarter", i+1, uncached, m.PromptEvalCount)
		}
	}
}
