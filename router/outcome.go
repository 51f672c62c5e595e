package router

// Outcome is the answer to one routing request, as POST /v1/route returns it. The top-level
// server, tool, arguments, result and error describe the first call (the single-tool contract);
// Calls lists every call in order.
type Outcome struct {
	UseTool   bool           `json:"use_tool"`
	Server    string         `json:"server,omitempty"`
	Tool      string         `json:"tool,omitempty"`
	Reasoning string         `json:"reasoning"`
	Arguments map[string]any `json:"arguments,omitempty"`
	Result    *Result        `json:"result,omitempty"`
	// Direct says the tool's output answers the query by itself.
	Direct bool `json:"direct"`
	// Degraded explains why the answer is "no tool" because something failed.
	Degraded string `json:"degraded,omitempty"`
	// Error reports a failure of the tool path: invalid arguments, a failed call.
	Error *Error `json:"error,omitempty"`
	// Attempts lists each argument attempt's validation findings (empty when the first was valid).
	Attempts []Attempt `json:"argument_attempts,omitempty"`
	// Calls lists every tool call of the request, in order.
	Calls   []Call  `json:"calls"`
	Timings Timings `json:"timings_ms"`
	Usage   Usage   `json:"usage"`
}

// Call is one tool call: what was called with which arguments, and what came back.
type Call struct {
	// Step numbers calls from 1 in the order they were selected.
	Step      int            `json:"step"`
	Server    string         `json:"server"`
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments,omitempty"`
	Result    *Result        `json:"result,omitempty"`
	Error     *Error         `json:"error,omitempty"`
	Attempts  []Attempt      `json:"argument_attempts,omitempty"`
	// ArgumentsMS and ExecuteMS are the call's phase-2 and execution wall times.
	ArgumentsMS float64 `json:"arguments_ms"`
	ExecuteMS   float64 `json:"execute_ms"`
}

// Result is what the tool returned.
type Result struct {
	Text       string    `json:"text"`
	Structured any       `json:"structured,omitempty"`
	IsError    bool      `json:"is_error"`
	Content    []Content `json:"content,omitempty"`
}

// Content summarises a non-text content item (image, audio, resource): never dropped silently.
type Content struct {
	Type     string `json:"type"`
	MIMEType string `json:"mime_type,omitempty"`
	Bytes    int    `json:"bytes,omitempty"`
	URI      string `json:"uri,omitempty"`
	Name     string `json:"name,omitempty"`
}

// Error codes reported in Outcome.Error.
const (
	CodeInvalidArguments = "invalid_arguments"
	CodeToolTimeout      = "tool_timeout"
	CodeToolUnavailable  = "tool_unavailable"
	CodeToolFailed       = "tool_failed"
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

// Timings are per-phase wall times in milliseconds.
type Timings struct {
	Select    float64 `json:"select"`
	Arguments float64 `json:"arguments"`
	Execute   float64 `json:"execute"`
	Total     float64 `json:"total"`
}

// Usage counts model calls and tokens as Ollama reported them.
type Usage struct {
	LLMCalls         int `json:"llm_calls"`
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}
