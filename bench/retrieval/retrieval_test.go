package retrieval

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/ollama/ollama/api"

	"toolrouter/config"
	"toolrouter/inventory"
	"toolrouter/retrieve/retrievetest"
	"toolrouter/router"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func metaTool(t testing.TB, limit int) *Pool {
	t.Helper()
	dir := filepath.Join(retrievetest.DataDir(), "metatool")
	p, err := MetaTool(filepath.Join(dir, "plugin_des.json"), filepath.Join(dir, "all_clean_data_sample.csv"))
	if err != nil {
		t.Fatal(err)
	}
	p.Queries = p.Queries[:limit]
	return p
}

func serve(t testing.TB, p *Pool) *inventory.Manager {
	t.Helper()
	inv, err := Serve(context.Background(), p, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(inv.Close)
	return inv
}

// TestBFCLPool: every distinct BFCL function is served once, and every simple and multiple query's
// gold tool is one of them.
func TestBFCLPool(t *testing.T) {
	p, err := BFCL(filepath.Join(retrievetest.DataDir(), "bfcl"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Tools() != 1067 || len(p.Queries) != 600 {
		t.Errorf("got %d tools and %d queries, want BFCL's 1067 distinct functions (name and description) and 600 queries", p.Tools(), len(p.Queries))
	}
	inv := serve(t, p)
	snap := inv.Snapshot()
	for _, q := range p.Queries {
		if _, ok := snap.Tool(q.Gold); !ok {
			t.Fatalf("gold tool %s of %q is not in the inventory", q.Gold, q.Text)
		}
	}
}

// TestRecallIsConsistent ranks real MetaTool queries with each candidate set and checks the
// figures against each other: recall grows with k and with the budget, more tools are shown under
// a larger budget and no shortlist is over its budget; the gate shows nothing to a query it does
// not pass on.
func TestRecallIsConsistent(t *testing.T) {
	p := metaTool(t, 60)
	inv := serve(t, p)
	for _, set := range Sets {
		t.Run(set, func(t *testing.T) {
			rc, err := MeasureRecall(context.Background(), inv, p, set, RecallOptions{Seed: 1, PerTool: 20, Log: quiet})
			if err != nil {
				t.Fatal(err)
			}
			if rc.Queries != 60 || rc.Tools != 199 {
				t.Fatalf("got %d queries over %d tools, want 60 over 199", rc.Queries, rc.Tools)
			}
			for i := 1; i < len(rc.AtK); i++ {
				if rc.AtK[i].Hits < rc.AtK[i-1].Hits {
					t.Errorf("recall@%d %d < recall@%d %d", rc.AtK[i].K, rc.AtK[i].Hits, rc.AtK[i-1].K, rc.AtK[i-1].Hits)
				}
			}
			for i, a := range rc.AtBudget {
				if a.OverBudget != 0 || a.MaxUsed > a.Budget || a.Whole != 0 {
					t.Errorf("budget %d: %d over, at most %d used, %d whole; want shortlists within budget", a.Budget, a.OverBudget, a.MaxUsed, a.Whole)
				}
				if i > 0 && (a.Hits < rc.AtBudget[i-1].Hits || a.MeanShown <= rc.AtBudget[i-1].MeanShown) {
					t.Errorf("budget %d: %d hits, %.1f shown; budget %d: %d hits, %.1f shown; want both to grow",
						a.Budget, a.Hits, a.MeanShown, rc.AtBudget[i-1].Budget, rc.AtBudget[i-1].Hits, rc.AtBudget[i-1].MeanShown)
				}
			}
			switch set {
			case KeywordGate:
				if rc.Passed == nil || *rc.Passed >= rc.Queries || rc.AtBudget[len(Budgets)-1].Hits > *rc.Passed {
					t.Errorf("got %v passed and %d hits at the largest budget, want some queries stopped and hits only among the passed", rc.Passed, rc.AtBudget[len(Budgets)-1].Hits)
				}
			case BM25Examples:
				if e := rc.Examples; e == nil || e.MeanPerTool <= 0 || e.MeanPerTool > 20 {
					t.Errorf("got examples %+v, want some, at most 20 per tool", e)
				}
			}
		})
	}
}

// TestExamplesComeFromOtherFolds: a query repeated with other case and spacing falls in the same
// fold; a fold's examples hold none of its queries, only the other folds' queries of each tool,
// at most the cap per tool.
func TestExamplesComeFromOtherFolds(t *testing.T) {
	p := &Pool{}
	for i := range 200 {
		tool := fmt.Sprintf("s.t%d", i%4)
		p.Queries = append(p.Queries, Query{Text: fmt.Sprintf("query number %d", i), Gold: tool})
	}
	p.Queries = append(p.Queries, Query{Text: "QUERY   number 7", Gold: "s.t3"})
	if foldOf(1, "query number 7") != foldOf(1, "QUERY   number 7") {
		t.Fatal("a query repeated with other case and spacing falls in another fold")
	}
	folds := make([][]int, Folds)
	for i, q := range p.Queries {
		f := foldOf(1, q.Text)
		folds[f] = append(folds[f], i)
	}
	for f := range Folds {
		if len(folds[f]) == 0 {
			t.Fatalf("fold %d is empty", f)
		}
		ex, _, err := learnExamples(p, folds, f, RecallOptions{Seed: 1, PerTool: 20})
		if err != nil {
			t.Fatal(err)
		}
		inFold := map[string]bool{}
		for _, i := range folds[f] {
			inFold[normalise(p.Queries[i].Text)] = true
		}
		for tool, qs := range ex.All() {
			if len(qs) != 20 {
				t.Errorf("fold %d: %s has %d examples, want the cap of 20", f, tool, len(qs))
			}
			for _, q := range qs {
				i := slices.IndexFunc(p.Queries, func(x Query) bool { return normalise(x.Text) == normalise(q) })
				if inFold[normalise(q)] || p.Queries[i].Gold != tool {
					t.Errorf("fold %d: example %q of %s is a test query or another tool's", f, q, tool)
				}
			}
		}
	}
}

func TestGateRanker(t *testing.T) {
	p := metaTool(t, 1)
	snap := serve(t, p).Snapshot()
	g := &gateRanker{}
	if res := g.Rank(context.Background(), snap, "Translate good morning into Spanish", 0, nil); len(res.Hits) != 0 {
		t.Errorf("no indicator: got %d tools, want none", len(res.Hits))
	}
	res := g.Rank(context.Background(), snap, "What is the latest news about stocks?", 0, nil)
	if len(res.Hits) != 199 || res.Hits[0].Score < res.Hits[198].Score {
		t.Errorf("indicators: got %d tools, want all 199 by shared words", len(res.Hits))
	}
	if res := g.Rank(context.Background(), snap, "What is the latest news?", 5, func(string) bool { return false }); len(res.Hits) != 0 {
		t.Errorf("nothing permitted: got %d tools", len(res.Hits))
	}
}

// TestScaleKeepsPromptWithinBudget routes real queries over 400 real tools through the router and
// the fake model over HTTP: every phase-1 tool list is within its budget and the prompt within the
// window, and what the model received is measured.
func TestScaleKeepsPromptWithinBudget(t *testing.T) {
	r, err := LoadReal(retrievetest.DataDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := MeasureScale(context.Background(), r.Scale(400), ScaleOptions{Limit: 30, Builds: 1, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	d := config.Default()
	window := numCtx(d.Ollama.Options) - d.Router.ContextReserve
	if s.Tools != 400 || s.Routes != 30 || s.Whole != 0 || s.Window != window {
		t.Fatalf("got %d tools, %d routes, %d whole, window %d; want 400, 30 shortlisted, %d", s.Tools, s.Routes, s.Whole, s.Window, window)
	}
	if s.OverBudget != 0 || s.UsedTokens.Max > float64(s.Budget) || s.Budget != window/2 || s.PromptTokens.Max > float64(window) {
		t.Errorf("got tool lists up to %.0f of %d tokens (%d over), prompts up to %.0f; want within the default budget %d and window %d",
			s.UsedTokens.Max, s.Budget, s.OverBudget, s.PromptTokens.Max, window/2, window)
	}
	if !(s.Shown.Min > 0 && s.Shown.Max < 400 && s.PromptBytes.Min > 0 && s.RequestBytes.Min > s.PromptBytes.Min && s.ShortlistUS.P50 > 0 && s.RankUS.P50 > 0) {
		t.Errorf("got %+v; want shortlists, prompts and timings measured", s)
	}
	if s.BuildMS.P50 <= 0 {
		t.Errorf("got build %.2f ms; want it measured", s.BuildMS.P50)
	}
	// The heap is measured in a process other tests share, with their goroutines ending: it is
	// above zero, or left out with the reason; never a figure below zero.
	if s.HeapMB == nil && len(s.MemoryUnmeasured) == 0 || s.HeapMB != nil && !(*s.HeapMB > 0) {
		t.Errorf("got heap %s, unmeasured %q; want a figure above zero or the reason there is none", mbOr(s.HeapMB, "none"), s.MemoryUnmeasured)
	}
}

// instantChat is an in-process model that chooses no tool at once, without token counts (which
// would calibrate the router's estimate).
type instantChat struct{}

func (instantChat) Chat(_ context.Context, _ *api.ChatRequest, fn api.ChatResponseFunc) error {
	return fn(api.ChatResponse{Done: true, Message: api.Message{Role: "assistant", Content: NoToolSelection}})
}

var realData = sync.OnceValues(func() (*Real, error) { return LoadReal(retrievetest.DataDir()) })

// BenchmarkShortlist routes real queries (BFCL and MetaTool) over pools of real tools through
// the router with the built-in settings and an in-process model that answers at once: ns/op is a
// whole route; shortlist-µs is the time from the request's start to the shortlist ready (ranking,
// budget fill, prompt rendered), from the trace, as `go run ./bench retrieval` reports it.
func BenchmarkShortlist(b *testing.B) {
	r, err := realData()
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{200, 2000, 20000} {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			inv := serve(b, r.Scale(n))
			rt := scaleRouter(instantChat{}, inv, newCatalog(nil, quiet), quiet)
			qs := r.Queries()
			if _, err := rt.Route(b.Context(), router.Request{Query: qs[0].Text}); err != nil { // index and prompt caches
				b.Fatal(err)
			}
			var ready []float64
			b.ReportAllocs()
			for b.Loop() {
				out, err := rt.Route(b.Context(), router.Request{Query: qs[len(ready)%len(qs)].Text})
				if err != nil {
					b.Fatal(err)
				}
				step, ok := firstStep(out, router.StepShortlist)
				if !ok {
					b.Fatal("no shortlist")
				}
				ready = append(ready, step.StartMS*1000)
			}
			s := summarise(ready)
			b.ReportMetric(s.P50, "shortlist-p50-µs")
			b.ReportMetric(s.P99, "shortlist-p99-µs")
		})
	}
}
