package server

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/ollama/ollama/api"

	"toolrouter/access"
	"toolrouter/answer"
	"toolrouter/council"
	"toolrouter/observe"
	"toolrouter/prompts"
	"toolrouter/provider"
	"toolrouter/router"
)

// This file serves the OpenAI-compatible front door: POST /v1/chat/completions and GET
// /v1/models. A chat completion routes the last user message, then has the model the request
// names answer with the tool results as evidence (or the whole council, for model "council"). A
// request with its own tools is passed through to the model, without routing.

// Completer makes one chat completion with the named model: main wires it over the configured
// providers. Check says, before anything runs for the request, whether a model name can answer:
// nil, an error wrapping ErrUnknownModel, or another error when its provider could not say.
// Complete calls onDelta, when not nil, with each piece of the answer's text and thinking as it
// comes; it bounds the answer's size (ollama.max_response_bytes). A model its provider does not
// have is an error wrapping ErrUnknownModel.
type Completer interface {
	Check(ctx context.Context, model string) error
	Complete(ctx context.Context, req CompletionRequest, onDelta func(Delta)) (Completion, error)
}

// Delta is one piece of a streamed answer: text or thinking (one of them set).
type Delta struct {
	Text, Thinking string
}

// CompletionRequest is one completion: the model's name as the client gave it, the messages, the
// client's tools (nil: none), model options in Ollama's names (temperature, top_p,
// num_predict, stop, seed, frequency_penalty, presence_penalty), and Ollama's format and think
// (nil: not set).
type CompletionRequest struct {
	Model    string
	Messages []api.Message
	Tools    api.Tools
	Options  map[string]any
	// Format is Ollama's format: "json" or a JSON Schema (from response_format).
	Format json.RawMessage
	// Think is Ollama's think: false, or a level "low", "medium", "high" (from reasoning_effort).
	Think *api.ThinkValue
}

// Completion is a finished completion.
type Completion struct {
	Text string
	// Thinking is the model's reasoning, apart from its answer ("" when it gave none).
	Thinking  string
	ToolCalls []api.ToolCall
	// FinishReason is OpenAI's: "stop", "length" or "tool_calls".
	FinishReason string
	// Stats are the call's tokens and server-side times (provider.Call's).
	Stats provider.Stats
}

// ModelInfo is one model GET /v1/models lists: its name as a chat completion takes it, and the
// provider that serves it.
type ModelInfo struct {
	ID      string
	OwnedBy string
}

// ErrUnknownModel is the Completer's error for a model its provider does not have.
var ErrUnknownModel = errors.New("model not found")

var (
	errCompletion     = errors.New("completion model failed")
	errNoCompleter    = errors.New("chat completions are not wired to a model provider")
	errNoCouncilModel = errors.New(`model "council" asks for the council, but none is configured (council.members in the configuration)`)
)

// openAIPath reports whether a path is one of the OpenAI-compatible routes', whose errors take
// OpenAI's shape.
func openAIPath(path string) bool {
	return strings.HasPrefix(path, "/v1/chat/") || path == "/v1/models" || strings.HasPrefix(path, "/v1/models/")
}

// openAIErrorBody is OpenAI's error object: the code and status are apiErrorOf's.
type openAIErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

// openAIError renders e in OpenAI's shape, {"error": {message, type, param, code}}.
func openAIError(e *apiError) fiber.Map {
	b := openAIErrorBody{Message: e.msg, Code: e.code, Type: openAIErrorType(e.status)}
	if e.param != "" {
		b.Param = &e.param
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

// chatUsage is OpenAI's usage object.
type chatUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// completionUsage is the answering model's call: its tokens and the split of the server's time.
type completionUsage struct {
	chatUsage
	provider.Breakdown
}

// chatTrace is a response's x_toolrouter field: how it was answered.
type chatTrace struct {
	// Mode is "routed" (tools routed, the named model answered), "council" or "passthrough"
	// (the client's own tools; nothing routed).
	Mode    string          `json:"mode"`
	Routing *router.Outcome `json:"routing,omitempty"`
	Council *council.Result `json:"council,omitempty"`
	// CompletionUsage is the answering model's call, apart from the routing's (in routing.usage)
	// and the council's (in council.usage).
	CompletionUsage *completionUsage `json:"completion_usage,omitempty"`
}

// chatResult is a chat completion's answer.
type chatResult struct {
	id      string
	created int64
	model   string
	text    string
	// thinking is the answering model's reasoning.
	thinking string
	calls    []api.ToolCall
	finish   string
	usage    chatUsage
	trace    chatTrace
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
	ID          string       `json:"id"`
	Object      string       `json:"object"`
	Created     int64        `json:"created"`
	Model       string       `json:"model"`
	Choices     []chatChoice `json:"choices"`
	Usage       chatUsage    `json:"usage"`
	XToolrouter chatTrace    `json:"x_toolrouter"`
}

type chatDelta struct {
	Role             string         `json:"role,omitempty"`
	Content          *string        `json:"content,omitempty"`
	ReasoningContent *string        `json:"reasoning_content,omitempty"`
	ToolCalls        []chatToolCall `json:"tool_calls,omitempty"`
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
	Usage       *chatUsage `json:"usage,omitempty"`
	XToolrouter *chatTrace `json:"x_toolrouter,omitempty"`
}

// openAIToolCalls converts a model's tool calls to OpenAI's shape.
func openAIToolCalls(calls []api.ToolCall, indexed bool) []chatToolCall {
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
		c := chatToolCall{ID: id, Type: "function", Function: chatToolFunction{Name: tc.Function.Name, Arguments: string(args)}}
		if indexed {
			c.Index = &i
		}
		out = append(out, c)
	}
	return out
}

// chatCompletions serves POST /v1/chat/completions.
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
	if err := h.checkModel(c.UserContext(), in.model); err != nil {
		return err
	}
	res := &chatResult{id: "chatcmpl-" + rand.Text(), created: time.Now().Unix(), model: in.model}
	rep := reportOf(c)
	if in.stream {
		return h.streamAs(c, chatEvents(res, in.includeUsage), func(ctx context.Context, send sendFunc) (any, error) {
			send("", res.chunk(chatDelta{Role: "assistant", Content: new(string)}, nil))
			return res, h.runChat(ctx, in, id, rep, res, func(d Delta) {
				if d.Thinking != "" {
					send("", res.chunk(chatDelta{ReasoningContent: &d.Thinking}, nil))
				}
				if d.Text != "" {
					send("", res.chunk(chatDelta{Content: &d.Text}, nil))
				}
			})
		})
	}
	ctx, end, err := h.request(c.UserContext(), c.Context().Conn())
	if err != nil {
		return err
	}
	defer end()
	err = h.runChat(ctx, in, id, rep, res, nil)
	if cause := interrupted(ctx); cause != nil {
		return cause
	}
	if err != nil {
		return err
	}
	msg := chatMessageOut{Role: "assistant", Content: &res.text, ReasoningContent: res.thinking}
	if len(res.calls) > 0 {
		msg.ToolCalls = openAIToolCalls(res.calls, false)
		if res.text == "" {
			msg.Content = nil
		}
	}
	return c.JSON(chatCompletion{ID: res.id, Object: "chat.completion", Created: res.created, Model: res.model,
		Choices: []chatChoice{{Message: msg, FinishReason: res.finish}}, Usage: res.usage, XToolrouter: res.trace})
}

// checkModel is the one place a chat completion's model name is found known or not, before the
// request is routed: "council" is the council, which must be configured (decodeChat has refused
// it with the client's tools); any other name is the Completer's to check (Completer.Check),
// within Options.ProbeTimeout. An unknown model is a 404, a provider that cannot say a 502 (504
// on its timeout).
func (h *handlers) checkModel(ctx context.Context, model string) error {
	if model == CouncilModel {
		if h.ans.Check(answer.Always) != nil {
			return errNoCouncilModel
		}
		return nil
	}
	if h.d.Completer == nil {
		return errNoCompleter
	}
	ctx, cancel := context.WithTimeout(ctx, h.o.ProbeTimeout)
	defer cancel()
	switch err := h.d.Completer.Check(ctx, model); {
	case errors.Is(err, ErrUnknownModel):
		return fmt.Errorf("checking the model: %w", err)
	case err != nil:
		return fmt.Errorf("%w: checking the model: %w", errCompletion, err)
	}
	return nil
}

// runChat answers in into res: passed through with the client's tools, by the council, or by the
// named model with the routed tools' results as evidence. onDelta, when not nil, gets the answer's
// text and thinking as they come.
func (h *handlers) runChat(ctx context.Context, in *chatInput, id access.Identity, rep *served, res *chatResult, onDelta func(Delta)) error {
	if in.tools != nil {
		res.trace.Mode = "passthrough"
		tools := in.tools
		if in.toolChoice == toolChoiceNone {
			tools = nil
		}
		return h.complete(ctx, rep, res, CompletionRequest{Model: in.model, Messages: in.messages, Tools: tools, Options: in.options,
			Format: in.format, Think: in.think}, onDelta)
	}
	req := router.Request{Query: in.messages[in.last].Content, Identity: id}
	for _, m := range in.messages[:in.last] {
		if m.Role == "user" || m.Role == "assistant" {
			req.History = append(req.History, router.Message{Role: m.Role, Content: m.Content})
		}
	}
	if in.model == CouncilModel {
		res.trace.Mode = "council"
		out, err := h.ans.Run(ctx, req, answer.Always, nil)
		reportAnswer(rep, out)
		if out != nil {
			res.trace.Routing, res.trace.Council = out.Routing, out.Council
		}
		if err != nil {
			return err
		}
		res.text, res.finish = out.Final, "stop"
		res.usage = usage(out.Usage.Total.PromptTokens, out.Usage.Total.CompletionTokens)
		if onDelta != nil && res.text != "" {
			onDelta(Delta{Text: res.text})
		}
		return nil
	}
	res.trace.Mode = "routed"
	out, err := h.d.Router.Route(ctx, req)
	reportRoute(rep, out)
	res.trace.Routing = out
	if err != nil {
		return err
	}
	msgs, err := h.withEvidence(in.messages, out)
	if err != nil {
		return err
	}
	if err := h.complete(ctx, rep, res, CompletionRequest{Model: in.model, Messages: msgs, Options: in.options, Format: in.format, Think: in.think}, onDelta); err != nil {
		return err
	}
	res.usage = usage(res.usage.PromptTokens+out.Usage.PromptTokens, res.usage.CompletionTokens+out.Usage.CompletionTokens)
	return nil
}

func usage(prompt, completion int) chatUsage {
	return chatUsage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
}

// withEvidence returns msgs with the tool results as a system message after the leading system
// messages: each result shortened to council.max_evidence_bytes, as the council sees them.
func (h *handlers) withEvidence(msgs []api.Message, out *router.Outcome) ([]api.Message, error) {
	text, err := prompts.CompletionEvidence(council.PromptEvidence(answer.Evidence(out), h.o.MaxEvidenceBytes))
	if err != nil {
		return nil, err
	}
	at := slices.IndexFunc(msgs, func(m api.Message) bool { return m.Role != "system" })
	return slices.Insert(slices.Clone(msgs), at, api.Message{Role: "system", Content: text}), nil
}

// complete makes the completion call and records it in the report.
func (h *handlers) complete(ctx context.Context, rep *served, res *chatResult, req CompletionRequest, onDelta func(Delta)) error {
	start := time.Now()
	comp, err := h.d.Completer.Complete(ctx, req, onDelta)
	call := observe.ModelCall{Phase: "completion", Model: req.Model, Start: start, Duration: time.Since(start),
		PromptTokens: comp.Stats.PromptTokens, CompletionTokens: comp.Stats.DecodeTokens, Breakdown: comp.Stats.Breakdown}
	if err != nil {
		call.Err = err.Error()
	}
	rep.ModelCalls = append(rep.ModelCalls, call)
	if err != nil {
		if errors.Is(err, ErrUnknownModel) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return fmt.Errorf("completion: %w", err)
		}
		return fmt.Errorf("%w: %w", errCompletion, err)
	}
	cu := usage(comp.Stats.PromptTokens, comp.Stats.DecodeTokens)
	res.text, res.thinking, res.calls, res.finish, res.usage = comp.Text, comp.Thinking, comp.ToolCalls, comp.FinishReason, cu
	res.trace.CompletionUsage = &completionUsage{chatUsage: cu, Breakdown: comp.Stats.Breakdown}
	switch {
	case len(res.calls) > 0:
		res.finish = "tool_calls"
	case res.finish == "":
		res.finish = "stop"
	}
	return nil
}

// chunk is a stream event of res with one choice's delta (and finish reason, on the last).
func (r *chatResult) chunk(d chatDelta, finish *string) chatChunk {
	return chatChunk{ID: r.id, Object: "chat.completion.chunk", Created: r.created, Model: r.model,
		Choices: []chatChunkChoice{{Delta: d, FinishReason: finish}}}
}

// sseDone is the data of OpenAI's last stream event.
type sseDone struct{}

// chatEvents is the format of a streamed chat completion: unnamed events of chat.completion.chunk
// objects; then the finish reason (and the tool calls), the usage when includeUsage, and
// x_toolrouter on the last chunk, then [DONE]; or, when the work failed after the stream had
// started, an {"error": {...}} event as OpenAI sends it, then [DONE], so that a client reading to
// [DONE] sees the stream end cleanly.
func chatEvents(res *chatResult, includeUsage bool) eventFormat {
	return eventFormat{
		write: func(w *bufio.Writer, ev sseEvent) error {
			var data []byte
			if _, ok := ev.data.(sseDone); ok {
				data = []byte("[DONE]")
			} else if b, err := json.Marshal(ev.data); err == nil {
				data = b
			} else {
				data, _ = json.Marshal(fiber.Map{"error": openAIErrorBody{Message: err.Error(), Type: "server_error", Code: "internal"}})
			}
			if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
				return err
			}
			return w.Flush()
		},
		end: func(send sendFunc, _ any, e *apiError) {
			if e != nil {
				send("", openAIError(e))
				send("", sseDone{})
				return
			}
			var d chatDelta
			if len(res.calls) > 0 {
				d.ToolCalls = openAIToolCalls(res.calls, true)
			}
			last := res.chunk(d, &res.finish)
			if includeUsage {
				send("", last)
				last = chatChunk{ID: res.id, Object: "chat.completion.chunk", Created: res.created, Model: res.model,
					Choices: []chatChunkChoice{}, Usage: &res.usage}
			}
			last.XToolrouter = &res.trace
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
	return &apiError{status: fiber.StatusNotFound, code: "model_not_found", param: "model",
		msg: fmt.Sprintf("model %q is not listed: GET /v1/models lists the models served", clipHeader(id))}
}

// modelList is what GET /v1/models lists: "council" when a council is configured, the configured
// models (the router's and the council's), and the models the router's provider lists when it
// answers within the probe timeout.
func (h *handlers) modelList(ctx context.Context) []openAIModel {
	list := []openAIModel{}
	seen := map[string]bool{}
	add := func(id, owner string) {
		if id != "" && !seen[id] {
			seen[id] = true
			list = append(list, openAIModel{ID: id, Object: "model", OwnedBy: owner})
		}
	}
	if h.d.Council != nil {
		add(CouncilModel, "toolrouter")
	}
	for _, m := range h.o.Models {
		add(m.ID, m.OwnedBy)
	}
	if h.d.Model != nil {
		ctx, cancel := context.WithTimeout(ctx, h.o.ProbeTimeout)
		defer cancel()
		if tags, err := h.d.Model.List(ctx); err == nil {
			for _, m := range tags.Models {
				add(m.Name, h.o.RouterProvider)
			}
		} else {
			h.o.Logger.Debug("listing the router provider's models", "err", h.o.Redactor.String(err.Error()))
		}
	}
	return list
}
