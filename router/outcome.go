package router

// Outcome is the answer to one routing request, as POST /v1/route returns it.
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
	Timings  Timings   `json:"timings_ms"`
	Usage    Usage     `json:"usage"`
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
