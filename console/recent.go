package console

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"toolrouter/council"
	"toolrouter/observe"
	"toolrouter/provider"
	"toolrouter/router"
)

// Recent keeps the last reports of served requests in memory, for the recent requests page: an
// observer (observe.Observer) that copies each report into a ring of fixed size, under a mutex,
// without allocating. Probes, metrics scrapes and the console's own requests are not kept.
//
// A report is kept whole (its routing outcome, tool results included, and its council run) until
// the ring comes round to its slot; nothing else holds it. The tokens of held calls are not kept.
type Recent struct {
	mu    sync.Mutex // guards slots and last
	slots []kept
	last  uint64 // the id of the newest report; ids start at 1
}

type kept struct {
	id  uint64
	rep observe.Report
	// decided are the decisions on its held calls made after it answered (Decided).
	decided []decision
}

// decision is what became of a held call of a kept request: its step and the outcome.
type decision struct {
	step    int
	outcome string
}

// NewRecent returns a ring of n reports; with n 0 it keeps none.
func NewRecent(n int) *Recent {
	return &Recent{slots: make([]kept, max(n, 0))}
}

// Cap is how many reports the ring keeps.
func (r *Recent) Cap() int { return len(r.slots) }

// unkept are the endpoints whose reports are not kept: probes and scrapes.
var unkept = []string{"/healthz", "/readyz", "/metrics"}

// Observe keeps a copy of rep. It does not block on anything but the ring's mutex.
func (r *Recent) Observe(_ context.Context, rep *observe.Report) {
	if len(r.slots) == 0 || slices.Contains(unkept, rep.Endpoint) || strings.HasPrefix(rep.Endpoint, PathPrefix) {
		return
	}
	c := *rep
	c.Header = nil // it reads the request's headers, which are gone
	c.Outcome = withoutTokens(c.Outcome)
	r.mu.Lock()
	r.last++
	r.slots[r.last%uint64(len(r.slots))] = kept{id: r.last, rep: c}
	r.mu.Unlock()
}

// Decided notes what became of the held call at step of the request requestID (its outcome's
// request_id), decided after the request answered: "approved", "declined", "withdrawn" or
// "expired". A request the ring no longer keeps, or never kept, is left alone.
func (r *Recent) Decided(requestID string, step int, outcome string) {
	if requestID == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.slots {
		k := &r.slots[i]
		if k.rep.Outcome != nil && k.rep.Outcome.RequestID == requestID {
			k.decided = append(k.decided, decision{step: step, outcome: outcome})
			return
		}
	}
}

// withoutTokens returns o without the tokens of its held calls, which approve them: the ring keeps
// no secret an admin of another org could read and use. o itself, which others hold, is left
// as it is; an outcome without held calls is returned as it is.
func withoutTokens(o *router.Outcome) *router.Outcome {
	if o == nil || len(o.Pending) == 0 {
		return o
	}
	c := *o
	c.Pending = slices.Clone(o.Pending)
	for i := range c.Pending {
		c.Pending[i].Token = ""
	}
	c.Calls = slices.Clone(o.Calls)
	for i := range c.Calls {
		if p := c.Calls[i].Pending; p != nil {
			q := *p
			q.Token = ""
			c.Calls[i].Pending = &q
		}
	}
	return &c
}

// PathPrefix starts every path of the console.
const PathPrefix = "/ui"

// List returns the kept reports' summaries, newest first.
func (r *Recent) List() []Summary {
	r.mu.Lock()
	ks := make([]kept, 0, len(r.slots))
	for id := r.last; id > 0 && r.last-id < uint64(len(r.slots)); id-- {
		ks = append(ks, r.slots[id%uint64(len(r.slots))])
	}
	r.mu.Unlock()
	out := make([]Summary, len(ks))
	for i, k := range ks {
		out[i] = summarise(k)
	}
	return out
}

// Get returns the report of that id, while the ring still holds it.
func (r *Recent) Get(id uint64) (*Detail, bool) {
	r.mu.Lock()
	var k kept
	ok := len(r.slots) > 0 && id > 0 && id <= r.last && r.last-id < uint64(len(r.slots))
	if ok {
		k = r.slots[id%uint64(len(r.slots))]
	}
	r.mu.Unlock()
	if !ok {
		return nil, false
	}
	d := &Detail{Summary: summarise(k), Outcome: k.rep.Outcome, Council: k.rep.Council}
	for _, m := range k.rep.ModelCalls {
		d.ModelCalls = append(d.ModelCalls, ModelCall{Phase: m.Phase, Model: m.Model, StartMS: ms(m.Start.Sub(k.rep.Start)),
			DurationMS: ms(m.Duration), PromptTokens: m.PromptTokens, CompletionTokens: m.CompletionTokens, Breakdown: m.Breakdown, Error: m.Err})
	}
	return d, true
}

// Summary is one kept request, as the recent requests page lists it.
type Summary struct {
	ID         uint64    `json:"id"`
	Start      time.Time `json:"start"`
	DurationMS float64   `json:"duration_ms"`
	Endpoint   string    `json:"endpoint"`
	Method     string    `json:"method,omitempty"`
	Status     int       `json:"status"`
	ErrorCode  string    `json:"error_code,omitempty"`
	// Identity is who the request acted for; "" when its credential was missing or refused.
	Identity string `json:"identity"`
	// UseTool, Tools (qualified, in call order), Stopped and DegradedReason are the routing's,
	// when the request routed.
	UseTool        bool     `json:"use_tool"`
	Tools          []string `json:"tools,omitempty"`
	Stopped        string   `json:"stopped,omitempty"`
	DegradedReason string   `json:"degraded_reason,omitempty"`
	// AnsweredBy is the council's, when it ran.
	AnsweredBy string `json:"answered_by,omitempty"`
	// ModelCalls, PromptTokens and CompletionTokens sum the routing's, the council's and the
	// other model calls (a chat completion's).
	ModelCalls       int `json:"model_calls"`
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// Held are the calls that a person's approval stopped, and what became of each as far as
	// this server knows.
	Held []HeldCall `json:"held,omitempty"`
}

// HeldCall is a call of a request that was held for approval.
type HeldCall struct {
	Step int    `json:"step"`
	Tool string `json:"tool"` // qualified
	// State is "held" (awaiting a decision), "approved", "declined", "withdrawn" (its waiting
	// request's client left) or "expired" (nobody decided in time).
	State string `json:"state"`
}

// Detail is one kept request whole: its summary, its routing outcome (as /v1/route answers it)
// and its council run (as /v1/answer's council), for its timeline.
type Detail struct {
	Summary
	Outcome    *router.Outcome `json:"outcome,omitempty"`
	Council    *council.Result `json:"council,omitempty"`
	ModelCalls []ModelCall     `json:"other_model_calls,omitempty"`
}

// ModelCall is a model call made outside routing and the council (a chat completion's).
type ModelCall struct {
	Phase            string  `json:"phase"`
	Model            string  `json:"model"`
	StartMS          float64 `json:"start_ms"` // since the request started
	DurationMS       float64 `json:"duration_ms"`
	PromptTokens     int     `json:"prompt_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	provider.Breakdown
	Error string `json:"error,omitempty"`
}

func summarise(k kept) Summary {
	r := k.rep
	s := Summary{ID: k.id, Start: r.Start.UTC(), DurationMS: ms(r.Duration), Endpoint: r.Endpoint, Method: r.Method,
		Status: r.Status, ErrorCode: r.ErrorCode}
	if r.Authenticated {
		s.Identity = r.Identity.String()
	}
	if o := r.Outcome; o != nil {
		s.UseTool, s.Stopped, s.DegradedReason = o.UseTool, string(o.Stopped), string(o.DegradedReason)
		for _, c := range o.Calls {
			if c.Server != "" {
				s.Tools = append(s.Tools, c.Server+"."+c.Tool)
			}
		}
		s.Held = heldCalls(o, k.decided, time.Now())
		s.ModelCalls += o.Usage.LLMCalls
		s.PromptTokens += o.Usage.PromptTokens
		s.CompletionTokens += o.Usage.CompletionTokens
	}
	if c := r.Council; c != nil {
		s.AnsweredBy = string(c.AnsweredBy)
		s.ModelCalls += c.Usage.Total.Calls
		s.PromptTokens += c.Usage.Total.PromptTokens
		s.CompletionTokens += c.Usage.Total.CompletionTokens
	}
	for _, m := range r.ModelCalls {
		s.ModelCalls++
		s.PromptTokens += m.PromptTokens
		s.CompletionTokens += m.CompletionTokens
	}
	return s
}

// heldCalls are o's calls that were held, and their states: from their codes and trace (a call
// approved while its route waited ran in it), then the decisions made after the request answered;
// a call still held past its token's expiry is expired.
func heldCalls(o *router.Outcome, decided []decision, now time.Time) []HeldCall {
	var out []HeldCall
	for _, c := range o.Calls {
		state := ""
		if c.Error != nil {
			switch c.Error.Code {
			case router.CodeApprovalRequired, router.CodeApprovalTimeout:
				state = "held"
			case router.CodeDeclined:
				state = "declined"
			case router.CodeWithdrawn:
				state = "withdrawn"
			}
		}
		if state == "" && slices.ContainsFunc(o.Trace, func(s router.Step) bool { return s.Kind == router.StepApproved && s.Call == c.Step }) {
			state = "approved"
		}
		if state == "" {
			continue
		}
		for _, d := range decided {
			if d.step == c.Step {
				state = d.outcome
			}
		}
		if state == "held" {
			for _, p := range o.Pending {
				if p.Step == c.Step && !p.ExpiresAt.IsZero() && !now.Before(p.ExpiresAt) {
					state = "expired"
				}
			}
		}
		out = append(out, HeldCall{Step: c.Step, Tool: c.Server + "." + c.Tool, State: state})
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
