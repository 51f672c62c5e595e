package router

import (
	"encoding/json"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/provider"
	"toolrouter/redact"
	"toolrouter/trajectory"
)

// journal is the append-only record of one request: its trace, calls, usage and timings (the
// Outcome being built), the streamed events and the trajectory records. It decides nothing; the
// loop and the planners report to it. All of its methods are safe for concurrent use.
type journal struct {
	id       string
	identity string // who the request acts for, as Identity.String writes it
	query    string // the request's query, for the calls it holds ("" for a call made directly)
	start    time.Time
	model    string
	recorder Recorder
	red      *redact.Redactor // masks the trajectory records
	onEvent  func(Event)
	recSeq   atomic.Int64

	mu  sync.Mutex // guards out and serialises onEvent
	out *Outcome   // points at outcome

	// outcome, the room for its first steps and calls and the breakdowns of its first model calls
	// live in the journal's own allocation: a request makes a few of each.
	outcome    Outcome
	traceRoom  [4]Step
	callRoom   [2]Call
	breakdowns [2]provider.Breakdown
	kept       int // breakdowns used; guarded by mu
}

func newJournal(model, identity string, rec Recorder, red *redact.Redactor, onEvent func(Event)) *journal {
	j := &journal{id: newID(), identity: identity, start: time.Now(), model: model, recorder: rec, red: red, onEvent: onEvent}
	j.outcome = Outcome{Calls: j.callRoom[:0], Trace: j.traceRoom[:0]}
	j.out = &j.outcome
	return j
}

// breakdown is b kept for a model call's step.
func (j *journal) breakdown(b provider.Breakdown) *provider.Breakdown {
	j.mu.Lock()
	defer j.mu.Unlock()
	var p *provider.Breakdown
	if j.kept < len(j.breakdowns) {
		p = &j.breakdowns[j.kept]
		j.kept++
	} else {
		p = new(provider.Breakdown)
	}
	*p = b
	return p
}

// phaseTiming names the timing a model call or tool call adds to.
type phaseTiming int

const (
	timingSelect phaseTiming = iota
	timingArguments
	timingExecute
)

// step appends a trace step, numbering steps in the order they finish, and returns it.
func (j *journal) step(s Step) Step {
	j.mu.Lock()
	defer j.mu.Unlock()
	s.Index = len(j.out.Trace) + 1
	j.out.Trace = append(j.out.Trace, s)
	return s
}

// note appends a trace step of the given kind happening now.
func (j *journal) note(kind StepKind, round int, detail string) {
	j.step(Step{Kind: kind, Round: round, StartMS: j.since(time.Now()), Detail: detail})
}

// event reports an event to the request's observer, one at a time.
func (j *journal) event(ev Event) {
	if j.onEvent == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.onEvent(ev)
}

// listening reports whether the request has an observer: callers build no event data otherwise.
func (j *journal) listening() bool { return j.onEvent != nil }

// callEvent reports a call's progress with a copy of the call as it is now (it changes later).
func (j *journal) callEvent(t EventType, round int, c *Call) {
	if j.onEvent == nil {
		return
	}
	j.event(Event{Type: t, Round: round, Call: copyCall(c)})
}

// timed adds d to a phase's timing and, for a model call, counts its usage.
func (j *journal) timed(p phaseTiming, rep *reply, d time.Duration) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if rep != nil {
		j.out.Usage.add(*rep)
	}
	switch p {
	case timingSelect:
		j.out.Timings.Select += ms(d)
	case timingArguments:
		j.out.Timings.Arguments += ms(d)
	case timingExecute:
		j.out.Timings.Execute += ms(d)
	}
}

// modelCall records one model call that started at t0: its usage and timing, and returns its
// trace step (not yet appended: the caller adds what it decided).
func (j *journal) modelCall(p phaseTiming, kind StepKind, round int, t0 time.Time, rep reply) Step {
	j.timed(p, &rep, rep.Duration)
	s := Step{Kind: kind, Round: round, Model: j.model, StartMS: j.since(t0), DurationMS: ms(rep.Duration),
		PromptTokens: rep.Stats.PromptTokens, CompletionTokens: rep.Stats.DecodeTokens, EstimatedTokens: rep.Estimated,
		OverEstimate: rep.Exceeded, Breakdown: j.breakdown(rep.Stats.Breakdown)}
	if rep.Calls > 1 {
		s.ModelCalls = rep.Calls
	}
	return s
}

// trimmed marks the outcome trimmed and notes what was cut.
func (j *journal) trimmed(round int, detail string) {
	j.mu.Lock()
	j.out.Trimmed = true
	j.mu.Unlock()
	j.note(StepTrim, round, detail)
}

// addCall appends a finished call to the outcome.
func (j *journal) addCall(c Call) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.out.Calls = append(j.out.Calls, c)
}

// calls returns the finished calls so far (a copy of the slice header: calls are never changed
// once added).
func (j *journal) calls() []Call {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.out.Calls[:len(j.out.Calls):len(j.out.Calls)]
}

// update changes the outcome's decision fields under the lock.
func (j *journal) update(f func(o *Outcome)) {
	j.mu.Lock()
	defer j.mu.Unlock()
	f(j.out)
}

// recording reports whether the request's steps are recorded: callers build no record data
// otherwise.
func (j *journal) recording() bool { return j.recorder != nil }

// record sends a trajectory record of one model call or tool call. The log is kept at rest, and a
// model's answer is recorded before its call is checked: every credential the Redactor finds
// (configured, in a URL, or of a well-known format) is masked in all of it.
func (j *journal) record(kind string, step Step, msgs []api.Message, format []byte, raw string, parsed any, obs any, out trajectory.Outcome) {
	if j.recorder == nil {
		return
	}
	state := make([]trajectory.Message, len(msgs))
	for i, m := range msgs {
		state[i] = trajectory.Message{Role: m.Role, Content: j.red.Credentials(m.Content)}
	}
	j.recorder.Record(trajectory.Record{
		Time: time.Now(), RequestID: j.id, Identity: j.identity, Step: int(j.recSeq.Add(1)), Kind: kind, Model: step.Model,
		State: state, Format: format, Action: trajectory.Action{Raw: j.red.Credentials(raw), Parsed: j.red.CredentialsJSON(marshal(parsed))},
		Observation: j.red.CredentialsJSON(marshal(obs)), Outcome: out, DurationMS: step.DurationMS,
		PromptTokens: step.PromptTokens, CompletionTokens: step.CompletionTokens, Breakdown: step.Breakdown,
	})
}

// finish completes the outcome: the first call at the top level, use_tool, total time.
func (j *journal) finish() *Outcome {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := j.out
	out.RequestID, out.Identity = j.id, j.identity
	out.Timings.Total = ms(time.Since(j.start))
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
	return out
}

func (j *journal) since(t time.Time) float64 { return ms(t.Sub(j.start)) }

func marshal(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

func boolPtr(b bool) *bool { return &b }
