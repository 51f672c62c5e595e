package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/ollama/ollama/api"

	"toolrouter/answer"
)

// This file serves POST /api/chat, Ollama's chat: the body decoded and checked into the
// answer.ChatRequest a chat completion makes, answered by the same answer.Chat, and the result
// written in Ollama's shapes, NDJSON (the default) or one object.

// ollamaChatRequest is the body of POST /api/chat: the fields read; others are ignored, as
// Ollama ignores them.
type ollamaChatRequest struct {
	Model     *string           `json:"model"`
	Messages  []ollamaMessage   `json:"messages"`
	Stream    *bool             `json:"stream"`
	Format    json.RawMessage   `json:"format"`
	KeepAlive json.RawMessage   `json:"keep_alive"`
	Tools     []json.RawMessage `json:"tools"`
	Options   map[string]any    `json:"options"`
	Think     json.RawMessage   `json:"think"`
}

// ollamaMessage is one message of the request, in Ollama's shape: tool calls' arguments are
// objects, a tool result names its tool (tool_name) or call (tool_call_id).
type ollamaMessage struct {
	Role       string            `json:"role"`
	Content    string            `json:"content"`
	Thinking   string            `json:"thinking"`
	Images     []json.RawMessage `json:"images"`
	ToolCalls  []api.ToolCall    `json:"tool_calls"`
	ToolName   string            `json:"tool_name"`
	ToolCallID string            `json:"tool_call_id"`
}

// ollamaChatInput is a checked /api/chat request.
type ollamaChatInput struct {
	answer.ChatRequest
	stream bool
}

// decodeOllamaChat parses and checks an /api/chat body; every problem is a 400 naming it.
func (h *handlers) decodeOllamaChat(body []byte) (*ollamaChatInput, error) {
	var req ollamaChatRequest
	if err := answer.DecodeJSON(body, &req, ""); err != nil {
		return nil, err
	}
	in := &ollamaChatInput{stream: req.Stream == nil || *req.Stream} // Ollama streams by default
	switch {
	case req.Model == nil || strings.TrimSpace(*req.Model) == "":
		return nil, answer.ParamError("missing_model", "model", `model is required: "council" or one of GET /api/tags`)
	case len(*req.Model) > maxModelNameBytes:
		return nil, answer.ParamError("bad_model", "model", fmt.Sprintf("model is %d bytes; the limit is %d", len(*req.Model), maxModelNameBytes))
	case len(req.Messages) == 0:
		return nil, answer.ParamError("missing_messages", "messages", "messages is required and must not be empty")
	}
	in.Model = strings.TrimSpace(*req.Model)
	var err error
	if in.Tools, in.Schemas, err = chatTools(req.Tools); err != nil {
		return nil, err
	}
	if in.Model == answer.CouncilModel && in.Tools != nil {
		return nil, answer.ParamError("council_with_tools", "tools", `model "council" cannot take the client's tools: `+
			`the council answers with toolrouter's own tools; name a model (one of GET /api/tags) to have it call them`)
	}
	if in.Format, err = ollamaFormat(req.Format); err != nil {
		return nil, err
	}
	if in.Model == answer.CouncilModel && in.Format != nil {
		return nil, answer.ParamError("council_with_format", "format", `model "council" cannot answer in a format: `+
			`the council's chairman writes prose; name a model (one of GET /api/tags) for a JSON answer`)
	}
	if in.Think, err = ollamaThink(req.Think); err != nil {
		return nil, err
	}
	if present(req.KeepAlive) {
		var d api.Duration
		if err := json.Unmarshal(req.KeepAlive, &d); err != nil {
			return nil, answer.ParamError("bad_keep_alive", "keep_alive", `keep_alive must be a duration ("5m", "1h") or a number of seconds`)
		}
		in.KeepAlive = &d
	}
	if len(req.Options) > 0 {
		in.Options = maps.Clone(req.Options)
	}
	if err := h.ollamaMessages(in, req.Messages); err != nil {
		return nil, err
	}
	return in, nil
}

// ollamaMessages converts the messages and bounds them (boundMessages).
func (h *handlers) ollamaMessages(in *ollamaChatInput, msgs []ollamaMessage) error {
	in.Last = -1
	for i, m := range msgs {
		param := fmt.Sprintf("messages[%d]", i)
		switch m.Role {
		case "system", "user", "assistant":
		case "tool":
			if in.Tools == nil {
				return answer.ParamError("bad_role", param+".role", param+`.role is "tool", but the request has no tools: tool results belong to a conversation with tools`)
			}
		default:
			return answer.ParamError("bad_role", param+".role", fmt.Sprintf(`%s.role must be "system", "user", "assistant" or "tool", got %q`, param, m.Role))
		}
		if len(m.Images) > 0 {
			return answer.ParamError("unsupported_content", param+".images", param+" has images: images are not supported; send text only")
		}
		msg := api.Message{Role: m.Role, Content: m.Content, Thinking: m.Thinking, ToolName: m.ToolName, ToolCallID: m.ToolCallID}
		if len(m.ToolCalls) > 0 {
			if m.Role != "assistant" {
				return answer.ParamError("bad_tool_calls", param+".tool_calls", param+" has tool_calls, which only an assistant message may have")
			}
			for j, tc := range m.ToolCalls {
				if tc.Function.Name == "" {
					pp := fmt.Sprintf("%s.tool_calls[%d]", param, j)
					return answer.ParamError("bad_tool_calls", pp, pp+".function.name is required")
				}
			}
			msg.ToolCalls = m.ToolCalls
		}
		if m.Role == "user" {
			in.Last = len(in.Messages)
		}
		in.Messages = append(in.Messages, msg)
	}
	return h.boundMessages(&in.ChatRequest)
}

// ollamaFormat checks format: "json" or a JSON Schema object; nil when it is not set.
func ollamaFormat(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case !present(raw) || string(raw) == `""`:
		return nil, nil
	case string(raw) == `"json"`:
		return json.RawMessage(`"json"`), nil
	case raw[0] == '{':
		return json.RawMessage(slices.Clone(raw)), nil
	}
	return nil, answer.ParamError("bad_format", "format", `format must be "json" or a JSON Schema object`)
}

// ollamaThink checks think: true, false, or a level "low", "medium", "high"; nil when it is not
// set.
func ollamaThink(raw json.RawMessage) (*api.ThinkValue, error) {
	if !present(raw) {
		return nil, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err == nil {
		switch t := v.(type) {
		case bool:
			return &api.ThinkValue{Value: t}, nil
		case string:
			if t == "low" || t == "medium" || t == "high" {
				return &api.ThinkValue{Value: t}, nil
			}
		}
	}
	return nil, answer.ParamError("bad_think", "think", fmt.Sprintf(`think must be true, false, "low", "medium" or "high", got %s`, clipHeader(string(raw))))
}

// ollamaChatResponse is one object of /api/chat's answer: Ollama's, and on the last (done) one
// how toolrouter answered (x_toolrouter, as the OpenAI door reports it).
type ollamaChatResponse struct {
	api.ChatResponse
	XToolrouter *answer.ChatTrace `json:"x_toolrouter,omitempty"`
}

// ollamaChat serves POST /api/chat: the body checked, the model checked, then answer.Chat's
// answer in Ollama's shape, as NDJSON (by default) or one object ("stream": false).
func (h *handlers) ollamaChat(c *fiber.Ctx) error {
	in, err := h.decodeOllamaChat(c.Body())
	if err != nil {
		return err
	}
	id, err := h.actingAs(c, "")
	if err != nil {
		return err
	}
	if err := h.chat.Check(c.UserContext(), in.Model); err != nil {
		return err
	}
	start := time.Now()
	var out *answer.ChatResult
	rep := reportOf(c)
	run := func(ctx context.Context, onDelta func(answer.Delta)) error {
		var err error
		out, err = h.chat.Run(ctx, in.ChatRequest, id, onDelta)
		reportChat(rep, out)
		return err
	}
	chunk := func(msg api.Message) ollamaChatResponse {
		msg.Role = "assistant"
		return ollamaChatResponse{ChatResponse: api.ChatResponse{Model: in.Model, CreatedAt: time.Now().UTC(), Message: msg}}
	}
	done := func() ollamaChatResponse {
		r := chunk(api.Message{})
		r.Done, r.DoneReason, r.Metrics, r.XToolrouter = true, ollamaDoneReason(out.Finish), ollamaMetrics(out, time.Since(start)), &out.Trace
		return r
	}
	if in.stream {
		f := eventFormat{end: func(send sendFunc, _ any, e *answer.Problem) {
			if e != nil {
				send("", ollamaError{Error: e.Message})
				return
			}
			if len(out.ToolCalls) > 0 {
				send("", chunk(api.Message{ToolCalls: ollamaCalls(out.ToolCalls)}))
			}
			send("", done())
		}}
		return h.streamAs(c, f, func(ctx context.Context, send sendFunc) (any, error) {
			return nil, run(ctx, func(d answer.Delta) {
				send("", chunk(api.Message{Content: d.Text, Thinking: d.Thinking}))
			})
		})
	}
	return h.serve(c, func(ctx context.Context) (any, error) {
		if err := run(ctx, nil); err != nil {
			return nil, err
		}
		r := done()
		r.Message.Content, r.Message.Thinking, r.Message.ToolCalls = out.Text, out.Thinking, ollamaCalls(out.ToolCalls)
		return r, nil
	})
}

// ollamaCalls are a model's tool calls as Ollama answers them: each with an id (Ollama's
// "call_" and eight characters, when the model gave none) and its index.
func ollamaCalls(calls []api.ToolCall) []api.ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := slices.Clone(calls)
	for i := range out {
		if out[i].ID == "" {
			out[i].ID = "call_" + strings.ToLower(rand.Text()[:8])
		}
		out[i].Function.Index = i
	}
	return out
}

// ollamaDoneReason is Ollama's done_reason of a chat's finish: "length" when the answer was cut
// at its limit, "stop" otherwise (Ollama reports tool calls as "stop" too).
func ollamaDoneReason(finish string) string {
	if finish == "length" {
		return "length"
	}
	return "stop"
}

// ollamaMetrics are the counts and durations Ollama reports: the tokens of every model call made
// for the chat (the routing's and the answer's, as the OpenAI door's usage), the answering call's
// load, prompt and eval times when it reported them, and the request's whole time.
func ollamaMetrics(out *answer.ChatResult, total time.Duration) api.Metrics {
	m := api.Metrics{TotalDuration: total, PromptEvalCount: out.Usage.PromptTokens, EvalCount: out.Usage.CompletionTokens}
	if cu := out.Trace.CompletionUsage; cu != nil {
		ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
		m.LoadDuration, m.PromptEvalDuration, m.EvalDuration = ms(cu.LoadMS), ms(cu.PrefillMS), ms(cu.DecodeMS)
	}
	return m
}
