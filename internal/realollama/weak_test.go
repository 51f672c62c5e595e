//go:build realollama

package realollama_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"toolrouter/internal/bfcltools"
	"toolrouter/retrieve"
	"toolrouter/router"
)

// TestWeakShortlist: a question in Chinese beside 2,000 tools described in English gets a weak
// shortlist, and the real server's grammar holds phase 1 to its rule: a tool, or non-empty search
// words, never "no tool" without a search. Answered as one object and value by value.
func TestWeakShortlist(t *testing.T) {
	o := realOllama(t)
	big, _ := bfcltools.Server(t, 2000)
	inv := newInventory(t, map[string]*server.MCPServer{"big": big})
	for _, prefill := range []bool{false, true} {
		t.Run(map[bool]string{false: "one object", true: "value by value"}[prefill], func(t *testing.T) {
			ret, err := retrieve.NewRetriever(retrieve.NewIndex(), nil, retrieve.DenseOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rec := newRecorder(t, o)
			rt := newRouter(t, o, rec, inv, router.Settings{Ranker: retrieve.NewCatalog(ret, nil, quiet), MaxSearches: 1,
				SearchWhenWeak: true, Prefill: prefill, MaxToolCalls: 2})
			out, err := rt.Route(context.Background(), router.Request{Query: "求一个底为10、高为5的三角形的面积"})
			if err != nil {
				t.Fatalf("Route: %v", err)
			}
			xs := rec.since(0)
			checkWire(t, xs, false)
			t.Logf("stopped=%s degraded=%q searches=%d use_tool=%v llm_calls=%d", out.Stopped, out.Degraded, out.Searches, out.UseTool, out.Usage.LLMCalls)
			if len(out.Shortlists) == 0 || !out.Shortlists[0].Weak {
				t.Fatalf("shortlists %+v: want the first weak", out.Shortlists)
			}
			if !hasStep(out, router.StepWeakShortlist) {
				t.Errorf("no weak_shortlist step in the trace")
			}
			if out.Degraded != "" {
				t.Fatalf("degraded %q", out.Degraded)
			}
			var first *router.Step
			for i := range out.Trace {
				if out.Trace[i].Kind == router.StepSelect {
					first = &out.Trace[i]
					break
				}
			}
			if first == nil {
				t.Fatal("no selection step")
			}
			// The first selection chose a tool or searched: its detail is the summary of its answer.
			if first.Detail == "no tool" {
				t.Errorf("the first selection answered no tool without searching: %+v", first)
			}
			if !prefill && !strings.Contains(string(xs[0].req.Format), `"required":["use_tool","calls","needs_more","direct","search"]`) {
				t.Errorf("the first selection's format does not require search words: %s", xs[0].req.Format)
			}
			if out.Searches == 0 && len(out.Calls) == 0 {
				t.Errorf("neither a search nor a call: %+v", out.Trace)
			}
		})
	}
}

func hasStep(out *router.Outcome, kind router.StepKind) bool {
	for _, s := range out.Trace {
		if s.Kind == kind {
			return true
		}
	}
	return false
}
