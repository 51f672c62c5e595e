package retrieval

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/config"
	"toolrouter/internal/fakeollama"
	"toolrouter/inventory"
	"toolrouter/retrieve"
	"toolrouter/router"
)

// Scale is the cost of the shortlist at one pool size, measured through the real router.
type Scale struct {
	Tools   int `json:"tools"`
	Servers int `json:"servers"`
	// StartSeconds is how long the inventory took to connect every in-process server.
	StartSeconds float64 `json:"inventory_start_seconds"`
	// Build is the time to build the index from the inventory's snapshot (retrieve.Catalog.Sync
	// from empty: documents and BM25F index), in milliseconds, over Builds builds, once the routes
	// are done and the inventory is stopped.
	Builds  int     `json:"builds"`
	BuildMS Summary `json:"build_ms"`
	// HeapMB is the live heap one built index holds and RSSMB the resident set (VmRSS) that goes
	// with it (retained: with the index alive less before it was built, with the inventory
	// stopped). Either is nil when it could not be measured, and MemoryUnmeasured says why.
	HeapMB           *float64 `json:"heap_mb,omitempty"`
	RSSMB            *float64 `json:"rss_mb,omitempty"`
	MemoryUnmeasured []string `json:"memory_unmeasured,omitempty"`
	// Routes counts the routed queries, one at a time, after one warm-up route.
	Routes int `json:"routes"`
	// RankUS is the time of the ranker's Rank calls within each route (retrieve.Catalog.Rank; the
	// router ranks deeper a second time when the first tools all fit), ShortlistUS the time from the request's start to the shortlist ready to
	// show (the trace's shortlist step: access, ranking, budget fill and the prompt rendered), in
	// microseconds.
	RankUS      Summary `json:"rank_us"`
	ShortlistUS Summary `json:"shortlist_us"`
	// What the fake model received as phase-1 requests: the bytes of the messages, the bytes of
	// the HTTP request body (with the format schema and its enum of shown tools), and the router's
	// estimate of the prompt's tokens (checked against the window before sending).
	PromptBytes  Summary `json:"prompt_bytes"`
	RequestBytes Summary `json:"request_bytes"`
	PromptTokens Summary `json:"prompt_tokens"`
	// Shown is the number of tools each shortlist showed; Budget the tool list's budget and
	// UsedTokens what each shortlist used of it; OverBudget counts shortlists over it.
	Shown      Summary `json:"shown"`
	Budget     int     `json:"budget_tokens"`
	UsedTokens Summary `json:"used_tokens"`
	OverBudget int     `json:"over_budget"`
	// Window is the prompt limit (num_ctx minus the reserve); OverWindow counts phase-1 prompts
	// estimated over it (the router sends none of those).
	Window     int `json:"window_tokens"`
	OverWindow int `json:"over_window"`
	// Whole counts routes that showed the whole inventory (it fit the budget).
	Whole int `json:"whole_inventory"`
}

// Summary is the nearest-rank percentiles of a sample.
type Summary struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

func summarise(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	s := slices.Sorted(slices.Values(xs))
	at := func(p float64) float64 { return s[max(int(math.Ceil(p*float64(len(s))))-1, 0)] }
	return Summary{P50: at(0.5), P99: at(0.99), Min: s[0], Max: s[len(s)-1]}
}

// ScaleOptions configure MeasureScale.
type ScaleOptions struct {
	// Builds is how many times the index is built for timing (0: 3).
	Builds int
	// Limit routes only the first Limit queries (0: all).
	Limit int
	Log   *slog.Logger
	// Progress, if set, receives a line per stage.
	Progress io.Writer
}

// MeasureScale serves p, builds its index, and routes its queries one at a time through
// router.New with the production settings (scaleRouter) against a fake Ollama over HTTP that records each phase-1 request and answers
// "no tool". Then, the inventory stopped, it measures the index alone: what one holds in memory
// (retained) and how long one takes to build.
func MeasureScale(ctx context.Context, p *Pool, o ScaleOptions) (*Scale, error) {
	if o.Builds <= 0 {
		o.Builds = 3
	}
	progress := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "retrieval: %s: "+format+"\n", append([]any{p.Name}, args...)...)
		}
	}
	res := &Scale{Tools: p.Tools(), Servers: len(p.Servers), Builds: o.Builds}
	t0 := time.Now()
	inv, err := Serve(ctx, p, o.Log)
	if err != nil {
		return nil, err
	}
	res.StartSeconds = time.Since(t0).Seconds()
	snap := inv.Snapshot()
	progress("inventory up in %.1f s", res.StartSeconds)
	err = route(ctx, p, inv, snap, res, o, progress)
	inv.Close()
	if err != nil {
		return nil, err
	}

	// The index on its own, with the inventory stopped: a started inventory lists its servers
	// again for a while (each server's new names make the others scan again), and the garbage of
	// those listings, freed between two readings, would be counted against the index.
	fp := retained(func() any {
		c := newCatalog(nil, o.Log)
		c.Sync(snap)
		return c
	})
	res.HeapMB, res.RSSMB = fp.Heap.MB(), fp.RSS.MB()
	for _, h := range []held{fp.Heap, fp.RSS} {
		if h.Err != nil {
			res.MemoryUnmeasured = append(res.MemoryUnmeasured, h.Err.Error())
		}
	}
	var builds []float64
	for range o.Builds {
		c := newCatalog(nil, o.Log)
		t := time.Now()
		c.Sync(snap)
		builds = append(builds, float64(time.Since(t).Microseconds())/1000)
	}
	res.BuildMS = summarise(builds)
	progress("index built in %.0f ms; it holds %s of heap", res.BuildMS.P50, mbOr(res.HeapMB, "an unmeasured amount"))
	return res, nil
}

// route builds the index of snap and routes p's queries one at a time through the router, with
// inv as its inventory, recording what they cost in res.
func route(ctx context.Context, p *Pool, inv *inventory.Manager, snap *inventory.Snapshot, res *Scale, o ScaleOptions, progress func(string, ...any)) error {
	cat := newCatalog(nil, o.Log)
	cat.Sync(snap)
	rec := &phase1Recorder{}
	fake := fakeollama.Start(rec.reply)
	defer fake.Close()
	u, _ := url.Parse(fake.URL)
	body := &bodyCounter{base: http.DefaultTransport}
	chat := api.NewClient(u, &http.Client{Transport: body})
	ranker := &timedRanker{Ranker: cat}
	rt := scaleRouter(chat, inv, ranker, o.Log)
	d := config.Default()
	res.Window = numCtx(d.Ollama.Options) - d.Router.ContextReserve

	queries := p.Queries
	if o.Limit > 0 && o.Limit < len(queries) {
		queries = queries[:o.Limit]
	}
	progress("routing %d queries", len(queries))
	if _, err := rt.Route(ctx, router.Request{Query: queries[0].Text}); err != nil { // warm-up: prompt caches
		return err
	}
	runtime.GC() // the garbage of building and serving is not the routes' to collect
	var rank, short, prompt, request, tokens, shown, used []float64
	for _, q := range queries {
		ranker.total.Store(0)
		out, err := rt.Route(ctx, router.Request{Query: q.Text})
		if err != nil {
			return fmt.Errorf("routing %q: %w", q.Text, err)
		}
		if out.Degraded != "" {
			return fmt.Errorf("routing %q: degraded: %s", q.Text, out.Degraded)
		}
		step, ok := firstStep(out, router.StepSelect)
		if !ok {
			return fmt.Errorf("routing %q: no phase-1 call", q.Text)
		}
		res.Routes++
		rank = append(rank, float64(ranker.total.Load())/1e3)
		prompt = append(prompt, float64(rec.promptBytes.Load()))
		request = append(request, float64(body.last.Load()))
		tokens = append(tokens, float64(step.EstimatedTokens))
		if step.EstimatedTokens > res.Window {
			res.OverWindow++
		}
		if len(out.Shortlists) == 0 {
			res.Whole++
			continue
		}
		sl := out.Shortlists[0]
		if res.Budget == 0 {
			res.Budget = sl.Budget
		} else if sl.Budget != res.Budget {
			return fmt.Errorf("shortlist budgets %d and %d in one run", res.Budget, sl.Budget)
		}
		ready, _ := firstStep(out, router.StepShortlist)
		short = append(short, ready.StartMS*1000)
		shown = append(shown, float64(len(sl.Tools)))
		used = append(used, float64(sl.Used))
		if sl.Used > sl.Budget {
			res.OverBudget++
		}
	}
	res.RankUS, res.ShortlistUS = summarise(rank), summarise(short)
	res.PromptBytes, res.RequestBytes, res.PromptTokens = summarise(prompt), summarise(request), summarise(tokens)
	res.Shown, res.UsedTokens = summarise(shown), summarise(used)
	progress("shortlist p50 %.0f µs, p99 %.0f µs; prompt p50 %.0f bytes", res.ShortlistUS.P50, res.ShortlistUS.P99, res.PromptBytes.P50)
	return nil
}

// scaleRouter is the router the scale measurements drive: production settings (config.Default,
// which router.New applies to zero fields), so the tool list's budget is the default, half the
// window; no search; ranking with ranker.
func scaleRouter(chat router.Chatter, inv *inventory.Manager, ranker router.Ranker, log *slog.Logger) *router.Router {
	return router.New(chat, inv, inv, router.Settings{Model: "fake", Ranker: ranker}, log)
}

func firstStep(out *router.Outcome, kind router.StepKind) (router.Step, bool) {
	for _, s := range out.Trace {
		if s.Kind == kind {
			return s, true
		}
	}
	return router.Step{}, false
}

// mbOr writes mb as megabytes, or unmeasured when it is nil.
func mbOr(mb *float64, unmeasured string) string {
	if mb == nil {
		return unmeasured
	}
	return fmt.Sprintf("%.1f MB", *mb)
}

// NoToolSelection is a phase-1 answer choosing no tool; a route ends with it.
const NoToolSelection = `{"reasoning": "no tool needed", "use_tool": false, "calls": [], "needs_more": false, "direct": false}`

// phase1Recorder is a fake model's reply function that answers every request "no tool" and
// keeps the message bytes of the last one (routes run one at a time).
type phase1Recorder struct{ promptBytes atomic.Int64 }

func (r *phase1Recorder) reply(req api.ChatRequest) fakeollama.Reply {
	n := 0
	for _, m := range req.Messages {
		n += len(m.Content)
	}
	r.promptBytes.Store(int64(n))
	// No token counts: the router would calibrate its estimate from them, and the budget with it.
	return fakeollama.Reply{Content: NoToolSelection}
}

// bodyCounter is an HTTP transport that keeps the body size of the last request it sent.
type bodyCounter struct {
	base http.RoundTripper
	last atomic.Int64
}

func (b *bodyCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Path == "/api/chat" {
		b.last.Store(req.ContentLength)
	}
	return b.base.RoundTrip(req)
}

// timedRanker adds up the time of its Rank calls (a shortlist may rank twice, deeper the second
// time); routes run one at a time and take the sum.
type timedRanker struct {
	router.Ranker
	total atomic.Int64 // ns
}

func (t *timedRanker) Rank(ctx context.Context, snap *inventory.Snapshot, query string, k int, permit func(string) bool) retrieve.Result {
	t0 := time.Now()
	r := t.Ranker.Rank(ctx, snap, query, k, permit)
	t.total.Add(int64(time.Since(t0)))
	return r
}

// numCtx reads num_ctx from model options.
func numCtx(opts map[string]any) int {
	switch v := opts["num_ctx"].(type) {
	case int:
		return v
	case float64:
		return int(v)
	}
	return 0
}
