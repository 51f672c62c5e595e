package router

import (
	"toolrouter/provider"
	"toolrouter/schema"
)

// Outcome is the answer to one routing request, as POST /v1/route returns it. The top-level
// server, tool, arguments, result and error describe the first call (the single-tool contract);
// Calls lists every call in order.
type Outcome struct {
	RequestID string `json:"request_id"`
	// Identity is who the request acted for, "org", "org/team" or "org/team/agent" ("" when
	// routed without one, as the command line does).
	Identity  string `json:"identity"`
	UseTool   bool   `json:"use_tool"`
	Server    string `json:"server,omitempty"`
	Tool      string `json:"tool,omitempty"`
	Reasoning string `json:"reasoning"`
	// Confidence is the model's own confidence in its first selection, from the server's
	// logprobs (absent when the server sent none).
	Confidence *Confidence    `json:"confidence,omitempty"`
	Arguments  map[string]any `json:"arguments,omitempty"`
	Result     *Result        `json:"result,omitempty"`
	// Direct says the tools' output answers the query by itself.
	Direct bool `json:"direct"`
	// Degraded explains why the answer has fewer tool results than asked for because something
	// failed on the model side (unreachable, timed out, garbage, unknown tool).
	Degraded string `json:"degraded,omitempty"`
	// DegradedReason classifies Degraded.
	DegradedReason DegradedReason `json:"degraded_reason,omitempty"`
	// Error reports a failure of the first call: invalid arguments, a failed call.
	Error *Error `json:"error,omitempty"`
	// Attempts lists the first call's argument attempts that failed validation.
	Attempts []Attempt `json:"argument_attempts,omitempty"`
	// Calls lists every tool call of the request, in order.
	Calls []Call `json:"calls"`
	// Rounds counts selection rounds; Stopped says why the loop ended.
	Rounds  int        `json:"rounds"`
	Stopped StopReason `json:"stopped"`
	// Shortlists are what phase 1 was shown when the inventory did not fit its budget: the
	// shortlist for the query, then one per search.
	Shortlists []Shortlist `json:"shortlists,omitempty"`
	// Searches counts the model's searches beyond the shortlist (each took one call of the budget).
	Searches int `json:"searches,omitempty"`
	// Pending are the calls that were validated but not run: they await approval (see
	// safety.auto_execute), and Stopped is "approval_required".
	Pending []Pending `json:"pending,omitempty"`
	// Trimmed says earlier results were shortened to fit the model's context window.
	Trimmed bool    `json:"trimmed,omitempty"`
	Trace   []Step  `json:"trace"`
	Timings Timings `json:"timings_ms"`
	Usage   Usage   `json:"usage"`
}

// StopReason says why the loop ended.
type StopReason string

// Stop reasons.
const (
	StopNoTool       StopReason = "no_tool"        // the first selection chose no tool
	StopDone         StopReason = "done"           // the model had what it needed
	StopMaxToolCalls StopReason = "max_tool_calls" // the call budget was spent
	StopDeadline     StopReason = "deadline"       // the request deadline fired
	StopModelFailure StopReason = "model_failure"  // the model failed
	// StopPromptOverWindow: a prompt did not fit the model's window even after cutting; not sent.
	StopPromptOverWindow StopReason = "prompt_over_window"
	// StopApprovalRequired: a call awaits approval (Outcome.Pending); nothing after it ran.
	StopApprovalRequired StopReason = "approval_required"
)

// DegradedReason classifies a degraded answer.
type DegradedReason string

// Degraded reasons.
const (
	DegradedModelFailure   DegradedReason = "model_failure"      // the model failed (unreachable, timed out, garbage)
	DegradedUnknownTool    DegradedReason = "unknown_tool"       // the model chose only tools that do not exist
	DegradedDeadline       DegradedReason = "deadline"           // the deadline fired before a tool was chosen
	DegradedPromptOverSize DegradedReason = "prompt_over_window" // a prompt did not fit the window; nothing was sent
	DegradedLowConfidence  DegradedReason = "low_confidence"     // the model's confidence was below router.min_confidence
)

// Call is one tool call: what was called with which arguments, and what came back.
type Call struct {
	// Step numbers calls from 1 in the order they were selected; Round is their selection round.
	Step  int    `json:"step"`
	Round int    `json:"round"`
	Task  string `json:"task,omitempty"`
	// Server and Tool are empty when the model named an unknown tool (see Error).
	Server    string         `json:"server"`
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments,omitempty"`
	Result    *Result        `json:"result,omitempty"`
	Error     *Error         `json:"error,omitempty"`
	Attempts  []Attempt      `json:"argument_attempts,omitempty"`
	// Pending is set when the call awaits approval (its Error's code is "approval_required").
	Pending *Pending `json:"pending,omitempty"`
	// ReusedFrom is the step whose identical call answered this one (no second execution).
	ReusedFrom int `json:"reused_from,omitempty"`
	// ArgumentsMS and ExecuteMS are the call's phase-2 and execution wall times.
	ArgumentsMS float64 `json:"arguments_ms"`
	ExecuteMS   float64 `json:"execute_ms"`
	// output is the tool's compiled output schema when the call ran (nil when it declares none):
	// a later step's reference into this result is checked against it.
	output *schema.Schema
}

// ok reports whether the call produced a usable result.
func (c *Call) ok() bool { return c.Error == nil && c.Result != nil && !c.Result.IsError }

// Result is what the tool returned, cut to Settings.MaxResultBytes (see bound) before anything
// keeps, logs, shows or returns it.
type Result struct {
	Text       string    `json:"text"`
	Structured any       `json:"structured,omitempty"`
	IsError    bool      `json:"is_error"`
	Content    []Content `json:"content,omitempty"`
	// TextBytes is the length of the tool's whole text when Text was shortened.
	TextBytes int `json:"text_bytes,omitempty"`
	// StructuredBytes is the length of the structured content's JSON when it was over the bound
	// and dropped (Structured is then nil).
	StructuredBytes int `json:"structured_bytes,omitempty"`
	// Truncated says the tool's text was shortened or its structured content dropped.
	Truncated bool `json:"truncated,omitempty"`
}

// Content summarises a non-text content item (image, audio, resource): never dropped silently.
type Content struct {
	Type     string `json:"type"`
	MIMEType string `json:"mime_type,omitempty"`
	Bytes    int    `json:"bytes,omitempty"`
	URI      string `json:"uri,omitempty"`
	Name     string `json:"name,omitempty"`
}

// Error codes reported in Call.Error and Outcome.Error.
const (
	CodeInvalidArguments = "invalid_arguments"
	CodeToolTimeout      = "tool_timeout"
	CodeToolUnavailable  = "tool_unavailable"
	CodeToolFailed       = "tool_failed"
	// CodeInvalidResult: the tool's structuredContent does not match its output schema (or is
	// missing though it declares one); its result is withheld.
	CodeInvalidResult = "invalid_result"
	CodeUnknownTool   = "unknown_tool"
	CodeModelFailed   = "model_failed"
	CodeDeadline      = "deadline"
)

// Error is a failure on the tool path.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Attempt is one phase-2 attempt that failed validation.
type Attempt struct {
	Output   string `json:"output"`
	Feedback string `json:"feedback"`
}

// Timings are wall times in milliseconds: select, arguments and execute add up each phase over
// all rounds and calls (parallel calls overlap, so they can exceed total).
type Timings struct {
	Select    float64 `json:"select"`
	Arguments float64 `json:"arguments"`
	Execute   float64 `json:"execute"`
	Total     float64 `json:"total"`
}

// Usage counts model calls and tokens as the model server reported them, and sums the calls'
// breakdowns: server time in load_ms, prefill_ms, decode_ms and rest_ms, and the prompt tokens not
// served from the cache in uncached_prompt_tokens.
type Usage struct {
	LLMCalls         int `json:"llm_calls"`
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	provider.Breakdown
}

func (u *Usage) add(r reply) {
	u.LLMCalls += max(r.Calls, 1)
	u.PromptTokens += r.Stats.PromptTokens
	u.CompletionTokens += r.Stats.DecodeTokens
	u.Breakdown.Add(r.Stats.Breakdown)
}
