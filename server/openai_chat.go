package server

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/ollama/ollama/api"

	"toolrouter/answer"
)

// This file serves the OpenAI-compatible front door: POST /v1/chat/completions and GET
// /v1/models. A chat completion routes the last user message, then has the model the request
// names answer with the tool results as evidence (or the whole council, for model "council"). A
// request with its own tools is answered with calls of them, chosen and written by the routing's
// two phases (answer.Chat), which the client runs.

// ModelInfo is one model GET /v1/models lists: its name as a chat completion takes it, and the
// provider that serves it.
type ModelInfo struct {
	ID      string
	OwnedBy string
}

// openAIErrorBody is OpenAI's error object: the code and status are apiErrorOf's.
type openAIErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

// openAIError renders e in OpenAI's shape, {"error": {message, type, param, code}}.
func openAIError(e *answer.Problem) fiber.Map {
	b := openAIErrorBody{Message: e.Message, Code: e.Code, Type: openAIErrorType(e.Status)}
	if e.Param != "" {
		b.Param = &e.Param
	}
	return fiber.Map{"error": b}
}

// openAIErrorType is OpenAI's error type of a status.
func openAIErrorType(status int) string {
	switch {
	case status == fiber.StatusUnauthorized:
		return "authentication_error"
	case status == fiber.StatusForbidden:
		return "permission_error"
	case status == fiber.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// chatResult is a chat completion's answer (answer.Chat's) and its OpenAI ids.
type chatResult struct {
	id      string
	created int64
	model   string
	out     *answer.ChatResult
}

// chatMessageOut is a response's message.
type chatMessageOut struct {
	Role    string  `json:"role"`
	Content *string `json:"content"`
	// ReasoningContent is the model's thinking, as LM Studio, vLLM and DeepSeek name it.
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []chatToolCall `json:"tool_calls,omitempty"`
}

type chatChoice struct {
	Index        int            `json:"index"`
	Message      chatMessageOut `json:"message"`
	Logprobs     any            `json:"logprobs"`
	FinishReason string         `json:"finish_reason"`
}

// chatCompletion is the body of a non-streaming answer.
type chatCompletion struct {
	ID          string           `json:"id"`
	Object      string           `json:"object"`
	Created     int64            `json:"created"`
	Model       string           `json:"model"`
	Choices     []chatChoice     `json:"choices"`
	Usage       answer.Tokens    `json:"usage"`
	XToolrouter answer.ChatTrace `json:"x_toolrouter"`
}

type chatDelta struct {
	Role             string              `json:"role,omitempty"`
	Content          *string             `json:"content,omitempty"`
	ReasoningContent *string             `json:"reasoning_content,omitempty"`
	ToolCalls        []chatToolCallDelta `json:"tool_calls,omitempty"`
}

// chatToolCallDelta is a piece of a streamed tool call, as OpenAI streams them: the call's index,
// id, type and name first, then its arguments.
type chatToolCallDelta struct {
	Index    int                   `json:"index"`
	ID       string                `json:"id,omitempty"`
	Type     string                `json:"type,omitempty"`
	Function chatToolFunctionDelta `json:"function"`
}

type chatToolFunctionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type chatChunkChoice struct {
	Index        int       `json:"index"`
	Delta        chatDelta `json:"delta"`
	Logprobs     any       `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

// chatChunk is one event of a streamed answer.
type chatChunk struct {
	ID      string            `json:"id"`
	Object  string            `json:"object"`
	Created int64             `json:"created"`
	Model   string            `json:"model"`
	Choices []chatChunkChoice `json:"choices"`
	// Usage is sent, null but on the last chunk, when the request's stream_options asks for it.
	Usage       *answer.Tokens    `json:"usage,omitempty"`
	XToolrouter *answer.ChatTrace `json:"x_toolrouter,omitempty"`
}

// openAIToolCalls converts a model's tool calls to OpenAI's shape.
func openAIToolCalls(calls []api.ToolCall) []chatToolCall {
	out := make([]chatToolCall, 0, len(calls))
	for i, tc := range calls {
		args, err := json.Marshal(tc.Function.Arguments)
		if err != nil || string(args) == "null" {
			args = []byte("{}")
		}
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%s", i, strings.ToLower(rand.Text()[:12]))
		}
		out = append(out, chatToolCall{ID: id, Type: "function", Function: chatToolFunction{Name: tc.Function.Name, Arguments: string(args)}})
	}
	return out
}

// chatCompletions serves POST /v1/chat/completions: the body checked (decodeChat), the model
// checked, then answer.Chat's answer in OpenAI's shape, streamed or not.
func (h *handlers) chatCompletions(c *fiber.Ctx) error {
	in, err := h.decodeChat(c.Body())
	if err != nil {
		return err
	}
	id, err := h.actingAs(c, "") // the body's user field is not an identity
	if err != nil {
		return err
	}
	// Every error known before the work starts is answered with its status, a stream's too: no
	// tool or model call is made for a request that ends in one.
	if err := h.chat.Check(c.UserContext(), in.Model); err != nil {
		return err
	}
	res := &chatResult{id: "chatcmpl-" + rand.Text(), created: time.Now().Unix(), model: in.Model, out: &answer.ChatResult{}}
	rep := reportOf(c)
	run := func(ctx context.Context, onDelta func(answer.Delta)) error {
		out, err := h.chat.Run(ctx, in.ChatRequest, id, onDelta)
		res.out = out
		reportChat(rep, out)
		return err
	}
	if in.stream {
		return h.streamAs(c, chatEvents(res, in.includeUsage), func(ctx context.Context, send sendFunc) (any, error) {
			send("", res.chunk(chatDelta{Role: "assistant", Content: new(string)}, nil))
			return res, run(ctx, func(d answer.Delta) {
				if d.Thinking != "" {
					send("", res.chunk(chatDelta{ReasoningContent: &d.Thinking}, nil))
				}
				if d.Text != "" {
					send("", res.chunk(chatDelta{Content: &d.Text}, nil))
				}
			})
		})
	}
	return h.serve(c, func(ctx context.Context) (any, error) {
		if err := run(ctx, nil); err != nil {
			return nil, err
		}
		out := res.out
		msg := chatMessageOut{Role: "assistant", Content: &out.Text, ReasoningContent: out.Thinking}
		if len(out.ToolCalls) > 0 {
			msg.ToolCalls = openAIToolCalls(out.ToolCalls)
			if out.Text == "" {
				msg.Content = nil
			}
		}
		return chatCompletion{ID: res.id, Object: "chat.completion", Created: res.created, Model: res.model,
			Choices: []chatChoice{{Message: msg, FinishReason: out.Finish}}, Usage: out.Usage, XToolrouter: out.Trace}, nil
	})
}

// chunk is a stream event of res with one choice's delta (and finish reason, on the last).
func (r *chatResult) chunk(d chatDelta, finish *string) chatChunk {
	return chatChunk{ID: r.id, Object: "chat.completion.chunk", Created: r.created, Model: r.model,
		Choices: []chatChunkChoice{{Delta: d, FinishReason: finish}}}
}

// chatEvents is the format of a streamed chat completion: unnamed events of chat.completion.chunk
// objects; then the finish reason (and the tool calls), the usage when includeUsage, and
// x_toolrouter on the last chunk, then [DONE]; or, when the work failed after the stream had
// started, an {"error": {...}} event as OpenAI sends it, then [DONE], so that a client reading to
// [DONE] sees the stream end cleanly.
func chatEvents(res *chatResult, includeUsage bool) eventFormat {
	return eventFormat{
		end: func(send sendFunc, _ any, e *answer.Problem) {
			if e != nil {
				send("", openAIError(e))
				send("", sseDone{})
				return
			}
			out := res.out
			// Each tool call as OpenAI streams one: its id, type and name with empty arguments,
			// then its arguments; the finish reason comes apart, in a chunk of its own.
			for i, tc := range openAIToolCalls(out.ToolCalls) {
				send("", res.chunk(chatDelta{ToolCalls: []chatToolCallDelta{{Index: i, ID: tc.ID, Type: tc.Type,
					Function: chatToolFunctionDelta{Name: tc.Function.Name}}}}, nil))
				send("", res.chunk(chatDelta{ToolCalls: []chatToolCallDelta{{Index: i, Function: chatToolFunctionDelta{Arguments: tc.Function.Arguments}}}}, nil))
			}
			last := res.chunk(chatDelta{}, &out.Finish)
			if includeUsage {
				send("", last)
				last = chatChunk{ID: res.id, Object: "chat.completion.chunk", Created: res.created, Model: res.model,
					Choices: []chatChunkChoice{}, Usage: &out.Usage}
			}
			last.XToolrouter = &out.Trace
			send("", last)
			send("", sseDone{})
		},
	}
}

// openAIModel is OpenAI's model object.
type openAIModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	// upstream is what the router's provider listed of it, for GET /api/tags (nil: a configured
	// model).
	upstream *api.ListModelResponse
}

// models serves GET /v1/models: OpenAI's list of modelList's models.
func (h *handlers) models(c *fiber.Ctx) error {
	return c.JSON(fiber.Map{"object": "list", "data": h.modelList(c.UserContext())})
}

// model serves GET /v1/models/{id}: OpenAI's model object of a listed id (which may hold
// slashes, "remote/gpt-4o-mini", sent as they are or escaped), 404 model_not_found otherwise.
func (h *handlers) model(c *fiber.Ctx) error {
	id, err := url.PathUnescape(c.Params("*"))
	if err != nil {
		id = c.Params("*")
	}
	for _, m := range h.modelList(c.UserContext()) {
		if m.ID == id {
			return c.JSON(m)
		}
	}
	return &answer.Problem{Status: fiber.StatusNotFound, Code: "model_not_found", Param: "model",
		Message: fmt.Sprintf("model %q is not listed: GET /v1/models lists the models served", clipHeader(id))}
}

// modelList is what GET /v1/models lists: "council" when a council is configured, the configured
// models (the router's and the council's), and the models the router's provider lists when it
// answers within the probe timeout.
func (h *handlers) modelList(ctx context.Context) []openAIModel {
	list := []openAIModel{}
	seen := map[string]bool{}
	add := func(id, owner string, upstream *api.ListModelResponse) {
		if id != "" && !seen[id] {
			seen[id] = true
			list = append(list, openAIModel{ID: id, Object: "model", OwnedBy: owner, upstream: upstream})
		}
	}
	if h.d.Council != nil {
		add(answer.CouncilModel, "toolrouter", nil)
	}
	for _, m := range h.o.Models {
		add(m.ID, m.OwnedBy, nil)
	}
	if h.d.Model != nil {
		ctx, cancel := context.WithTimeout(ctx, h.o.ProbeTimeout)
		defer cancel()
		if tags, err := h.d.Model.List(ctx); err == nil {
			for i, m := range tags.Models {
				add(m.Name, h.o.RouterProvider, &tags.Models[i])
			}
		} else {
			h.o.Logger.Debug("listing the router provider's models", "err", h.o.Redactor.String(err.Error()))
		}
	}
	return list
}
