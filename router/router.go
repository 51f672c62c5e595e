// Package router decides, for one query, whether tools are needed, which ones and with what
// arguments, runs the calls and loops until the model has what it needs. In two-phase mode each
// round is a selection (phase 1) and, per selected call, arguments written under the tool's schema
// and validated (phase 2); in native mode it is Ollama's own tool-calling loop. Both share the
// guardrails: a call budget, dedup, a request deadline, failure feedback and context trimming.
// It talks to the model through a Chatter and to tools through a ToolCaller; it owns no MCP
// sessions, HTTP or configuration loading.
package router

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/ollama/ollama/api"

	"toolrouter/access"
	"toolrouter/approval"
	"toolrouter/inventory"
	"toolrouter/prefill"
	"toolrouter/provider"
	"toolrouter/redact"
	"toolrouter/retrieve"
	"toolrouter/tokens"
)

// Chatter is the one model call the router makes; *api.Client and *provider.Ollama satisfy it.
type Chatter interface {
	Chat(ctx context.Context, req *api.ChatRequest, fn api.ChatResponseFunc) error
}

// Inventory gives the current tools.
type Inventory interface {
	Snapshot() *inventory.Snapshot
}

// ToolCaller runs one tool call.
type ToolCaller interface {
	CallTool(ctx context.Context, server, tool string, args map[string]any) (*mcp.CallToolResult, error)
}

// FailureMode says what a model failure does to a request (router.on_model_failure).
type FailureMode string

// Failure modes.
const (
	// NoTool answers use_tool:false with a degraded reason, so the caller goes on without tools.
	NoTool FailureMode = "no_tool"
	// Fail returns the model error to the caller.
	Fail FailureMode = "fail"
)

// Mode is how the model is asked for tool calls (router.mode).
type Mode string

// Modes.
const (
	// TwoPhase selects under a format schema, then writes each call's arguments under the tool's.
	TwoPhase Mode = "two_phase"
	// Native uses Ollama's tools field and the model's tool_calls.
	Native Mode = "native"
)

// Reasoning is what phase 1 writes besides its decision (router.reasoning).
type Reasoning string

// Reasoning settings.
const (
	ReasoningNone  Reasoning = "none"
	ReasoningBrief Reasoning = "brief"
	ReasoningFull  Reasoning = "full"
)

// Reasonings are the values of Reasoning, the fewest tokens first.
var Reasonings = []Reasoning{ReasoningNone, ReasoningBrief, ReasoningFull}

// The defaults of Settings: New gives a zero field these, and package config's router.* and
// ollama.options defaults are these.
const (
	DefaultOnModelFailure = NoTool
	DefaultMode           = TwoPhase
	DefaultReasoning      = ReasoningNone
	DefaultRepairAttempts = 2
	DefaultMaxToolCalls   = 4
	DefaultParallelCalls  = 4
	DefaultDeadline       = time.Minute
	// DefaultPhaseTimeout bounds one phase-1 call, one call's phase 2 and one tool call.
	DefaultPhaseTimeout   = 30 * time.Second
	DefaultContextReserve = 1024
	// DefaultAutoExecute is safety.auto_execute's default: a call that may destroy something
	// (MCP's default for a tool that says nothing) waits for a person, while reads and
	// declared-harmless writes run; the built-ins are read-only, so they run under it.
	DefaultAutoExecute = access.NotDestructive
	// DefaultMaxQueryBytes and DefaultMaxHistory bound a request's query and history (the doors
	// check them before routing).
	DefaultMaxQueryBytes = 16384
	DefaultMaxHistory    = 20
	// DefaultMaxResultBytes bounds a tool result's text and, apart, its structured content's JSON
	// (router.max_result_bytes): a tool answering megabytes cannot swell every response, prompt,
	// log and kept report that carries its result.
	DefaultMaxResultBytes = 256 << 10
)

// DefaultOptions are the model options sent with every call when none are set: deterministic
// answers and a context of 8192 tokens (Ollama's own default has changed between versions).
func DefaultOptions() map[string]any {
	return map[string]any{"temperature": 0, "num_ctx": 8192, "seed": 42}
}

// Settings tune a Router; New gives a zero field its default (DefaultMode, …).
type Settings struct {
	Model     string
	KeepAlive time.Duration
	// Think lets a thinking model think before its answer. Off, Ollama applies the format schema
	// from the first token; on, only after the thinking ends.
	Think bool
	// Options are Ollama's model options (temperature, num_ctx, seed, …), over DefaultOptions for
	// those not set. num_ctx sizes the context budget and is always sent (Ollama's own default has
	// changed between versions), capped at the model's trained length when the client can tell it.
	Options map[string]any
	// Mode is TwoPhase or Native.
	Mode Mode
	// Reasoning is what phase 1 writes besides its decision: ReasoningNone (the zero value is
	// taken as it), ReasoningBrief or ReasoningFull.
	Reasoning Reasoning
	// MinConfidence, when above 0, is the lowest confidence in phase 1's choice of tools that is
	// followed; below it the round makes no call and the outcome is degraded "low_confidence".
	MinConfidence float64
	// CallTimeout bounds each model call.
	CallTimeout time.Duration
	// MaxResponseBytes bounds each model answer (text, thinking and tool calls); past it the call
	// stops reading and fails as a model failure.
	MaxResponseBytes int
	// SelectTimeout and ArgumentsTimeout bound one phase-1 call and one call's phase 2 (all repair
	// attempts included).
	SelectTimeout    time.Duration
	ArgumentsTimeout time.Duration
	// ExecuteTimeout bounds each tool call.
	ExecuteTimeout time.Duration
	// MaxResultBytes bounds what a tool result carries: its text (longer keeps its head and tail,
	// the cut marked) and its structured content's JSON (longer is dropped), each apart.
	MaxResultBytes int
	// RepairAttempts is how many times invalid arguments are sent back to the model.
	RepairAttempts int
	OnModelFailure FailureMode
	// MaxToolCalls is the ceiling of calls per request.
	MaxToolCalls int
	// ParallelCalls bounds the calls of one round running at once.
	ParallelCalls int
	// Deadline bounds a whole request.
	Deadline time.Duration
	// ContextReserve is the part of num_ctx kept for the model's answer.
	ContextReserve int
	// Recorder, if set, receives a trajectory record of every step.
	Recorder Recorder
	// Access, if set, limits the tools each identity is offered and may call; unset, every
	// identity may use every tool.
	Access Access
	// Ranker, if set, ranks the tools for each query: when the inventory a caller may use does
	// not fit PromptBudget, phase 1 is shown the best-ranked tools that do.
	Ranker Ranker
	// PromptBudget is the tokens phase 1 may spend on its tool list (0: half of num_ctx minus
	// ContextReserve).
	PromptBudget int
	// Pinned are patterns, as access lists take them, of tools every shortlist shows first,
	// whatever the query (retrieval.pinned); the tools of a server the inventory marks pinned
	// (servers.NAME.pinned) are pinned too. Pinned tools count against PromptBudget.
	Pinned []string
	// MaxSearches bounds the searches beyond the shortlist that phase 1 may ask for per request.
	MaxSearches int
	// SearchWhenWeak: when a shortlist is weak (retrieve.Result.Weak), round 1's first selection
	// may answer "no tool" only with search words (needs MaxSearches).
	SearchWhenWeak bool
	// Estimator measures prompts before they are sent; the council may share it (nil: one of the
	// router's own).
	Estimator *tokens.Estimator
	// SharedPrefix opens each phase-2 prompt with phase 1's system prompt, so that a model
	// server with a single cache slot reuses the inventory's prefill across the phases.
	SharedPrefix bool
	// Approvals, if set, holds each call the identity's auto_execute level does not run (the
	// outcome lists it under Pending), and Approve runs a held call for its token; unset, every
	// call runs.
	Approvals Approvals
	// AutoExecute is the top auto_execute level (safety.auto_execute), narrowed per identity by
	// Access; it applies only with Approvals.
	AutoExecute access.AutoExecute
	// HeldShare is what each identity may hold awaiting approval (safety.max_held_per_identity,
	// max_held_bytes_per_identity, max_held_argument_bytes), its calls and bytes set per level by
	// Access (zero: approval.DefaultShare).
	HeldShare approval.Share
	// ApprovalWait is how long a route waits for a person's decision on a call it holds
	// (safety.approval_wait), set per level by Access; 0 answers at once with the call held.
	// Approved (Approve, Decline) in the same process meanwhile, the call runs in the route.
	ApprovalWait time.Duration
	// Approvers are who may decide on held calls beside the identity that asked (Decide,
	// safety.approvers), replaced per level by Access; none anywhere leaves it to admins.
	Approvers []string
	// OnHeld, if not nil, is told of each call held (OutcomeHeld: once its route may wait, before
	// anyone can decide it, so a webhook may tell a person) and of each outcome of one: approved,
	// declined, withdrawn, and expired when a decision came too late. key is the call's public id
	// (approval.Key); held is the call (its identity, request, step and expiry), as far as known.
	// It must not block.
	OnHeld func(d approval.Decision, key string, held approval.Call)
	// ResultsMayWiden lets rounds after the first choose tools round 1 was not offered, and
	// search after round 1 (safety.results_may_widen).
	ResultsMayWiden bool
	// Redactor finds credentials in a call's arguments (the call is refused unless its tool
	// accepts secrets, and its arguments masked), masks configured and URL credentials in results
	// before a model or caller sees them, and every credential it finds in trajectory records; nil
	// knows URL credentials and well-known credential formats only.
	Redactor *redact.Redactor
	// Prefill writes the parts of a constrained answer that its schema fixes (keys, punctuation)
	// as the start of the assistant's turn, and lets the model generate only the values it
	// decides, each continuing the answer (router.prefill; prefill.go). A server that does not
	// continue a final assistant message is detected, and answers go back to whole objects.
	Prefill bool
	// Renders says the Chatter renders a conversation through the model's template without
	// running the model (Ollama's _debug_render_only): with Prefill, the router reads from it what
	// the template writes before an answer, and whether it leaves a final assistant message open.
	Renders bool
	// Learner, if set, keeps the query of a request that was not degraded as an example of each
	// tool that answered it without error.
	Learner Learner
}

// Access decides which tools an identity may use; *access.Hierarchy satisfies it.
type Access interface {
	// Policy names the identity's policy (identities sharing a policy share cached prompts) and
	// says whether it permits a qualified tool name; the policy named access.AllName permits
	// every tool.
	Policy(id access.Identity) (name string, permits func(tool string) bool)
	// AutoExecute is the identity's auto_execute level under the top level (access.Narrow).
	AutoExecute(id access.Identity, top access.AutoExecute) access.AutoExecute
	// HeldShare is the identity's share of the held calls under the top share.
	HeldShare(id access.Identity, top access.HeldShare) access.HeldShare
	// ApprovalWait is the identity's approval wait under the top one.
	ApprovalWait(id access.Identity, top time.Duration) time.Duration
	// Approvers are who may decide on the identity's held calls beside it, under the top list.
	Approvers(id access.Identity, top []string) access.Approvers
	// NamesApprover reports whether any level names viewer among its approvers.
	NamesApprover(viewer access.Identity) bool
}

// Router runs the rounds. It is safe for concurrent use.
type Router struct {
	chat  Chatter
	inv   Inventory
	tools ToolCaller
	set   Settings
	log   *slog.Logger

	pinned *retrieve.Pinned // Settings.Pinned, compiled

	promptMu sync.Mutex            // guards prompts and costs
	prompts  map[string]*promptSet // by access policy, all of one inventory version
	pieces   *pieces               // of the same version

	views viewCache        // what is derived from the whole-inventory views
	pf    prefill.Template // what is known of continuing answers on the model server

	// clients are the routers Plan runs on the models callers name (client.go).
	clients clientRouters

	// waiting are the routes waiting for a decision on a call they hold, by the call's key.
	waiting *approval.Waiters[approval.Decision]

	// framing is the raw tokens the estimator counts around each message (window.measure).
	framing float64

	est          *tokens.Estimator
	options      atomic.Pointer[map[string]any] // model options sent with every call, num_ctx always set
	trained      atomic.Int64                   // the model's trained context length, once known
	askedTrained atomic.Int64                   // when it was last asked (unix ns)
}

// New returns a Router. A zero field of set takes its default (DefaultMode, DefaultOptions, …).
func New(chat Chatter, inv Inventory, tools ToolCaller, set Settings, log *slog.Logger) *Router {
	if log == nil {
		log = slog.Default()
	}
	orDefault(&set.OnModelFailure, DefaultOnModelFailure)
	orDefault(&set.Mode, DefaultMode)
	if !slices.Contains(Reasonings, set.Reasoning) {
		if set.Reasoning != "" {
			log.Warn("unknown router reasoning; using the default", "reasoning", set.Reasoning, "default", DefaultReasoning)
		}
		set.Reasoning = DefaultReasoning
	}
	orDefault(&set.MaxToolCalls, DefaultMaxToolCalls)
	orDefault(&set.ParallelCalls, DefaultParallelCalls)
	orDefault(&set.Deadline, DefaultDeadline)
	orDefault(&set.ContextReserve, DefaultContextReserve)
	orDefault(&set.MaxResponseBytes, provider.DefaultMaxResponseBytes)
	orDefault(&set.MaxResultBytes, DefaultMaxResultBytes)
	if set.Approvals != nil {
		orDefault(&set.AutoExecute, DefaultAutoExecute)
		orDefault(&set.HeldShare, approval.DefaultShare)
	}
	est := set.Estimator
	if est == nil {
		est = tokens.New()
	}
	r := &Router{chat: chat, inv: inv, tools: tools, set: set, log: log, est: est, pinned: retrieve.NewPinned(set.Pinned),
		waiting: approval.NewWaiters[approval.Decision](approval.MaxHeld)}
	r.framing = est.Messages(set.Model, []api.Message{{}}).Raw // an empty message is its framing alone
	// Model options: DefaultOptions (temperature, seed, num_ctx) under the ones set; num_ctx is
	// always sent, since Ollama's own default has changed between versions.
	opts := DefaultOptions()
	maps.Copy(opts, set.Options)
	if NumCtx(opts) <= 0 {
		opts["num_ctx"] = NumCtx(DefaultOptions())
	}
	r.options.Store(&opts)
	return r
}

func orDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// Message is one earlier turn of the conversation.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is one routing request.
type Request struct {
	Query   string
	History []Message
	// Identity is who the request acts for, as the server established it (a credential, narrowed
	// by the request's caller): Access decides its tools, and the trace and trajectory name it.
	Identity access.Identity
	// MaxToolCalls lowers the configured ceiling for this request (0: the ceiling).
	MaxToolCalls int
	// Deadline lowers the configured request deadline (0: the configured one).
	Deadline time.Duration
	// OnEvent, if set, is called as the request progresses (never concurrently).
	OnEvent func(Event)
	// Tool, when set, is the qualified name of the tool round 1 calls (two-phase mode only): phase
	// 1 is skipped in that round and phase 2 writes the call's arguments; the route ends after it
	// unless the call fails, when phase 1 chooses again as after any failed call. A tool the
	// identity may not use, or that does not exist, is an error wrapping ErrUnknownTool.
	Tool string
}

// ErrNamedNative is Route's error for a request that names its tool in native mode, where the
// model's own tool calling chooses.
var ErrNamedNative = errors.New("a request may name its tool in two-phase mode only")

// ErrModel wraps model failures returned when OnModelFailure is Fail.
var ErrModel = errors.New("model failed")

// PhaseError names the phase in which the model failed.
type PhaseError struct {
	Phase string
	Err   error
}

func (e *PhaseError) Error() string { return e.Phase + ": " + e.Err.Error() }
func (e *PhaseError) Unwrap() error { return e.Err }

// Route answers one request. It returns an error only when the model fails and the failure mode
// is Fail (wrapping ErrModel), or when the request names a tool it cannot call (ErrUnknownTool, or
// ErrNamedNative in native mode); tool errors, invalid arguments, deadlines and degraded answers
// are reported in the Outcome, with every call made so far.
func (r *Router) Route(ctx context.Context, req Request) (*Outcome, error) {
	deadline := r.set.Deadline
	if req.Deadline > 0 && req.Deadline < deadline {
		deadline = req.Deadline
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < deadline {
		deadline = time.Until(dl) // the caller's own deadline is sooner
	}
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	budget := r.set.MaxToolCalls
	if req.MaxToolCalls > 0 && req.MaxToolCalls < budget {
		budget = req.MaxToolCalls
	}
	st := &routing{}
	x := &st.run
	*x = run{r: r, j: newJournal(r.set.Model, req.Identity.String(), r.set.Recorder, r.set.Redactor, req.OnEvent), budget: budget,
		deadline: deadline.Round(time.Millisecond), seen: st.seen[:0], id: req.Identity}
	x.j.query = req.Query

	r.learnContextLength(ctx)
	snap := r.inv.Snapshot()
	ps := r.allowed(snap, req.Identity)
	var named *inventory.Tool
	switch {
	case req.Tool == "":
	case r.set.Mode == Native:
		return nil, ErrNamedNative
	case ps.byName[req.Tool] == nil:
		return nil, fmt.Errorf("%w %q", ErrUnknownTool, req.Tool)
	default:
		named = ps.byName[req.Tool]
	}
	var err error
	switch {
	case len(ps.tools) == 0:
		x.j.update(func(o *Outcome) { o.Reasoning, o.Stopped = "no tools are available", StopNoTool })
	case r.set.Mode == Native:
		x.t = &st.t
		x.t.start(nativeSystem, req.History, req.Query)
		x.p = newNative(r, x.j, x.t, ps.tools)
		err = x.loop(ctx)
	default:
		var v *view
		if v, err = r.phase1View(ctx, snap, ps, req.Query); err == nil {
			x.t = &st.t
			x.t.start(v.text, req.History, req.Query)
			st.tp = twoPhase{r: r, j: x.j, t: x.t, ps: ps, snap: snap, query: req.Query, named: named}
			st.tp.show(v)
			x.p = &st.tp
			err = x.loop(ctx)
		}
	}
	out := x.j.finish()
	r.learn(req.Query, out)
	return out, err
}

// routing is what one Route call works with, in one allocation: the loop's run, the transcript,
// the two-phase planner and room for the first dedup keys. The journal is apart: the outcome
// lives in it and outlasts the call.
type routing struct {
	run  run
	t    transcript
	tp   twoPhase
	seen [4]seenCall
}

// learn keeps the query as an example of each tool that answered it, when learning is on and the
// request was not degraded.
func (r *Router) learn(query string, out *Outcome) {
	if r.set.Learner == nil || out.Degraded != "" {
		return
	}
	for i := range out.Calls {
		c := &out.Calls[i]
		if c.ok() && c.ReusedFrom == 0 {
			if _, err := r.set.Learner.Learn(qualified(c), query); err != nil {
				r.log.Warn("learning an example", "tool", qualified(c), "err", err)
			}
		}
	}
}

// allowed returns the prompt set of the identity's access policy for the snapshot: the tools it
// may use, filtered once per inventory version and policy. Everything the request shows the
// model and runs comes from it, so a tool outside the policy is never named, offered or called.
func (r *Router) allowed(snap *inventory.Snapshot, id access.Identity) *promptSet {
	name, permits := access.AllName, func(string) bool { return true }
	if r.set.Access != nil {
		name, permits = r.set.Access.Policy(id)
	}
	r.promptMu.Lock()
	ps, ok := r.prompts[name]
	r.promptMu.Unlock()
	if ok && ps.version == snap.Version {
		return ps
	}
	tools := snap.Available()
	all := name == access.AllName
	if !all {
		kept := tools[:0]
		for _, t := range tools {
			if permits(t.Qualified) {
				kept = append(kept, t)
			}
		}
		tools = kept
	}
	return r.promptSet(snap, name, tools, all)
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
