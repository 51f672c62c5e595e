// Package trajectory writes the router's steps as JSON Lines records for later fine-tuning: one
// line per step, holding the state the model saw, the action it took, what came back, outcome
// flags, the model and timings.
//
// It owns the log file and its rotation by size; the bounded queue in front of it is a
// spool.Spool. It does not decide what a step is: the router builds each Record. Records are
// written by a goroutine off the request path; when the queue is full a record is dropped and
// counted, so Record never blocks the caller.
package trajectory

import (
	"encoding/json"
	"time"

	"toolrouter/provider"
)

// Message is one chat message in the state sent to the model.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Record is one step: the state the model saw, its action, what came back, and flags.
type Record struct {
	Time             time.Time       `json:"time"` // set by Writer.Record when zero
	RequestID        string          `json:"request_id"`
	Identity         string          `json:"identity,omitempty"` // who the request acted for: org/team/agent
	Step             int             `json:"step"`               // 1-based sequence within the request
	Kind             string          `json:"kind"`               // "select", "arguments", "execute", "native"
	Model            string          `json:"model,omitempty"`
	State            []Message       `json:"state,omitempty"`       // messages sent to the model
	Format           json.RawMessage `json:"format,omitempty"`      // the format schema sent, if any
	Action           Action          `json:"action"`                // what the model answered
	Observation      json.RawMessage `json:"observation,omitempty"` // tool result or validation error, as JSON
	Outcome          Outcome         `json:"outcome"`
	DurationMS       float64         `json:"duration_ms"`
	PromptTokens     int             `json:"prompt_tokens,omitempty"`
	CompletionTokens int             `json:"completion_tokens,omitempty"`
	// Breakdown is a model call's split of the server's time (load_ms, prefill_ms, decode_ms,
	// rest_ms) and its prompt tokens not served from the cache (uncached_prompt_tokens); nil for
	// tool calls.
	*provider.Breakdown
}

// Action is the model's answer: the raw text and, when it parsed, the parsed JSON.
type Action struct {
	Raw    string          `json:"raw,omitempty"`
	Parsed json.RawMessage `json:"parsed,omitempty"`
}

// Outcome flags a step. A nil flag means the step did not decide it (a "select" step runs no tool).
type Outcome struct {
	SchemaValid   *bool  `json:"schema_valid,omitempty"`
	ToolSucceeded *bool  `json:"tool_succeeded,omitempty"`
	Error         string `json:"error,omitempty"`
}
