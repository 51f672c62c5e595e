package router

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"

	"github.com/ollama/ollama/api"
	"golang.org/x/sync/errgroup"

	"toolrouter/access"
	"toolrouter/inventory"
	"toolrouter/prompts"
)

// planner is what a mode contributes to the loop: given the transcript, which calls come next,
// and how one call gets its arguments. Two-phase and native mode each implement it; the loop
// owns everything else (budget, deadline, dedup, parallelism, stop rules).
type planner interface {
	// plan asks the model for the round's calls, at most remaining of them (a plan may hold more:
	// the loop caps it). A plan without calls ends the loop. An error is a model failure.
	plan(ctx context.Context, round, remaining int) (plan, error)
	// arguments gives one planned call its arguments, or an Error; finished and priors are the
	// calls of earlier rounds and their results as prompts show them. It returns the model's
	// error when the model itself failed. Calls of a round run it concurrently.
	arguments(ctx context.Context, c *Call, p planned, finished []Call, priors []prompts.Prior) error
	// offered is the qualified names of the tools round 1 offered the model, nil when it was
	// offered every tool the identity may use.
	offered() map[string]bool
}

// plan is one round's decision.
type plan struct {
	calls []planned
	// answer is the model's answer as it wrote it; toolCalls are its native tool calls, one per
	// planned call (nil in two-phase mode).
	answer    string
	toolCalls []api.ToolCall
	reasoning string
	// needsMore asks for another round even when every call succeeds.
	needsMore bool
	direct    bool
	// unknown lists tools the model named that are not available and were dropped.
	unknown []string
	// searched counts the searches made while planning; each took one unit of the call budget.
	searched int
	// confidence is the model's confidence in its selection (nil when unknown).
	confidence *Confidence
	// lowConfidence says the plan's calls were not made: the confidence was below
	// router.min_confidence.
	lowConfidence bool
}

// planned is one call a plan asks for.
type planned struct {
	tool *inventory.Tool // nil when the model named a tool that is not available
	name string          // the name the model used
	task string
	raw  string // native mode: the model's arguments as JSON
}

// stageError is a model failure in a named stage of a round.
type stageError struct {
	stage string
	err   error
}

func (e *stageError) Error() string { return e.stage + ": " + e.err.Error() }
func (e *stageError) Unwrap() error { return e.err }

// run is one request going through the loop.
type run struct {
	r        *Router
	j        *journal
	t        *transcript
	p        planner
	budget   int
	deadline time.Duration
	// seen deduplicates calls: each canonical call and the step of the call that produced its
	// result (a request makes a handful of calls: a slice searched in order does).
	seen []seenCall
	// searches counts the phase-1 searches of the request (each takes one unit of the budget).
	searches int
	// id is who the request acts for: its auto_execute level decides which calls are held.
	id access.Identity
	// held counts the calls held for approval; a round that holds one ends the request.
	held int
	// firstOffered is what round 1 offered, once it ended, when later rounds may not widen it.
	firstOffered map[string]bool
}

// loop runs rounds until the model needs no more tools, the budget is spent, the deadline fires
// or the model fails. It returns an error only for a model failure under the Fail mode.
func (x *run) loop(ctx context.Context) error {
	direct := false
	for round := 1; ; round++ {
		remaining := x.budget - len(x.j.calls()) - x.searches
		if remaining <= 0 {
			x.stop(StopMaxToolCalls)
			break
		}
		x.j.event(Event{Type: EventSelectStart, Round: round})
		p, err := x.p.plan(ctx, round, remaining)
		if p.searched > 0 {
			x.searches += p.searched
			remaining -= p.searched
			x.j.update(func(o *Outcome) { o.Searches = x.searches })
		}
		if err != nil {
			if expired(ctx) {
				x.deadlineHit(round)
				break
			}
			return x.modelFailure(round, err)
		}
		x.j.update(func(o *Outcome) {
			o.Rounds = round
			if round == 1 {
				o.Reasoning = p.reasoning
				o.Confidence = p.confidence
			}
			switch {
			case o.DegradedReason != "":
			case p.lowConfidence:
				low, _ := p.confidence.lowest()
				o.Degraded = fmt.Sprintf("the model's confidence in its choice, %.2f, is below router.min_confidence", low)
				o.DegradedReason = DegradedLowConfidence
			case round == 1 && len(p.calls) == 0 && len(p.unknown) > 0:
				o.Degraded = fmt.Sprintf("model selected %q, which is not an available tool", p.unknown[0])
				o.DegradedReason = DegradedUnknownTool
			}
		})
		if len(p.calls) == 0 {
			if round == 1 {
				x.stop(StopNoTool)
			} else {
				x.stop(StopDone)
			}
			break
		}
		capped := len(p.calls) > remaining
		if capped {
			x.j.note(StepCapped, round, fmt.Sprintf("%d calls selected, %d left in the budget of %d", len(p.calls), remaining, x.budget))
			p.calls = p.calls[:remaining]
			if p.toolCalls != nil {
				p.toolCalls = p.toolCalls[:remaining]
			}
		}
		x.t.answered(p.answer, p.toolCalls)
		direct = p.direct
		failed, modelErr := x.round(ctx, round, p)
		if expired(ctx) {
			x.deadlineHit(round)
			break
		}
		if modelErr != nil {
			return x.modelFailure(round, &stageError{stage: "writing arguments", err: modelErr})
		}
		if x.held > 0 {
			x.stop(StopApprovalRequired)
			break
		}
		if round == 1 && !x.r.set.ResultsMayWiden {
			x.firstOffered = x.p.offered()
		}
		if capped {
			x.stop(StopMaxToolCalls)
			break
		}
		if !p.needsMore && !failed {
			x.stop(StopDone)
			break
		}
	}
	x.j.update(func(o *Outcome) {
		o.Direct = direct && (o.Stopped == StopDone || o.Stopped == StopMaxToolCalls) && allOK(o.Calls)
	})
	return nil
}

// round gives the planned calls their arguments, deduplicates them and executes the rest, then
// closes the round in the journal and the transcript. It reports whether any call failed and the
// first model failure. Calls of a round run concurrently, at most ParallelCalls at a time; a
// call that fails records its error and never stops the others.
func (x *run) round(ctx context.Context, round int, p plan) (failed bool, modelErr error) {
	finished := x.j.calls()
	plans := p.calls
	calls := make([]Call, len(plans)) // changed in place until the round ends, then kept as they are
	for i, pc := range plans {
		c := &calls[i]
		*c = Call{Step: len(finished) + 1 + i, Round: round, Task: pc.task, Tool: pc.name}
		if pc.tool == nil {
			c.Error = &Error{Code: CodeUnknownTool, Message: fmt.Sprintf("%q is not an available tool", pc.name)}
		} else {
			c.Server, c.Tool = pc.tool.Server, pc.tool.Name
		}
		x.j.callEvent(EventToolCallStart, round, c)
	}
	notOffered(x.j, x.firstOffered, calls)

	priors := x.t.allPriors()
	if len(calls) == 1 { // no goroutine needed (see each)
		if calls[0].Error == nil {
			modelErr = x.p.arguments(ctx, &calls[0], plans[0], finished, priors)
		}
	} else {
		errs := make([]error, len(calls))
		x.each(len(calls), func(i int) {
			if calls[i].Error == nil {
				errs[i] = x.p.arguments(ctx, &calls[i], plans[i], finished, priors)
			}
		})
		for _, err := range errs {
			if err != nil && modelErr == nil {
				modelErr = err
			}
		}
	}

	x.execute(ctx, round, calls, plans)
	for i := range calls {
		failed = failed || !calls[i].ok()
		x.j.addCall(calls[i])
	}
	x.t.results(calls, x.budget-len(x.j.calls()))
	return failed, modelErr
}

// execute deduplicates the calls that have arguments and runs the rest concurrently (at most
// ParallelCalls at a time). A call identical to one that produced a result earlier in the request
// or in this round reuses it.
func (x *run) execute(ctx context.Context, round int, calls []Call, plans []planned) {
	var first [4]int
	todo := first[:0]
	reused := map[int]int{} // index in calls → step whose result answers it
	for i := range calls {
		c := &calls[i]
		if c.Error != nil {
			continue
		}
		refused := x.r.refuseSecret(x.j, plans[i].tool, c) // first: the event shows masked arguments
		x.j.callEvent(EventToolCallComplete, round, c)
		if refused {
			x.j.callEvent(EventToolResult, round, c)
			continue
		}
		if !x.r.hold(ctx, x.j, x.id, plans[i].tool, c) {
			if c.Error.Code == CodeApprovalRequired {
				x.held++
			}
			continue
		}
		key := canonicalCall(c.Server, c.Tool, c.Arguments)
		if k := x.seenAt(key); k >= 0 {
			reused[i] = x.seen[k].step
			continue
		}
		x.seen = append(x.seen, seenCall{key: key, step: c.Step})
		todo = append(todo, i)
	}
	switch len(todo) {
	case 0:
	case 1: // no goroutine needed (see each)
		x.r.execute(ctx, x.j, plans[todo[0]].tool, &calls[todo[0]])
	default:
		run := slices.Clone(todo)
		x.each(len(run), func(k int) { x.r.execute(ctx, x.j, plans[run[k]].tool, &calls[run[k]]) })
	}

	for i := range calls {
		c := &calls[i]
		if step, ok := reused[i]; ok {
			src := x.callByStep(step, calls)
			c.ReusedFrom, c.Result, c.Error, c.output = step, src.Result, src.Error, src.output
			x.j.step(Step{Kind: StepDedup, Round: round, Call: c.Step, Tool: qualified(c), StartMS: x.j.since(time.Now()),
				Detail: fmt.Sprintf("same call as step %d; its result is reused", step)})
			x.j.callEvent(EventToolResult, round, c)
		}
		if c.Result == nil && c.Arguments != nil {
			// Only calls that produced a result answer later identical calls; a timed-out or
			// broken call may be retried.
			if k := x.seenAt(canonicalCall(c.Server, c.Tool, c.Arguments)); k >= 0 && x.seen[k].step == c.Step {
				x.seen = slices.Delete(x.seen, k, k+1)
			}
		}
	}
}

// seenCall is a call that produced a result: its canonical form and its step.
type seenCall struct {
	key  string
	step int
}

// seenAt is the index in seen of the canonical call key, or -1.
func (x *run) seenAt(key string) int {
	return slices.IndexFunc(x.seen, func(s seenCall) bool { return s.key == key })
}

// each runs f(0) … f(n-1) concurrently, at most ParallelCalls at a time, and waits; a single call
// runs on the caller's goroutine. f records its own failures: one failing call never stops the
// others. A panic in f is re-raised on the caller's goroutine, where the HTTP layer recovers it,
// instead of killing the process from a worker goroutine.
func (x *run) each(n int, f func(i int)) {
	if n == 1 {
		f(0)
		return
	}
	var (
		g        errgroup.Group
		panicked atomic.Value
	)
	g.SetLimit(x.r.set.ParallelCalls)
	for i := range n {
		g.Go(func() error {
			defer func() {
				if p := recover(); p != nil {
					panicked.CompareAndSwap(nil, fmt.Sprintf("call %d: %v\n%s", i+1, p, debug.Stack()))
				}
			}()
			f(i)
			return nil
		})
	}
	_ = g.Wait()
	if p := panicked.Load(); p != nil {
		panic(p)
	}
}

// callByStep finds a call made earlier in the request or earlier in this round.
func (x *run) callByStep(step int, round []Call) Call {
	for i := range round {
		if round[i].Step == step {
			return round[i]
		}
	}
	return x.j.calls()[step-1]
}

func (x *run) stop(reason StopReason) {
	x.j.update(func(o *Outcome) { o.Stopped = reason })
}

func (x *run) deadlineHit(round int) {
	n := len(x.j.calls())
	x.stop(StopDeadline)
	x.j.note(StepDeadline, round, fmt.Sprintf("request deadline of %s reached after %d calls", x.deadline, n))
	if n == 0 {
		x.j.update(func(o *Outcome) {
			o.Degraded = fmt.Sprintf("request deadline of %s reached before a tool was chosen", x.deadline)
			o.DegradedReason = DegradedDeadline
		})
	}
}

// modelFailure applies the failure mode to a model error.
func (x *run) modelFailure(round int, err error) error {
	stage, cause := "model call", err
	if se, ok := err.(*stageError); ok {
		stage, cause = se.stage, se.err
	}
	if round > 1 {
		stage = fmt.Sprintf("%s (round %d)", stage, round)
	}
	var over *OverWindowError
	if errors.As(cause, &over) {
		// Not a model failure: nothing was sent. The request ends degraded whatever the mode.
		x.r.log.Warn("prompt over the window", "phase", stage, "err", cause, "request_id", x.j.id)
		x.stop(StopPromptOverWindow)
		x.j.update(func(o *Outcome) {
			o.Direct = false
			o.Degraded, o.DegradedReason = stage+": "+cause.Error(), DegradedPromptOverSize
		})
		return nil
	}
	x.r.log.Warn("model failure", "phase", stage, "err", cause, "request_id", x.j.id)
	x.stop(StopModelFailure)
	if x.r.set.OnModelFailure == Fail {
		return fmt.Errorf("%w: %w", ErrModel, &PhaseError{Phase: stage, Err: cause})
	}
	x.j.update(func(o *Outcome) {
		o.Direct = false
		o.Degraded, o.DegradedReason = stage+": "+cause.Error(), DegradedModelFailure
	})
	return nil
}

// allOK reports whether every call produced a usable result.
func allOK(calls []Call) bool {
	for i := range calls {
		if !calls[i].ok() {
			return false
		}
	}
	return len(calls) > 0
}

// expired reports whether the request's own deadline (or its caller) ended it.
func expired(ctx context.Context) bool { return ctx.Err() != nil }

// qualified is a call's tool as the model knows it: "server.tool", or a caller's own function's
// name (a call of no server).
func qualified(c *Call) string {
	if c.Server == "" {
		return c.Tool
	}
	return inventory.Qualify(c.Server, c.Tool)
}

func copyCall(c *Call) *Call {
	cp := *c
	return &cp
}
