package router

import (
	"toolrouter/inventory"
	"toolrouter/provider"
	"toolrouter/trajectory"
)

// StepKind names a trace step.
type StepKind string

// Trace step kinds.
const (
	StepSelect    StepKind = "select"    // a phase-1 model call
	StepArguments StepKind = "arguments" // a phase-2 model call (one per attempt)
	StepExecute   StepKind = "execute"   // a tool call
	StepDedup     StepKind = "dedup"     // a call answered from an earlier identical call
	StepTrim      StepKind = "trim"      // earlier results shortened to fit the context window
	StepDeadline  StepKind = "deadline"  // the request deadline fired
	StepCapped    StepKind = "capped"    // calls beyond max_tool_calls were not made
	StepNative    StepKind = "native"    // a native-mode model call
	StepShortlist StepKind = "shortlist" // the tools phase 1 shows, ranked for the query
	StepSearch    StepKind = "search"    // the model asked for other tools than the shortlist
	// StepWeakShortlist: the shortlist rests on little, and phase 1 must search before it may
	// answer "no tool" (retrieval.search_when_weak).
	StepWeakShortlist StepKind = "weak_shortlist"
	// StepLowConfidence: the model's confidence was below router.min_confidence; no call made.
	StepLowConfidence StepKind = "low_confidence"
)

// Step is one entry of an outcome's trace.
type Step struct {
	Index        int      `json:"index"`
	Kind         StepKind `json:"kind"`
	Round        int      `json:"round"`
	Call         int      `json:"call,omitempty"` // the call's step number
	Tool         string   `json:"tool,omitempty"`
	Model        string   `json:"model,omitempty"`
	StartMS      float64  `json:"start_ms"` // since the request started
	DurationMS   float64  `json:"duration_ms"`
	PromptTokens int      `json:"prompt_tokens,omitempty"`
	// EstimatedTokens is the router's estimate of the prompt, checked against the window before
	// sending.
	EstimatedTokens int `json:"estimated_tokens,omitempty"`
	// OverEstimate says the server counted more prompt tokens than estimated (or cut the
	// prompt); the estimate for the model was raised at once.
	OverEstimate     bool `json:"over_estimate,omitempty"`
	CompletionTokens int  `json:"completion_tokens,omitempty"`
	// ModelCalls is how many model calls a continued answer took (router.prefill): the step's
	// tokens and times are their sums. Absent for one call.
	ModelCalls int `json:"model_calls,omitempty"`
	// Breakdown is a model call's split of the server's time (load_ms, prefill_ms, decode_ms,
	// rest_ms) and its prompt tokens not served from the cache (uncached_prompt_tokens); nil on
	// steps that are not model calls.
	*provider.Breakdown
	// Confidence is a selection's confidence, from the server's logprobs.
	Confidence *Confidence `json:"confidence,omitempty"`
	Detail     string      `json:"detail,omitempty"`
	Error      string      `json:"error,omitempty"`
}

// EventType names a streamed event.
type EventType string

// Events, in the order a request produces them; the HTTP layer adds complete and error.
const (
	EventSelectStart      EventType = "select_start"
	EventSelectComplete   EventType = "select_complete"
	EventToolCallStart    EventType = "tool_call_start"
	EventToolCallComplete EventType = "tool_call_complete"
	// EventToolProgress reports a call in flight: a progress notification of its server, or a
	// change of its task's status (a long-running tool).
	EventToolProgress EventType = "tool_progress"
	EventToolResult   EventType = "tool_result"
	EventComplete     EventType = "complete"
	EventError        EventType = "error"
)

// Event is one progress report of a request, for streaming.
type Event struct {
	Type  EventType `json:"type"`
	Round int       `json:"round,omitempty"`
	// Step is set on select_complete.
	Step *Step `json:"step,omitempty"`
	// Call is set on tool_call_* and tool_result events.
	Call *Call `json:"call,omitempty"`
	// Selection is set on select_complete.
	Selection *Selection `json:"selection,omitempty"`
	// Pending is set on approval_required.
	Pending *Pending `json:"pending,omitempty"`
	// Progress is set on tool_progress.
	Progress *inventory.Progress `json:"progress,omitempty"`
}

// Selection is a phase-1 decision as streamed.
type Selection struct {
	Reasoning string   `json:"reasoning"`
	UseTool   bool     `json:"use_tool"`
	Tools     []string `json:"tools"`
	NeedsMore bool     `json:"needs_more"`
	Direct    bool     `json:"direct"`
	// Confidence is the model's confidence in this selection (absent without logprobs).
	Confidence *Confidence `json:"confidence,omitempty"`
}

// Recorder takes trajectory records without blocking; *trajectory.Writer satisfies it.
type Recorder interface {
	Record(trajectory.Record) bool
}
