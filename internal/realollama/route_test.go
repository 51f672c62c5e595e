//go:build realollama

package realollama_test

import (
	"context"
	"strings"
	"testing"

	"toolrouter/router"
)

// TestRoute routes one query on the real server in two-phase mode: with the json variant the
// success path (the favoured tool chosen, arguments valid under its schema, the tool run); with the
// wholly random model, whose strings never close, answers cut at num_predict and a clean degraded
// reason. Either way every call is a 2xx with think, truncate and shift off and a num_ctx.
func TestRoute(t *testing.T) {
	o := realOllama(t)
	tests := []struct {
		name    string
		set     router.Settings
		wantOK  bool // the favoured tool ran
		wantCut bool // phase 1 stopped at num_predict
	}{
		{name: "json variant runs the favoured tool", set: router.Settings{MaxToolCalls: 1}, wantOK: true},
		{name: "random model degrades cleanly", wantCut: true,
			set: router.Settings{Model: o.tiny, Options: map[string]any{"num_predict": 24, "temperature": 0, "num_ctx": 8192}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(t, o)
			rt := newRouter(t, o, rec, newInventory(t, nil), tc.set)
			out, err := rt.Route(context.Background(), router.Request{Query: "what is 2 plus 40?"})
			if err != nil {
				t.Fatalf("Route: %v", err)
			}
			xs := rec.since(0)
			checkWire(t, xs, false)
			cut := checkFormatted(t, xs)
			t.Logf("stopped=%s degraded=%q calls=%d llm_calls=%d prompt_tokens=%d", out.Stopped, out.Degraded, len(out.Calls), out.Usage.LLMCalls, out.Usage.PromptTokens)
			if got := out.Usage.LLMCalls; got != len(xs) {
				t.Errorf("got usage.llm_calls %d, want the %d calls seen on the wire", got, len(xs))
			}
			if tc.wantOK {
				if !out.UseTool || out.Server+"."+out.Tool != o.favoured || out.Result == nil || out.Result.IsError || out.Error != nil {
					t.Fatalf("got use_tool=%v %s.%s result=%+v error=%+v degraded=%q, want %s run", out.UseTool, out.Server, out.Tool, out.Result, out.Error, out.Degraded, o.favoured)
				}
				if out.Degraded != "" || cut != 0 {
					t.Errorf("got degraded %q and %d cut answers, want neither", out.Degraded, cut)
				}
				return
			}
			if tc.wantCut {
				if cut == 0 {
					t.Fatalf("got no answer cut at num_predict, want phase 1 cut (its strings never close)")
				}
				if out.DegradedReason != router.DegradedModelFailure || !strings.Contains(out.Degraded, "not the selection JSON") {
					t.Errorf("got degraded %q (%s), want a model failure: not the selection JSON", out.Degraded, out.DegradedReason)
				}
				if out.UseTool || len(out.Calls) != 0 {
					t.Errorf("got use_tool=%v with %d calls, want no tool", out.UseTool, len(out.Calls))
				}
			}
		})
	}
}

// TestThink: with thinking on, the request carries think:true; the model (the json variant's one
// learned chain) thinks "Okay", Ollama then applies the format, and the answer is valid JSON.
func TestThink(t *testing.T) {
	o := realOllama(t)
	rec := newRecorder(t, o)
	rt := newRouter(t, o, rec, newInventory(t, nil), router.Settings{Think: true, MaxToolCalls: 1})
	out, err := rt.Route(context.Background(), router.Request{Query: "what is 2 plus 40?"})
	if err != nil {
		t.Fatalf("Route: %v", err)
	}
	xs := rec.since(0)
	checkWire(t, xs, true)
	if cut := checkFormatted(t, xs); cut != 0 {
		t.Errorf("got %d answers cut at num_predict, want none", cut)
	}
	t.Logf("phase 1: thinking %q, answer %s", xs[0].thinking(), xs[0].content())
	if got := xs[0].thinking(); got != "Okay" {
		t.Errorf("got phase-1 thinking %q, want %q", got, "Okay")
	}
	if !out.UseTool || out.Result == nil || out.Degraded != "" {
		t.Errorf("got use_tool=%v result=%+v degraded=%q, want the favoured tool run", out.UseTool, out.Result, out.Degraded)
	}
}

// TestNative: native mode sends the tools with the request and no format; the random model writes
// no tool call, so the route ends with no tool, cleanly.
func TestNative(t *testing.T) {
	o := realOllama(t)
	rec := newRecorder(t, o)
	rt := newRouter(t, o, rec, newInventory(t, nil), router.Settings{Mode: router.Native})
	out, err := rt.Route(context.Background(), router.Request{Query: "what is 2 plus 40?"})
	if err != nil {
		t.Fatalf("Route: %v", err)
	}
	xs := rec.since(0)
	checkWire(t, xs, false)
	for i, x := range xs {
		if len(x.req.Tools) == 0 || len(x.req.Format) != 0 {
			t.Errorf("call %d: got %d tools and format %s, want the tools and no format", i+1, len(x.req.Tools), x.req.Format)
		}
	}
	t.Logf("stopped=%s degraded=%q calls=%d content=%q", out.Stopped, out.Degraded, len(out.Calls), xs[0].content())
	if out.Degraded != "" && out.DegradedReason == "" {
		t.Errorf("got degraded %q without a reason, want a classified one", out.Degraded)
	}
	if out.Stopped != router.StopNoTool && out.Stopped != router.StopDone {
		t.Errorf("got stopped %s, want no_tool or done", out.Stopped)
	}
}

// TestConfidence: phase 1 asks for logprobs, the real server sends them with the answer, and the
// router reads a confidence for use_tool and the chosen tool from them (values in (0, 1]; what they
// are says nothing here, the weights being random).
func TestConfidence(t *testing.T) {
	o := realOllama(t)
	rec := newRecorder(t, o)
	rt := newRouter(t, o, rec, newInventory(t, nil), router.Settings{MaxToolCalls: 1})
	out, err := rt.Route(context.Background(), router.Request{Query: "what is 2 plus 40?"})
	if err != nil {
		t.Fatal(err)
	}
	p1 := phase1(rec.since(0))
	if len(p1) == 0 || p1[0].final == nil {
		t.Fatal("no phase-1 answer recorded")
	}
	if !p1[0].req.Logprobs || p1[0].req.TopLogprobs < 1 {
		t.Errorf("phase 1 sent logprobs=%v top_logprobs=%d, want both", p1[0].req.Logprobs, p1[0].req.TopLogprobs)
	}
	n := 0
	for _, l := range p1[0].lines {
		n += len(l.Logprobs)
	}
	if n == 0 {
		t.Fatal("the server sent no logprobs")
	}
	c := out.Confidence
	if c == nil || c.UseTool == nil || c.Tool == nil {
		t.Fatalf("got confidence %+v from %d logprobs, want use_tool and tool", c, n)
	}
	for what, v := range map[string]float64{"use_tool": *c.UseTool, "tool": *c.Tool} {
		if !(v > 0 && v <= 1) {
			t.Errorf("%s confidence %v, want in (0, 1]", what, v)
		}
	}
	t.Logf("%d logprobs; confidence use_tool %.3f, tool %.3f (%s)", n, *c.UseTool, *c.Tool, out.Tool)
}

// TestReasoning: each router.reasoning setting's phase-1 format is accepted by the real server and
// its answer validates under it; with "none" the answer carries no reasoning and opens with the
// decision, and each setting writes no more tokens than the next (none ≤ brief ≤ full).
func TestReasoning(t *testing.T) {
	o := realOllama(t)
	inv := newInventory(t, nil)
	decode := map[router.Reasoning]int{}
	for _, r := range []router.Reasoning{router.ReasoningNone, router.ReasoningBrief, router.ReasoningFull} {
		rec := newRecorder(t, o)
		rt := newRouter(t, o, rec, inv, router.Settings{MaxToolCalls: 1, Reasoning: r})
		out, err := rt.Route(context.Background(), router.Request{Query: "what is 2 plus 40?"})
		if err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		xs := rec.since(0)
		checkWire(t, xs, false)
		if cut := checkFormatted(t, xs); cut > 0 {
			t.Errorf("%s: %d answers cut at num_predict", r, cut)
		}
		p1 := phase1(xs)
		if len(p1) == 0 || p1[0].final == nil {
			t.Fatalf("%s: no phase-1 answer", r)
		}
		answer := p1[0].content()
		hasReasoning := strings.Contains(answer, `"reasoning"`)
		if hasReasoning != (r != router.ReasoningNone) {
			t.Errorf("%s: answer %s has reasoning: %v", r, answer, hasReasoning)
		}
		if r == router.ReasoningNone && !strings.HasPrefix(answer, `{"use_tool"`) {
			t.Errorf("none: answer %s does not open with the decision", answer)
		}
		if out.Tool == "" {
			t.Errorf("%s: no tool chosen (degraded %q)", r, out.Degraded)
		}
		decode[r] = p1[0].final.EvalCount
		t.Logf("%s: %d decode tokens: %s", r, decode[r], answer)
	}
	if !(decode[router.ReasoningNone] <= decode[router.ReasoningBrief] && decode[router.ReasoningBrief] <= decode[router.ReasoningFull]) {
		t.Errorf("got decode tokens %v, want none ≤ brief ≤ full", decode)
	}
}
