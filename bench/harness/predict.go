package harness

import (
	"context"
	"fmt"
	"time"

	"toolrouter/access"
	"toolrouter/bench/baseline"
	"toolrouter/bench/dataset"
	"toolrouter/bench/metrics"
	"toolrouter/bench/report"
	"toolrouter/router"
)

// Router names, in report order.
const (
	CouncilKeywords = "council-keywords"
	KeywordOverlap  = "keyword-overlap"
	BM25            = "bm25"
	TwoPhase        = "two-phase"
	Native          = "native"
	Hybrid          = "hybrid"
)

// Routers lists every router the harness knows, in report order.
var Routers = []string{CouncilKeywords, KeywordOverlap, BM25, TwoPhase, Native, Hybrid}

// needsModel reports whether a router calls the model.
func needsModel(name string) bool {
	return name == TwoPhase || name == Native || name == Hybrid
}

// thresholded reports whether a router's "no tool" decision is a score threshold tuned on the
// other folds of the query's source.
func thresholded(name string) bool { return name == KeywordOverlap || name == BM25 }

// prediction is what one router did with one case.
type prediction struct {
	used  bool
	calls []metrics.Call // the tools called (model-free routers: the chosen tool, no arguments)
	// best and score are a thresholded router's top tool and score, decided after tuning.
	best    string
	score   float64
	latency time.Duration
	// Model routers only: the outcome's usage, and where the wall time went.
	modelCalls, promptTokens     int
	decodeTokens, uncachedTokens int
	time                         report.TimeSplit
	// confidence is phase 1's confidence in its first selection (Outcome.Confidence; nil
	// without the server's logprobs and for routers without phase 1).
	confidence *router.Confidence
	// degraded says the model failed and the router fell back (Outcome.Degraded, or the loop
	// stopped on a model failure): an outcome of its own, never a right answer.
	degraded bool
	// degradedBy is the router's classification of a degraded answer ("model_failure",
	// "prompt_over_window", …).
	degradedBy string
	// degradedWhy is the router's explanation of a degraded answer.
	degradedWhy string
	// timedOut says the case ran over the case timeout and was cancelled: an outcome of its own,
	// never a right answer.
	timedOut bool
	// failed counts the outcome's calls that did not run or did not succeed: an unknown tool, a
	// call error (invalid arguments, a broken transport), no result, or a result marked isError.
	failed     int
	executed   int // calls that reached the tool
	recorded   int // calls the benchmark's handlers saw
	mismatches int // recorded arguments that differ from the outcome's
}

// noAnswer reports whether the prediction is no answer at all: degraded or timed out.
func (p prediction) noAnswer() bool { return p.degraded || p.timedOut }

// predictCase runs one router on one case within timeout (0: none). A case over it is a timed-out
// prediction, with the calls and usage the router reported; when ctx itself ends (the run is
// stopped) it returns ctx's error, and the case is not an answer of any kind.
func predictCase(ctx context.Context, timeout time.Duration, rn routerRun, e *env, c dataset.Case) (prediction, error) {
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		cctx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	p, err := predict(cctx, rn, e, c)
	switch {
	case ctx.Err() != nil:
		return prediction{}, ctx.Err()
	case cctx.Err() != nil:
		return prediction{used: p.used, calls: p.calls, latency: p.latency, modelCalls: p.modelCalls, promptTokens: p.promptTokens,
			decodeTokens: p.decodeTokens, uncachedTokens: p.uncachedTokens, time: p.time, confidence: p.confidence, timedOut: true}, nil
	}
	return p, err
}

// predict runs one router on one case.
func predict(ctx context.Context, rn routerRun, e *env, c dataset.Case) (prediction, error) {
	switch rn.router {
	case CouncilKeywords:
		t0 := time.Now()
		m, ok := e.cncl.Route(c.Query)
		p := prediction{latency: time.Since(t0), used: ok, score: m.Score}
		if ok {
			p.calls = []metrics.Call{{Name: m.Tool}}
		}
		return p, nil
	case KeywordOverlap, BM25:
		t0 := time.Now()
		var m baseline.Match
		if rn.router == BM25 {
			m = e.bm25.Best(c.Query)
		} else {
			m = e.ovl.Best(c.Query)
		}
		return prediction{latency: time.Since(t0), best: m.Tool, score: m.Score}, nil
	case TwoPhase:
		return route(ctx, e.twoPh[rn.reasoning], c, e.inProcess, time.Now())
	case Native:
		return route(ctx, e.native, c, e.inProcess, time.Now())
	case Hybrid:
		t0 := time.Now()
		if !baseline.Gate(c.Query) {
			d := time.Since(t0)
			return prediction{latency: d, time: report.TimeSplit{SidecarMS: float64(d.Nanoseconds()) / 1e6}}, nil
		}
		return route(ctx, e.twoPh[rn.reasoning], c, e.inProcess, t0)
	}
	return prediction{}, fmt.Errorf("unknown router %q", rn.router)
}

// route runs the real router and reads its outcome: the calls it made (every round), whether each
// one ran and succeeded, what reached the benchmark's handlers (inProcess: every executed call
// must have been recorded there), and the usage. A degraded outcome (the model failed) is marked
// as such; the scorer never counts it right, whatever calls it holds.
func route(ctx context.Context, rt *router.Router, c dataset.Case, inProcess bool, t0 time.Time) (prediction, error) {
	if rt == nil {
		return prediction{}, fmt.Errorf("router is not available")
	}
	rec := &recorder{}
	out, err := rt.Route(withRecorder(ctx, rec), router.Request{Query: c.Query, Identity: access.Identity{Org: "bench"}})
	p := prediction{latency: time.Since(t0)}
	if out != nil {
		p.modelCalls, p.promptTokens = out.Usage.LLMCalls, out.Usage.PromptTokens
		p.decodeTokens, p.uncachedTokens = out.Usage.CompletionTokens, out.Usage.UncachedTokens
		p.time = splitTime(out, p.latency)
		p.confidence = out.Confidence
	}
	if err != nil {
		return p, fmt.Errorf("routing %s: %w", c.ID, err)
	}
	p.degraded = out.Degraded != "" || out.Stopped == router.StopModelFailure
	if p.degraded {
		p.degradedBy, p.degradedWhy = string(out.DegradedReason), out.Degraded
		if p.degradedBy == "" {
			p.degradedBy = string(router.DegradedModelFailure)
		}
	}
	var executed []metrics.Call
	for _, call := range out.Calls {
		if call.Server == "" || call.Tool == "" {
			p.failed++ // an unknown tool name: nothing was called
			continue
		}
		mc := metrics.Call{Name: call.Server + "." + call.Tool, Args: call.Arguments}
		p.calls = append(p.calls, mc)
		if call.Error != nil || call.Result == nil || call.Result.IsError {
			p.failed++
		}
		if call.Result != nil && call.ReusedFrom == 0 {
			executed = append(executed, mc)
		}
	}
	p.used = len(p.calls) > 0
	p.executed = len(executed)
	// Calls of one round may run concurrently: match recorded and executed calls as multisets.
	got := rec.list()
	p.recorded = len(got)
	matched := make([]bool, len(executed))
	for _, g := range got {
		found := false
		for i, ex := range executed {
			if !matched[i] && g.Name == ex.Name && sameArgs(g.Args, ex.Args) {
				matched[i], found = true, true
				break
			}
		}
		if !found {
			p.mismatches++
		}
	}
	if inProcess {
		for _, m := range matched {
			if !m {
				p.mismatches++
			}
		}
	}
	return p, nil
}
