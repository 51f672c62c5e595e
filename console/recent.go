package console

import (
	"context"
	"encoding/json"
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
// observer (observe.Observer) that copies each report into a ring of at most n reports holding at
// most maxBytes together, under a mutex. Probes, metrics scrapes and the console's own requests
// are not kept.
//
// A report is kept whole (its routing outcome, tool results included, each already cut to
// router.max_result_bytes, and its council run) until the ring comes round to its slot or the
// bytes of newer reports push it out, oldest first; nothing else holds it. The tokens of held calls are not kept. A report's bytes are
// its outcome's and council run's JSON, as GET /ui/api/requests/ID answers them. A report over
// maxBytes by itself is kept without its tool results' text and structured content (they are
// marked truncated), or not at all when it is still over.
type Recent struct {
	mu       sync.Mutex // guards slots, first, last and bytes
	slots    []kept
	first    uint64 // the id of the oldest report kept; first > last when none is
	last     uint64 // the id of the newest report; ids start at 1
	bytes    int    // the kept reports' sizes, summed
	maxBytes int
}

type kept struct {
	id   uint64
	size int
	rep  observe.Report
	// decided are the decisions on its held calls made after it answered (Decided).
	decided []decision
}

// decision is what became of a held call of a kept request: its step and the outcome.
type decision struct {
	step    int
	outcome string
}

// DefaultRecentBytes is ui.recent_requests_bytes's default: about 64 reports carrying a tool
// result at the default router.max_result_bytes each, a hundred of ordinary size many times over.
const DefaultRecentBytes = 16 << 20

// NewRecent returns a ring of n reports holding at most maxBytes together (DefaultRecentBytes
// when it is 0 or less); with n 0 it keeps none.
func NewRecent(n, maxBytes int) *Recent {
	if maxBytes <= 0 {
		maxBytes = DefaultRecentBytes
	}
	return &Recent{slots: make([]kept, max(n, 0)), first: 1, maxBytes: maxBytes}
}

// Cap is how many reports the ring keeps.
func (r *Recent) Cap() int { return len(r.slots) }

// Bytes returns the bytes the kept reports hold together and the most they may.
func (r *Recent) Bytes() (held, most int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bytes, r.maxBytes
}

// unkept are the endpoints whose reports are not kept: probes and scrapes.
var unkept = []string{"/healthz", "/readyz", "/metrics"}

// Observe keeps a copy of rep, dropping the oldest reports until the ring holds no more than its
// bytes. It does not block on anything but the ring's mutex.
func (r *Recent) Observe(_ context.Context, rep *observe.Report) {
	if len(r.slots) == 0 || slices.Contains(unkept, rep.Endpoint) || strings.HasPrefix(rep.Endpoint, PathPrefix) {
		return
	}
	c := *rep
	c.Header = nil // it reads the request's headers, which are gone
	c.Outcome = withoutTokens(c.Outcome)
	size := reportBytes(&c)
	if size > r.maxBytes && c.Outcome != nil {
		c.Outcome = withoutResults(c.Outcome)
		size = reportBytes(&c)
	}
	if size > r.maxBytes {
		return
	}
	n := uint64(len(r.slots))
	r.mu.Lock()
	r.last++
	for r.first <= r.last-1 && (r.last-r.first >= n || r.bytes+size > r.maxBytes) {
		r.drop()
	}
	r.slots[r.last%n] = kept{id: r.last, size: size, rep: c}
	r.bytes += size
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

// drop forgets the oldest report kept. The caller holds mu.
func (r *Recent) drop() {
	k := &r.slots[r.first%uint64(len(r.slots))]
	r.bytes -= k.size
	*k = kept{}
	r.first++
}

// held reports whether the ring holds the report of that id. The caller holds mu.
func (r *Recent) held(id uint64) bool { return id >= r.first && id <= r.last && id > 0 }

// reportBytes is what a report holds, as the JSON of its outcome and council run, and a little
// for the rest of it.
func reportBytes(rep *observe.Report) int {
	const rest = 512 // the report's own fields, each other model call's
	n := rest * (1 + len(rep.ModelCalls))
	if rep.Outcome != nil {
		bp := scratch.Get().(*[]byte)
		b, _ := rep.Outcome.AppendJSON((*bp)[:0])
		n += len(b)
		if cap(b) <= 1<<20 { // a larger buffer is left to the collector
			*bp = b
			scratch.Put(bp)
		}
	}
	if rep.Council != nil {
		var c counter
		_ = json.NewEncoder(&c).Encode(rep.Council)
		n += int(c)
	}
	return n
}

// scratch holds buffers for measuring outcomes.
var scratch = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// counter counts what is written to it.
type counter int

func (c *counter) Write(p []byte) (int, error) {
	*c += counter(len(p))
	return len(p), nil
}

// withoutResults is a copy of o whose tool results keep neither text nor structured content:
// what the ring keeps of a report over its whole bound.
func withoutResults(o *router.Outcome) *router.Outcome {
	c := *o
	c.Result = resultStub(o.Result)
	c.Calls = slices.Clone(o.Calls)
	for i := range c.Calls {
		c.Calls[i].Result = resultStub(c.Calls[i].Result)
	}
	return &c
}

func resultStub(r *router.Result) *router.Result {
	if r == nil {
		return nil
	}
	s := *r
	if s.TextBytes == 0 {
		s.TextBytes = len(s.Text)
	}
	s.Text, s.Structured, s.Truncated = "", nil, true
	return &s
}

// PathPrefix starts every path of the console.
const PathPrefix = "/ui"

// List returns the kept reports' summaries, newest first.
func (r *Recent) List() []Summary {
	r.mu.Lock()
	ks := make([]kept, 0, len(r.slots))
	for id := r.last; r.held(id); id-- {
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
	ok := len(r.slots) > 0 && r.held(id)
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
