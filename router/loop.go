package router

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ollama/ollama/api"
	"golang.org/x/sync/errgroup"

	"toolrouter/inventory"
	"toolrouter/prompts"
)

// run is the state of one request.
type run struct {
	r        *Router
	req      Request
	id       string
	start    time.Time
	budget   int
	deadline time.Duration
	recSeq   atomic.Int64

	mu  sync.Mutex // guards out's Trace, Usage, Timings and Trimmed, and serialises OnEvent
	out *Outcome

	// Two-phase state, touched only by the request's own goroutine between rounds.
	base   []api.Message   // system prompt, history, query
	rounds []roundLog      // the phase-1 transcript after base
	priors []prompts.Prior // each call's result as prompts show it (index step-1), possibly trimmed
	seen   map[string]int  // dedup: canonical call → step of the call that produced its result
}

// twoPhase runs selection rounds until the model needs no more tools, the budget is spent or the
// deadline fires.
func (x *run) twoPhase(ctx context.Context, snap *inventory.Snapshot, ps *promptSet) error {
	x.begin(ps.text)

	direct := false
	for round := 1; ; round++ {
		remaining := x.budget - len(x.out.Calls)
		if remaining <= 0 {
			x.out.Stopped = StopMaxToolCalls
			break
		}
		sel, err := x.selectRound(ctx, ps, round, remaining)
		if err != nil {
			if expired(ctx) {
				x.deadlineHit(round)
				break
			}
			return x.modelFailure(phase("selecting tool", round), err)
		}
		x.out.Rounds = round
		if round == 1 {
			x.out.Reasoning = sel.Reasoning
			if !sel.UseTool && len(sel.Unknown) > 0 {
				x.out.Degraded = fmt.Sprintf("model selected %q, which is not an available tool", sel.Unknown[0])
			}
		}
		if !sel.UseTool {
			x.out.Stopped = StopDone
			if round == 1 {
				x.out.Stopped = StopNoTool
			}
			break
		}
		capped := len(sel.Calls) > remaining
		if capped {
			x.addStep(Step{Kind: StepCapped, Round: round, StartMS: x.since(time.Now()),
				Detail: fmt.Sprintf("%d calls selected, %d left in the budget of %d", len(sel.Calls), remaining, x.budget)})
			sel.Calls = sel.Calls[:remaining]
		}
		direct = sel.Direct
		failed, modelErr := x.runRound(ctx, snap, ps, round, sel)
		if expired(ctx) {
			x.deadlineHit(round)
			break
		}
		if modelErr != nil {
			return x.modelFailure(phase("writing arguments", round), modelErr)
		}
		if capped {
			x.out.Stopped = StopMaxToolCalls
			break
		}
		if !sel.NeedsMore && !failed {
			x.out.Stopped = StopDone
			break
		}
	}
	x.out.Direct = direct && (x.out.Stopped == StopDone || x.out.Stopped == StopMaxToolCalls) && x.allOK()
	return nil
}

// begin starts the transcript: the system prompt, the history, the query last.
func (x *run) begin(system string) {
	x.base = append(x.base, api.Message{Role: "system", Content: system})
	for _, h := range x.req.History {
		x.base = append(x.base, api.Message{Role: h.Role, Content: h.Content})
	}
	x.base = append(x.base, api.Message{Role: "user", Content: x.req.Query})
	x.seen = map[string]int{}
}

func phase(name string, round int) string {
	if round == 1 {
		return name
	}
	return fmt.Sprintf("%s (round %d)", name, round)
}

// runRound writes the arguments of the round's calls, deduplicates them and executes the rest,
// reporting whether any call failed and the first model failure. Calls of a round run
// concurrently, at most ParallelCalls at a time; a call that fails records its error and never
// stops the others (the group's functions never return errors).
func (x *run) runRound(ctx context.Context, snap *inventory.Snapshot, ps *promptSet, round int, sel selection) (failed bool, modelErr error) {
	first := len(x.out.Calls) + 1
	calls := make([]*Call, len(sel.Calls))
	tools := make([]*inventory.Tool, len(sel.Calls))
	for i, sc := range sel.Calls {
		tools[i], _ = snap.Tool(sc.Tool)
		calls[i] = &Call{Step: first + i, Round: round, Task: sc.Task, Server: tools[i].Server, Tool: tools[i].Name}
		x.emit(Event{Type: EventToolCallStart, Round: round, Call: copyCall(calls[i])})
	}
	priors := x.priors

	errs := make([]error, len(calls))
	x.each(len(calls), func(i int) { errs[i] = x.arguments(ctx, ps, tools[i], calls[i], priors) })
	for _, err := range errs {
		if err != nil && modelErr == nil {
			modelErr = err
		}
	}

	return x.executeRound(ctx, round, calls, tools), modelErr
}

// executeRound deduplicates the round's calls that have arguments, executes the rest concurrently
// (at most ParallelCalls at a time; a failing call records its error and never stops the others),
// and appends every call, in selection order, to the outcome. It reports whether any call failed.
func (x *run) executeRound(ctx context.Context, round int, calls []*Call, tools []*inventory.Tool) (failed bool) {
	var run []int
	reused := map[int]int{} // index in calls → step whose result answers it
	for i, c := range calls {
		if c.Error != nil {
			continue
		}
		x.emit(Event{Type: EventToolCallComplete, Round: round, Call: copyCall(c)})
		key := canonicalCall(c.Server, c.Tool, c.Arguments)
		if step, ok := x.seen[key]; ok {
			reused[i] = step
			continue
		}
		x.seen[key] = c.Step
		run = append(run, i)
	}
	x.each(len(run), func(k int) { x.execute(ctx, tools[run[k]], calls[run[k]]) })

	for i, c := range calls {
		if step, ok := reused[i]; ok {
			src := x.callByStep(step, calls)
			c.ReusedFrom, c.Result, c.Error = step, src.Result, src.Error
			x.addStep(Step{Kind: StepDedup, Round: round, Call: c.Step, Tool: qualified(c), StartMS: x.since(time.Now()),
				Detail: fmt.Sprintf("same call as step %d; its result is reused", step)})
			x.emit(Event{Type: EventToolResult, Round: round, Call: copyCall(c)})
		}
		if c.Result == nil && c.Arguments != nil {
			// Only calls that produced a result answer later identical calls; a timed-out or
			// broken call may be retried.
			if key := canonicalCall(c.Server, c.Tool, c.Arguments); x.seen[key] == c.Step {
				delete(x.seen, key)
			}
		}
		failed = failed || !c.ok()
		x.out.Calls = append(x.out.Calls, *c)
		x.priors = append(x.priors, priorOf(c))
	}
	x.rounds[len(x.rounds)-1].steps = stepsOf(calls)
	x.rounds[len(x.rounds)-1].remaining = x.budget - len(x.out.Calls)
	return failed
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
func (x *run) callByStep(step int, round []*Call) *Call {
	for _, c := range round {
		if c.Step == step {
			return c
		}
	}
	return &x.out.Calls[step-1]
}

func stepsOf(calls []*Call) []int {
	steps := make([]int, len(calls))
	for i, c := range calls {
		steps[i] = c.Step
	}
	return steps
}

func (x *run) priorsOf(steps []int) []prompts.Prior {
	out := make([]prompts.Prior, 0, len(steps))
	for _, s := range steps {
		out = append(out, x.priors[s-1])
	}
	return out
}

// priorOf is how a finished call appears in later prompts.
func priorOf(c *Call) prompts.Prior {
	p := prompts.Prior{Step: c.Step, Tool: qualified(c), Arguments: string(marshal(c.Arguments))}
	if p.Arguments == "" || p.Arguments == "null" {
		p.Arguments = "{}"
	}
	switch {
	case c.Error != nil:
		p.Text, p.Failed = c.Error.Message, true
	case c.Result == nil:
		p.Text, p.Failed = "no result", true
	default:
		p.Text, p.Failed = c.Result.Text, c.Result.IsError
		if p.Text == "" && c.Result.Structured != nil {
			p.Text = string(marshal(c.Result.Structured))
		}
	}
	return p
}

func qualified(c *Call) string { return inventory.Qualify(c.Server, c.Tool) }

func copyCall(c *Call) *Call {
	cp := *c
	return &cp
}

// allOK reports whether every call produced a usable result.
func (x *run) allOK() bool {
	for i := range x.out.Calls {
		if !x.out.Calls[i].ok() {
			return false
		}
	}
	return len(x.out.Calls) > 0
}

// expired reports whether the request's own deadline (or its caller) ended it.
func expired(ctx context.Context) bool { return ctx.Err() != nil }

func (x *run) deadlineHit(round int) {
	x.out.Stopped = StopDeadline
	x.addStep(Step{Kind: StepDeadline, Round: round, StartMS: x.since(time.Now()),
		Detail: fmt.Sprintf("request deadline of %s reached after %d calls", x.deadline, len(x.out.Calls))})
	if len(x.out.Calls) == 0 {
		x.out.Degraded = fmt.Sprintf("request deadline of %s reached before a tool was chosen", x.deadline)
	}
}

// modelFailure applies the failure mode to a model error.
func (x *run) modelFailure(phase string, err error) error {
	x.r.log.Warn("model failure", "phase", phase, "err", err, "request_id", x.id)
	x.out.Stopped = StopModelFailure
	if x.r.set.OnModelFailure == Fail {
		return errors.Join(ErrModel, &PhaseError{Phase: phase, Err: err})
	}
	x.out.Direct = false
	x.out.Degraded = phase + ": " + err.Error()
	return nil
}

// finish completes the outcome: the first call at the top level, use_tool, total time.
func (x *run) finish(err error) (*Outcome, error) {
	out := x.out
	out.RequestID = x.id
	out.Timings.Total = ms(time.Since(x.start))
	for _, v := range []*float64{&out.Timings.Select, &out.Timings.Arguments, &out.Timings.Execute} {
		*v = math.Round(*v*1000) / 1000
	}
	for i := range out.Calls {
		c := &out.Calls[i]
		if c.Arguments != nil || (c.Error != nil && c.Error.Code == CodeInvalidArguments) {
			out.UseTool = true
		}
	}
	if len(out.Calls) > 0 {
		c := out.Calls[0]
		out.Server, out.Tool, out.Arguments, out.Result, out.Error, out.Attempts = c.Server, c.Tool, c.Arguments, c.Result, c.Error, c.Attempts
	}
	if !out.UseTool {
		out.Direct = false
	}
	return out, err
}

// addStep appends a trace step, numbering steps in the order they finish, and returns it.
func (x *run) addStep(s Step) Step {
	x.mu.Lock()
	defer x.mu.Unlock()
	s.Index = len(x.out.Trace) + 1
	x.out.Trace = append(x.out.Trace, s)
	return s
}

// emit reports an event to the request's observer, one at a time.
func (x *run) emit(ev Event) {
	if x.req.OnEvent == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.req.OnEvent(ev)
}

// addUsage counts a model call and adds its duration to a phase timing.
func (x *run) addUsage(rep reply, timing *float64, d time.Duration) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.out.Usage.add(rep)
	*timing += ms(d)
}

func (x *run) since(t time.Time) float64 { return ms(t.Sub(x.start)) }

// modelStep is the trace step of one model call that started at t0.
func (x *run) modelStep(kind StepKind, round int, t0 time.Time, rep reply) Step {
	return Step{Kind: kind, Round: round, Model: x.r.set.Model, StartMS: x.since(t0), DurationMS: ms(rep.Duration),
		PromptTokens: rep.PromptTokens, CompletionTokens: rep.CompletionTokens}
}
