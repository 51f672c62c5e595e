//go:build realollama

package realollama_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"toolrouter/router"
)

// TestPrefill routes the same query with router.prefill on and off on the real server. With it
// on, the router learns the template's lead (the thinking template's empty think block) by
// rendering, every continuation starts with it and ends with the answer so far, the server answers
// each with the next value only, and the route selects as the whole-object route does, with
// fewer decoded tokens in phase 1.
func TestPrefill(t *testing.T) {
	o := realOllama(t)
	type result struct {
		out       *router.Outcome
		conts     []*exchange
		renders   int
		selectTok int
	}
	routeWith := func(prefill bool) result {
		rec := newRecorder(t, o)
		rt := newRouter(t, o, rec, newInventory(t, nil), router.Settings{MaxToolCalls: 1, Prefill: prefill, Renders: true})
		out, err := rt.Route(context.Background(), router.Request{Query: "what is 2 plus 40?"})
		if err != nil {
			t.Fatalf("Route (prefill %v): %v", prefill, err)
		}
		var r result
		r.out = out
		var calls []*exchange
		for _, x := range rec.since(0) {
			if string(x.raw["_debug_render_only"]) == "true" {
				r.renders++
				continue
			}
			calls = append(calls, x)
			if m := x.req.Messages; m[len(m)-1].Role == "assistant" {
				r.conts = append(r.conts, x)
			}
		}
		checkWire(t, calls, false)
		for _, s := range out.Trace {
			if s.Kind == router.StepSelect && s.Round == 1 {
				r.selectTok = s.CompletionTokens
			}
		}
		return r
	}
	on, off := routeWith(true), routeWith(false)
	t.Logf("round-1 phase 1 decoded %d tokens with prefill, %d without; %d continuations", on.selectTok, off.selectTok, len(on.conts))

	if on.renders != 3 || off.renders != 0 {
		t.Errorf("got %d and %d template renders, want 3 with prefill (the lead probe) and none without", on.renders, off.renders)
	}
	if len(on.conts) < 4 || len(off.conts) != 0 {
		t.Fatalf("got %d and %d continuations, want at least 4 with prefill and none without", len(on.conts), len(off.conts))
	}
	const lead = "<think>\n\n</think>\n\n" // the chatml-think template's block with think off
	for i, x := range on.conts {
		m := x.req.Messages
		text := m[len(m)-1].Content
		if !strings.HasPrefix(text, lead+"{") || !strings.HasSuffix(text, ":") {
			t.Errorf("continuation %d continues %q, want the lead, then the answer so far up to a key", i+1, text)
		}
		got := strings.TrimSpace(x.content())
		if x.final != nil && x.final.DoneReason == "length" {
			if !strings.HasPrefix("true", got) && !strings.HasPrefix("false", got) || got == "" {
				t.Errorf("continuation %d was cut at %q, want a boolean's first token", i+1, got)
			}
			continue
		}
		if err := validJSON(x.req.Format, got); err != nil && !json.Valid([]byte(got+"]")) {
			t.Errorf("continuation %d answered %q, not a value under %s: %v", i+1, got, x.req.Format, err)
		}
	}
	// The selection is the same. The arguments' values may differ with random weights: without
	// prefill this model spells the object's keys a character a token, with it the prompt holds
	// the tokenizer's merges of the same text, and random weights answer a different context with
	// other digits. Both must be valid and run.
	if tools(on.out) != tools(off.out) {
		t.Errorf("prefill changed the selection: %s, without it %s", tools(on.out), tools(off.out))
	}
	for _, o := range []*router.Outcome{on.out, off.out} {
		for _, c := range o.Calls {
			if c.Error != nil || c.Result == nil {
				t.Errorf("call %s.%s %v: got error %+v, want it run", c.Server, c.Tool, c.Arguments, c.Error)
			}
		}
	}
	t.Logf("arguments with prefill: %s; without: %s", decision(on.out), decision(off.out))
	if on.selectTok >= off.selectTok || on.selectTok > 10 {
		t.Errorf("round-1 phase 1 decoded %d tokens with prefill, %d without: want at most 10 and fewer", on.selectTok, off.selectTok)
	}
}

// tools are the tools a route called, in order.
func tools(o *router.Outcome) string {
	var names []string
	for _, c := range o.Calls {
		names = append(names, c.Server+"."+c.Tool)
	}
	return strings.Join(names, ", ")
}

// decision is what a route decided: its calls and their arguments.
func decision(o *router.Outcome) string {
	var b strings.Builder
	for _, c := range o.Calls {
		a, _ := json.Marshal(c.Arguments)
		fmt.Fprintf(&b, "%s.%s %s; ", c.Server, c.Tool, a)
	}
	return b.String()
}
