package harness

import (
	"slices"
	"sync"
	"time"

	"toolrouter/bench/dataset"
	"toolrouter/bench/metrics"
	"toolrouter/bench/report"
	"toolrouter/router"
)

// producesArguments reports whether a router writes arguments and executes calls (the model
// routers).
func producesArguments(name string) bool { return needsModel(name) }

// score turns one run's predictions on a dataset into a row. Definitions (also in
// docs/benchmarks.md):
//   - degraded: the model failed and the router fell back; such an answer is its own outcome and
//     is right by no measure (not a right "no tool", not a right selection);
//   - timed out: the case ran over the case timeout and was cancelled; like a degraded answer it is
//     right by no measure, and the decision counts it with the degraded ones (no decision);
//   - decision: "needs a tool" against "used a tool", over every case (degraded answers apart, see
//     metrics.Confusion);
//   - selection: over tool cases with a labeled tool, the distinct tools called are exactly those
//     of one acceptable answer;
//   - arguments (routers that write them): over cases with the right tools and labeled arguments,
//     the calls pass BFCL's checker against that answer (no order, counts must match);
//   - routing: every case; a no-tool case is right without a call, a tool case with the right
//     tools (any tool when the dataset names none);
//   - end-to-end (routers that execute calls): routing, and every call executed and returned
//     without error (no call error, a result not marked isError), and the arguments right where
//     they are labeled. Undefined for the model-free routers: they execute nothing.
//   - confidence (routers that select with phase 1): the mean of each figure of phase 1's
//     confidence over the answers that carry it.
func score(ds *dataset.Dataset, rn routerRun, preds []prediction, specs *specBook) report.Row {
	name := rn.router
	row := report.Row{Dataset: ds.Name, Router: rn.name, Reasoning: string(rn.reasoning), Status: report.Measured, Cases: len(ds.Cases)}
	writesArgs := producesArguments(name)
	if writesArgs {
		row.Arguments = &metrics.Ratio{}
		row.EndToEnd = &metrics.Ratio{}
	}
	if thresholded(name) {
		row.Ranking = &metrics.Ratio{}
	}
	checker := metrics.Checker{Strings: ds.Strings}
	lat := make([]time.Duration, 0, len(preds))
	var (
		sum   time.Duration
		split report.TimeSplit
		conf  confidenceSum
	)
	for i, c := range ds.Cases {
		p := preds[i]
		lat = append(lat, p.latency)
		sum += p.latency
		if p.noAnswer() {
			row.Decision.AddDegraded(c.NeedsTool)
		} else {
			row.Decision.Add(c.NeedsTool, p.used)
		}
		matching, routeOK := judge(c, p)
		selOK := !p.noAnswer() && p.used && len(matching) > 0
		if c.NeedsTool && len(c.Answers) > 0 {
			row.Selection.Add(selOK)
			if row.Ranking != nil {
				row.Ranking.Add(p.best != "" && len(matchingAnswers(c, prediction{used: true, calls: []metrics.Call{{Name: p.best}}})) > 0)
			}
		}
		row.Routing.Add(routeOK)
		argsOK := true
		if writesArgs && selOK {
			scored := false
			argsOK = false
			for _, a := range matching {
				if !a.Labeled() {
					continue
				}
				scored = true
				if checker.CheckCalls(specs.get(c.Toolset), p.calls, a.Calls) == nil {
					argsOK = true
					break
				}
			}
			if scored {
				row.Arguments.Add(argsOK)
			} else {
				argsOK = true
			}
		}
		if row.EndToEnd != nil {
			row.EndToEnd.Add(routeOK && argsOK && p.failed == 0)
		}
		row.ModelCalls += p.modelCalls
		row.PromptTokens += p.promptTokens
		row.DecodeTokens += p.decodeTokens
		row.UncachedPromptTokens += p.uncachedTokens
		split.Add(p.time)
		conf.add(p.confidence)
		row.Calls += len(p.calls)
		row.Failed += p.failed
		row.Executed += p.executed
		row.Recorded += p.recorded
		row.Mismatches += p.mismatches
		if p.timedOut {
			row.TimedOut++
		}
		if p.degraded {
			row.Degraded++
			if row.DegradedBy == nil {
				row.DegradedBy = map[string]int{}
			}
			row.DegradedBy[p.degradedBy]++
		}
	}
	row.Latency = report.LatencyOf(metrics.Latencies(lat))
	row.Confidence = conf.mean()
	if n := float64(len(ds.Cases)); n > 0 {
		if needsModel(name) {
			row.ModelCallsPerQuery = report.Float(float64(row.ModelCalls) / n)
			row.PromptTokensPerQuery = report.Float(float64(row.PromptTokens) / n)
			row.DecodeTokensPerQuery = report.Float(float64(row.DecodeTokens) / n)
			row.UncachedPromptTokensPerQuery = report.Float(float64(row.UncachedPromptTokens) / n)
			mean := split.Scaled(1 / n)
			row.Time = &mean
		} else if sum > 0 {
			row.QPS = report.Float(n / sum.Seconds())
		}
	}
	row.Fill()
	return row
}

// confidenceSum adds up phase 1's confidence figures over a row's answers.
type confidenceSum struct {
	useTool, tool   float64
	useToolN, toolN int
}

func (s *confidenceSum) add(c *router.Confidence) {
	if c == nil {
		return
	}
	if c.UseTool != nil {
		s.useTool += *c.UseTool
		s.useToolN++
	}
	if c.Tool != nil {
		s.tool += *c.Tool
		s.toolN++
	}
}

// mean is each figure's mean over the answers that carry it; nil when none carries either.
func (s *confidenceSum) mean() *report.Confidence {
	if s.useToolN == 0 && s.toolN == 0 {
		return nil
	}
	c := &report.Confidence{UseToolAnswers: s.useToolN, ToolAnswers: s.toolN}
	if s.useToolN > 0 {
		c.UseTool = report.Float(s.useTool / float64(s.useToolN))
	}
	if s.toolN > 0 {
		c.Tool = report.Float(s.tool / float64(s.toolN))
	}
	return c
}

// judge returns the case's answers whose tools the prediction called exactly, and whether the case
// was routed right: a no-tool case without a call, a tool case with exactly the right tools (any
// tool when the case names none). A degraded or timed-out prediction is never right.
func judge(c dataset.Case, p prediction) (matching []dataset.Answer, routeOK bool) {
	matching = matchingAnswers(c, p)
	switch {
	case p.noAnswer():
		return matching, false
	case !c.NeedsTool:
		return matching, !p.used
	case len(c.Answers) == 0:
		return matching, p.used
	}
	return matching, p.used && len(matching) > 0
}

// judged reports whether a router's per-case lines say whether the case was routed right: not for
// the thresholded routers (their decision waits for the tuned threshold), nor for model rows that
// measure no model (the fake and random-weight models).
func judged(o Options, name string) bool {
	return !thresholded(name) && !(needsModel(name) && (o.Plumbing || o.RandomWeights))
}

// matchingAnswers returns the case's answers whose distinct tools are exactly the tools called.
func matchingAnswers(c dataset.Case, p prediction) []dataset.Answer {
	if !p.used {
		return nil
	}
	var called []string
	for _, call := range p.calls {
		if !slices.Contains(called, call.Name) {
			called = append(called, call.Name)
		}
	}
	slices.Sort(called)
	var out []dataset.Answer
	for _, a := range c.Answers {
		want := a.Tools()
		slices.Sort(want)
		if slices.Equal(called, want) {
			out = append(out, a)
		}
	}
	return out
}

// unmeasuredRow keeps what a row of the fake or a random-weight model checks (calls reached the
// tools and were recorded as the outcome says, usage was counted) and drops every accuracy figure:
// neither model's answers mean anything.
func unmeasuredRow(r report.Row, status report.Status, reason string) report.Row {
	return report.Row{
		Dataset: r.Dataset, Router: r.Router, Status: status, Reason: reason, Cases: r.Cases,
		Latency: r.Latency, ModelCalls: r.ModelCalls, PromptTokens: r.PromptTokens,
		ModelCallsPerQuery: r.ModelCallsPerQuery, PromptTokensPerQuery: r.PromptTokensPerQuery,
		DecodeTokens: r.DecodeTokens, UncachedPromptTokens: r.UncachedPromptTokens,
		DecodeTokensPerQuery: r.DecodeTokensPerQuery, UncachedPromptTokensPerQuery: r.UncachedPromptTokensPerQuery, Time: r.Time,
		Reasoning: r.Reasoning, Confidence: r.Confidence,
		Degraded: r.Degraded, DegradedBy: r.DegradedBy, TimedOut: r.TimedOut,
		Calls: r.Calls, Failed: r.Failed, Executed: r.Executed, Recorded: r.Recorded, Mismatches: r.Mismatches,
	}
}

// specBook keeps each toolset's function declarations, as its env read them from the servers.
type specBook struct {
	mu sync.Mutex // guards m
	m  map[*dataset.Toolset]map[string]metrics.FunctionSpec
}

func (b *specBook) put(ts *dataset.Toolset, specs map[string]metrics.FunctionSpec) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[*dataset.Toolset]map[string]metrics.FunctionSpec{}
	}
	b.m[ts] = specs
}

func (b *specBook) get(ts *dataset.Toolset) map[string]metrics.FunctionSpec {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.m[ts]
}
