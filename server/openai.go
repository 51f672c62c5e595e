package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"toolrouter/answer"

	"github.com/ollama/ollama/api"
)

// This file decodes and checks the body of POST /v1/chat/completions, OpenAI's chat-completions
// request. Unknown fields are tolerated (OpenAI clients send many); the fields below are read,
// and those that cannot be honoured (n > 1, images, the legacy functions) are refused with a 400
// naming them.

// Limits of a chat-completions request beyond the router's (router.max_query_bytes, max_history).
const (
	maxModelNameBytes = 256
	maxTools          = 128
	maxStops          = 4
)

// chatRequest is the body of POST /v1/chat/completions: the fields read; others are ignored.
type chatRequest struct {
	Model         *string           `json:"model"`
	Messages      []chatMessage     `json:"messages"`
	Stream        *bool             `json:"stream"`
	StreamOptions *chatStreamOpts   `json:"stream_options"`
	Tools         []json.RawMessage `json:"tools"`
	ToolChoice    json.RawMessage   `json:"tool_choice"`
	// ParallelToolCalls false allows one call (default true).
	ParallelToolCalls *bool `json:"parallel_tool_calls"`
	// Functions and FunctionCall are the legacy form of tools and tool_choice: refused.
	Functions    []json.RawMessage `json:"functions"`
	FunctionCall json.RawMessage   `json:"function_call"`
	N            *int              `json:"n"`
	// ReasoningEffort and ResponseFormat become the answering model's think and format.
	ReasoningEffort *string         `json:"reasoning_effort"`
	ResponseFormat  json.RawMessage `json:"response_format"`
	// Sampling: passed to the answering model in Ollama's names (options), never to the routing.
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stop                json.RawMessage `json:"stop"`
	Seed                *int64          `json:"seed"`
	FrequencyPenalty    *float64        `json:"frequency_penalty"`
	PresencePenalty     *float64        `json:"presence_penalty"`
}

type chatStreamOpts struct {
	IncludeUsage bool `json:"include_usage"`
}

// chatMessage is one message of the request.
type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []chatToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

// chatToolCall is a tool call in OpenAI's shape: in an assistant message of the request and in a
// response's message (a stream's are chatToolCallDelta).
type chatToolCall struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function chatToolFunction `json:"function"`
}

type chatToolFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // a JSON object, as a string
}

// chatInput is a checked chat-completions request: what answer.Chat runs, and how to answer it.
type chatInput struct {
	answer.ChatRequest
	stream       bool
	includeUsage bool
}

// decodeChat parses and checks a chat-completions body; every problem is a 400 naming it.
func (h *handlers) decodeChat(body []byte) (*chatInput, error) {
	var req chatRequest
	if err := answer.DecodeJSON(body, &req, ""); err != nil {
		return nil, err
	}
	in := &chatInput{}
	switch {
	case req.Model == nil || strings.TrimSpace(*req.Model) == "":
		return nil, answer.ParamError("missing_model", "model", `model is required: "council", a model of the router's provider, or "PROVIDER/MODEL"`)
	case len(*req.Model) > maxModelNameBytes:
		return nil, answer.ParamError("bad_model", "model", fmt.Sprintf("model is %d bytes; the limit is %d", len(*req.Model), maxModelNameBytes))
	case len(req.Messages) == 0:
		return nil, answer.ParamError("missing_messages", "messages", "messages is required and must not be empty")
	case req.N != nil && *req.N != 1:
		return nil, answer.ParamError("unsupported_n", "n", fmt.Sprintf("n must be 1: one choice is answered, got %d", *req.N))
	}
	in.Model = strings.TrimSpace(*req.Model)
	in.stream = req.Stream != nil && *req.Stream
	if req.StreamOptions != nil {
		if !in.stream {
			return nil, answer.ParamError("bad_stream_options", "stream_options", "stream_options is only allowed with stream: true")
		}
		in.includeUsage = req.StreamOptions.IncludeUsage
	}
	if len(req.Functions) > 0 {
		return nil, answer.ParamError("unsupported_functions", "functions", `functions (the legacy form of tools) is not supported: send tools, [{"type":"function","function":{name, description, parameters}}]`)
	}
	if present(req.FunctionCall) {
		return nil, answer.ParamError("unsupported_functions", "function_call", "function_call (the legacy form of tool_choice) is not supported: send tools and tool_choice")
	}
	var err error
	if in.Tools, in.Schemas, err = chatTools(req.Tools); err != nil {
		return nil, err
	}
	if in.Model == answer.CouncilModel && in.Tools != nil {
		return nil, answer.ParamError("council_with_tools", "tools", `model "council" cannot take the client's tools: `+
			`the council answers with toolrouter's own tools; name a model (one of GET /v1/models) to have it call them`)
	}
	if err := chatToolChoice(req.ToolChoice, &in.ChatRequest); err != nil {
		return nil, err
	}
	if (in.RequireTool || in.ToolName != "") && in.Tools == nil {
		// "auto" and "none" without tools ask for nothing; a call required of no tools cannot be made.
		return nil, answer.ParamError("tools_missing", "tool_choice", "tool_choice requires a call, but the request has no tools")
	}
	in.OneCall = req.ParallelToolCalls != nil && !*req.ParallelToolCalls
	if in.Think, err = chatThink(req.ReasoningEffort); err != nil {
		return nil, err
	}
	if in.Format, err = chatFormat(req.ResponseFormat); err != nil {
		return nil, err
	}
	if in.Model == answer.CouncilModel && in.Format != nil {
		return nil, answer.ParamError("council_with_response_format", "response_format", `model "council" cannot answer in a response_format: `+
			`the council's chairman writes prose; name a model (one of GET /v1/models) for a JSON answer`)
	}
	if in.Options, err = chatOptions(req); err != nil {
		return nil, err
	}
	if err := h.chatMessages(in, req.Messages); err != nil {
		return nil, err
	}
	return in, nil
}

// chatMessages converts the messages and bounds them (boundMessages).
func (h *handlers) chatMessages(in *chatInput, msgs []chatMessage) error {
	in.Last = -1
	for i, m := range msgs {
		param := fmt.Sprintf("messages[%d]", i)
		role := m.Role
		switch role {
		case "developer":
			role = "system"
		case "system", "user", "assistant":
		case "tool":
			if in.Tools == nil {
				return answer.ParamError("bad_role", param+".role", param+`.role is "tool", but the request has no tools: tool results belong to a conversation with tools`)
			}
		default:
			return answer.ParamError("bad_role", param+".role", fmt.Sprintf(`%s.role must be "system", "developer", "user", "assistant" or "tool", got %q`, param, m.Role))
		}
		text, err := chatContent(m.Content, param)
		if err != nil {
			return err
		}
		msg := api.Message{Role: role, Content: text}
		if len(m.ToolCalls) > 0 {
			if role != "assistant" {
				return answer.ParamError("bad_tool_calls", param+".tool_calls", param+" has tool_calls, which only an assistant message may have")
			}
			if msg.ToolCalls, err = ollamaToolCalls(m.ToolCalls, param); err != nil {
				return err
			}
		}
		if role == "tool" {
			msg.ToolCallID = m.ToolCallID
		}
		if role == "user" {
			in.Last = len(in.Messages)
		}
		in.Messages = append(in.Messages, msg)
	}
	return h.boundMessages(&in.ChatRequest)
}

// boundMessages checks the bounds of a chat's converted messages, whichever door decoded them:
// the last user message (in.Last, -1 when there is none) is bounded by router.max_query_bytes,
// the other messages (system messages aside) by router.max_history, and all of them together by
// four times router.max_query_bytes, as /v1/route bounds query and history.
func (h *handlers) boundMessages(in *answer.ChatRequest) error {
	total, others := 0, 0
	for _, m := range in.Messages {
		if m.Role != "system" {
			others++
		}
		total += len(m.Content)
	}
	if in.Last < 0 {
		return answer.ParamError("missing_user_message", "messages", `messages must include a message with role "user"`)
	}
	if n := len(in.Messages[in.Last].Content); n > h.limits.MaxQueryBytes {
		return answer.ParamError("message_too_long", "messages", fmt.Sprintf("the last user message is %d bytes; the limit is %d (router.max_query_bytes)", n, h.limits.MaxQueryBytes))
	}
	if strings.TrimSpace(in.Messages[in.Last].Content) == "" && in.Tools == nil {
		return answer.ParamError("empty_message", "messages", "the last user message must not be empty: it is what the tools are chosen for")
	}
	if others-1 > h.limits.MaxHistory {
		return answer.ParamError("too_many_messages", "messages", fmt.Sprintf("messages has %d messages besides system messages and the last user message; the limit is %d (router.max_history)", others-1, h.limits.MaxHistory))
	}
	if limit := 4 * h.limits.MaxQueryBytes; total > limit {
		return answer.ParamError("messages_too_long", "messages", fmt.Sprintf("the messages' contents are %d bytes; the limit is %d (four times router.max_query_bytes)", total, limit))
	}
	return nil
}

// chatContent is a message's text: a string, null, or an array of text parts (joined with
// newlines). Any other part (an image, audio, a file) is refused.
func chatContent(raw json.RawMessage, param string) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", answer.ParamError("bad_content", param+".content", param+".content is not a valid JSON string")
		}
		return s, nil
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if raw[0] != '[' || json.Unmarshal(raw, &parts) != nil {
		return "", answer.ParamError("bad_content", param+".content", param+".content must be a string or an array of text parts")
	}
	texts := make([]string, 0, len(parts))
	for j, part := range parts {
		pp := fmt.Sprintf("%s.content[%d]", param, j)
		switch {
		case part.Type == "text" && part.Text != nil:
			texts = append(texts, *part.Text)
		case part.Type == "text":
			return "", answer.ParamError("bad_content", pp, pp+` is a text part without "text"`)
		case part.Type == "image_url" || part.Type == "input_image":
			return "", answer.ParamError("unsupported_content", pp, pp+" is an image: images are not supported; send text parts only")
		default:
			return "", answer.ParamError("unsupported_content", pp, fmt.Sprintf("%s is a %q part: only text parts are supported", pp, part.Type))
		}
	}
	return strings.Join(texts, "\n"), nil
}

// ollamaToolCalls converts an assistant message's tool calls; arguments must be a JSON object.
func ollamaToolCalls(calls []chatToolCall, param string) ([]api.ToolCall, error) {
	out := make([]api.ToolCall, 0, len(calls))
	for j, tc := range calls {
		pp := fmt.Sprintf("%s.tool_calls[%d]", param, j)
		if tc.Function.Name == "" {
			return nil, answer.ParamError("bad_tool_calls", pp, pp+".function.name is required")
		}
		args := api.NewToolCallFunctionArguments()
		if a := strings.TrimSpace(tc.Function.Arguments); a != "" {
			if err := json.Unmarshal([]byte(a), &args); err != nil {
				return nil, answer.ParamError("bad_tool_calls", pp, pp+".function.arguments must be a JSON object in a string")
			}
		}
		out = append(out, api.ToolCall{ID: tc.ID, Function: api.ToolCallFunction{Index: j, Name: tc.Function.Name, Arguments: args}})
	}
	return out, nil
}

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,64}$`)

// chatTools converts the client's tools into Ollama's, with each function's parameters as sent
// (schemas, by index); nil when the request has none, an empty non-nil slice never.
func chatTools(tools []json.RawMessage) (api.Tools, []json.RawMessage, error) {
	if len(tools) > maxTools {
		return nil, nil, answer.ParamError("too_many_tools", "tools", fmt.Sprintf("the request has %d tools; the limit is %d", len(tools), maxTools))
	}
	var out api.Tools
	var schemas []json.RawMessage
	add := func(param string, raw json.RawMessage) error {
		var t api.Tool
		var params struct {
			Function struct {
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return answer.ParamError("bad_tools", param, param+` must be {"type":"function","function":{name, description, parameters}}: `+err.Error())
		}
		switch {
		case t.Type != "function":
			return answer.ParamError("bad_tools", param, fmt.Sprintf(`%s.type must be "function", got %q`, param, t.Type))
		case !toolName.MatchString(t.Function.Name):
			return answer.ParamError("bad_tools", param, fmt.Sprintf("%s: the function name must be 1 to 64 letters, digits, _ . or -, got %q", param, t.Function.Name))
		}
		if t.Function.Parameters.Type == "" {
			t.Function.Parameters.Type = "object"
		}
		_ = json.Unmarshal(raw, &params) // it decoded as a tool just above
		if !present(params.Function.Parameters) {
			params.Function.Parameters = nil // none: an object with any properties
		}
		out = append(out, t)
		schemas = append(schemas, params.Function.Parameters)
		return nil
	}
	for i, raw := range tools {
		if err := add(fmt.Sprintf("tools[%d]", i), raw); err != nil {
			return nil, nil, err
		}
	}
	return out, schemas, nil
}

// present reports whether a raw field was sent with a value other than null.
func present(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && string(raw) != "null"
}

// chatToolChoice reads tool_choice into in: "auto" (the default: the model chooses, "no tool"
// included), "none" (no call: the model answers in text), "required" (at least one call) or
// {"type":"function","function":{"name"}} (that function; answer.Chat checks it is one of the
// tools).
func chatToolChoice(raw json.RawMessage, in *answer.ChatRequest) error {
	if !present(raw) {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto":
		case "none":
			in.NoTools = true
		case "required":
			in.RequireTool = true
		default:
			return answer.ParamError("bad_tool_choice", "tool_choice", fmt.Sprintf(`tool_choice must be "auto", "none" or "required", got %q`, s))
		}
		return nil
	}
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &named) == nil && named.Type == "function" && named.Function.Name != "" {
		in.ToolName = named.Function.Name
		return nil
	}
	return answer.ParamError("bad_tool_choice", "tool_choice", `tool_choice must be "auto", "none", "required" or {"type":"function","function":{"name"}}`)
}

// chatThink maps reasoning_effort to Ollama's think: "low", "medium" and "high" are the level,
// "none" and "minimal" turn thinking off; nil when it is not set.
func chatThink(effort *string) (*api.ThinkValue, error) {
	if effort == nil {
		return nil, nil
	}
	switch *effort {
	case "low", "medium", "high":
		return &api.ThinkValue{Value: *effort}, nil
	case "none", "minimal":
		return &api.ThinkValue{Value: false}, nil
	}
	return nil, answer.ParamError("bad_reasoning_effort", "reasoning_effort", fmt.Sprintf(`reasoning_effort must be "none", "minimal", "low", "medium" or "high", got %q`, *effort))
}

// chatFormat maps response_format to Ollama's format: {"type":"json_object"} is "json",
// {"type":"json_schema","json_schema":{"schema":{…}}} is the schema, {"type":"text"} (or none) is
// nil.
func chatFormat(raw json.RawMessage) (json.RawMessage, error) {
	if !present(raw) {
		return nil, nil
	}
	var rf struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(raw, &rf); err != nil {
		return nil, answer.ParamError("bad_response_format", "response_format", `response_format must be {"type": "text", "json_object" or "json_schema"}`)
	}
	switch rf.Type {
	case "text":
		return nil, nil
	case "json_object":
		return json.RawMessage(`"json"`), nil
	case "json_schema":
		if rf.JSONSchema == nil {
			return nil, answer.ParamError("bad_response_format", "response_format", `response_format {"type":"json_schema"} needs json_schema.schema, a JSON Schema object`)
		}
		schema := bytes.TrimSpace(rf.JSONSchema.Schema)
		if len(schema) == 0 || schema[0] != '{' {
			return nil, answer.ParamError("bad_response_format", "response_format", "response_format.json_schema.schema must be a JSON Schema object")
		}
		return json.RawMessage(slices.Clone(schema)), nil
	}
	return nil, answer.ParamError("bad_response_format", "response_format", fmt.Sprintf(`response_format.type must be "text", "json_object" or "json_schema", got %q`, rf.Type))
}

// chatOptions checks the sampling fields and names them as Ollama does; provider.OpenAI names
// them back for an OpenAI-compatible provider.
func chatOptions(req chatRequest) (map[string]any, error) {
	opts := map[string]any{}
	ranged := func(name, ollama string, v *float64, lo, hi float64) error {
		if v == nil {
			return nil
		}
		if math.IsNaN(*v) || *v < lo || *v > hi {
			return answer.ParamError("bad_"+name, name, fmt.Sprintf("%s must be from %g to %g, got %g", name, lo, hi, *v))
		}
		opts[ollama] = *v
		return nil
	}
	for _, f := range []struct {
		name, ollama string
		v            *float64
		lo, hi       float64
	}{
		{"temperature", "temperature", req.Temperature, 0, 2},
		{"top_p", "top_p", req.TopP, 0, 1},
		{"frequency_penalty", "frequency_penalty", req.FrequencyPenalty, -2, 2},
		{"presence_penalty", "presence_penalty", req.PresencePenalty, -2, 2},
	} {
		if err := ranged(f.name, f.ollama, f.v, f.lo, f.hi); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct {
		name string
		v    *int
	}{{"max_tokens", req.MaxTokens}, {"max_completion_tokens", req.MaxCompletionTokens}} {
		if f.v == nil {
			continue
		}
		if *f.v < 1 {
			return nil, answer.ParamError("bad_"+f.name, f.name, fmt.Sprintf("%s must be at least 1, got %d", f.name, *f.v))
		}
		opts["num_predict"] = *f.v
	}
	if req.Seed != nil {
		opts["seed"] = *req.Seed
	}
	if stop := bytes.TrimSpace(req.Stop); len(stop) > 0 && string(stop) != "null" {
		var one string
		var many []string
		switch {
		case json.Unmarshal(stop, &one) == nil:
			many = []string{one}
		case json.Unmarshal(stop, &many) == nil && len(many) <= maxStops:
		default:
			return nil, answer.ParamError("bad_stop", "stop", fmt.Sprintf("stop must be a string or an array of at most %d strings", maxStops))
		}
		opts["stop"] = many
	}
	return opts, nil
}
