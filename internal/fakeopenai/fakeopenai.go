// Package fakeopenai is a test double for an OpenAI-compatible server: an httptest server that
// speaks the chat-completions wire protocol (one JSON object, or server-sent events ending in
// "data: [DONE]" when the request streams), answers from a per-test script and records every
// request with its Authorization header, so tests can assert what a model was sent.
package fakeopenai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Reply is one scripted answer to a chat-completions request.
type Reply struct {
	// Content is the assistant message text.
	Content string
	// Reasoning is sent as reasoning_content (vLLM, DeepSeek style).
	Reasoning string
	// ToolCalls are the assistant's tool calls; streamed in two deltas each.
	ToolCalls []ToolCall
	// PromptTokens and CompletionTokens are reported in usage (when streaming, only if the
	// request asked for stream_options.include_usage).
	PromptTokens, CompletionTokens int
	// FinishReason defaults to "stop", or "tool_calls" when there are tool calls.
	FinishReason string

	// Status, when not 0 or 200, answers with that status and an OpenAI error object made of
	// Error, ErrorType and ErrorCode.
	Status               int
	Error                string
	ErrorType, ErrorCode string
	// StreamError, when streaming, sends the content and then an error object instead of the end.
	StreamError string
	// NoDone ends a stream with neither a finish_reason nor [DONE].
	NoDone bool
	// Raw, when set, is written as the body verbatim (status 200, or Status when set).
	Raw string
	// Hang blocks until the client gives up (or the server closes).
	Hang bool
	// Delay answers after this long (for benchmarks of fixed-time models; tests should not need it).
	Delay time.Duration
	// Flood sends this many bytes of answer text in 4 KiB pieces without finishing: as stream
	// chunks when the request streams, else as one JSON body that never ends. It ends early when
	// the client goes away; Flooded then receives the bytes written.
	Flood int64
}

// ToolCall is one scripted tool call; Arguments is the JSON text the model produced.
type ToolCall struct {
	ID, Name, Arguments string
}

// Request is one request as received.
type Request struct {
	// Authorization is the Authorization header as sent.
	Authorization string
	// Body is the decoded request; Raw the body as sent.
	Body ChatRequest
	Raw  json.RawMessage
}

// ChatRequest is the part of a chat-completions request the fake decodes.
type ChatRequest struct {
	Model         string    `json:"model"`
	Messages      []Message `json:"messages"`
	Stream        bool      `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Temperature      *float64        `json:"temperature"`
	TopP             *float64        `json:"top_p"`
	Seed             *int64          `json:"seed"`
	MaxTokens        *int64          `json:"max_tokens"`
	Stop             []string        `json:"stop"`
	FrequencyPenalty *float64        `json:"frequency_penalty"`
	PresencePenalty  *float64        `json:"presence_penalty"`
	ResponseFormat   json.RawMessage `json:"response_format"`
	Tools            json.RawMessage `json:"tools"`
}

// Message is one request message.
type Message struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls,omitempty"`
}

// Server is a fake OpenAI-compatible server; its API base URL is URL + "/v1".
type Server struct {
	*httptest.Server

	quit     chan struct{}
	quitOnce sync.Once
	flooded  chan int64 // the bytes written by each flood, once it ends

	mu       sync.Mutex // guards script, requests
	script   []Reply
	fn       func(Request) Reply
	requests []Request
}

// New starts a fake that answers requests with replies, in order; once they run out it answers
// 500.
func New(t testing.TB, replies ...Reply) *Server {
	return start(t, replies, nil)
}

// NewFunc starts a fake that answers each request with fn(req); fn must be safe for concurrent
// use.
func NewFunc(t testing.TB, fn func(Request) Reply) *Server {
	return start(t, nil, fn)
}

func start(t testing.TB, replies []Reply, fn func(Request) Reply) *Server {
	s := &Server{script: replies, fn: fn, quit: make(chan struct{}), flooded: make(chan int64, 16)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// BaseURL is the URL a client appends "/chat/completions" to.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Close releases requests that hang and stops the server; it may be called more than once.
func (s *Server) Close() {
	s.quitOnce.Do(func() { close(s.quit) })
	s.Server.Close()
}

// Flooded receives, for each Flood reply once it has ended, the bytes it wrote (up to 16 pending).
func (s *Server) Flooded() <-chan int64 { return s.flooded }

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) next(req Request) Reply {
	s.mu.Lock()
	s.requests = append(s.requests, req)
	fn := s.fn
	if fn == nil {
		defer s.mu.Unlock()
		if len(s.script) == 0 {
			return Reply{Status: http.StatusInternalServerError, Error: "fakeopenai: no scripted reply left", ErrorType: "server_error"}
		}
		r := s.script[0]
		s.script = s.script[1:]
		return r
	}
	s.mu.Unlock()
	return fn(req)
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	req := Request{Authorization: r.Header.Get("Authorization"), Raw: raw}
	if err == nil {
		err = json.Unmarshal(raw, &req.Body)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), "invalid_request_error", "")
		return
	}
	reply := s.next(req)
	if reply.Delay > 0 {
		t := time.NewTimer(reply.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		case <-s.quit:
			return
		}
	}
	switch {
	case reply.Hang:
		select {
		case <-r.Context().Done():
		case <-s.quit:
		}
		return
	case reply.Raw != "":
		if reply.Status != 0 {
			w.WriteHeader(reply.Status)
		}
		fmt.Fprint(w, reply.Raw)
		return
	case reply.Status != 0 && reply.Status != http.StatusOK:
		writeError(w, reply.Status, reply.Error, reply.ErrorType, reply.ErrorCode)
		return
	case reply.Flood > 0:
		n := flood(w, reply.Flood, req.Body.Stream, req.Body.Model)
		select {
		case s.flooded <- n:
		default:
		}
		return
	}
	finish := reply.FinishReason
	if finish == "" {
		finish = "stop"
		if len(reply.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	id, created := "chatcmpl-fake", time.Now().Unix()
	usage := map[string]int{"prompt_tokens": reply.PromptTokens, "completion_tokens": reply.CompletionTokens, "total_tokens": reply.PromptTokens + reply.CompletionTokens}
	if !req.Body.Stream {
		msg := map[string]any{"role": "assistant", "content": reply.Content}
		if reply.Reasoning != "" {
			msg["reasoning_content"] = reply.Reasoning
		}
		if len(reply.ToolCalls) > 0 {
			msg["tool_calls"] = toolCalls(reply.ToolCalls, false)
		}
		w.Header().Set("Content-Type", "application/json")
		writeJSON(w, map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": req.Body.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   usage,
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Body.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
	}
	fmt.Fprint(w, ": keep-alive comment, as OpenRouter sends\n\n")
	send(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	if reply.Reasoning != "" {
		send(chunk(map[string]any{"reasoning_content": reply.Reasoning}, nil))
	}
	for _, c := range chunks(reply.Content, 8) {
		send(chunk(map[string]any{"content": c}, nil))
	}
	for _, tc := range toolCalls(reply.ToolCalls, true) {
		send(chunk(map[string]any{"tool_calls": []any{tc}}, nil))
	}
	if reply.StreamError != "" {
		send(map[string]any{"error": map[string]any{"message": reply.StreamError, "type": "server_error", "code": nil}})
		return
	}
	if reply.NoDone {
		return
	}
	send(chunk(map[string]any{}, finish))
	if req.Body.StreamOptions != nil && req.Body.StreamOptions.IncludeUsage {
		send(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Body.Model, "choices": []any{}, "usage": usage})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// flood writes about size bytes of answer text, as stream chunks of 4 KiB of text or as one JSON
// body that never ends, and returns the bytes written when it ends: when all are written or the
// client stops reading.
func flood(w http.ResponseWriter, size int64, stream bool, model string) int64 {
	piece := strings.Repeat("x", 4<<10)
	var head, tail string
	if stream {
		w.Header().Set("Content-Type", "text/event-stream")
		b, _ := json.Marshal(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": piece}, "finish_reason": nil}}})
		i := bytes.Index(b, []byte(piece))
		head, tail = "data: "+string(b[:i]), string(b[i+len(piece):])+"\n\n"
	} else {
		w.Header().Set("Content-Type", "application/json")
		head = `{"id":"chatcmpl-fake","object":"chat.completion","model":"` + model + `","choices":[{"index":0,"message":{"role":"assistant","content":"`
	}
	var written int64
	write := func(s string) bool {
		n, err := io.WriteString(w, s)
		written += int64(n)
		if f, ok := w.(http.Flusher); ok && err == nil {
			f.Flush()
		}
		return err == nil
	}
	if !stream && !write(head) {
		return written
	}
	for sent := int64(0); sent < size; sent += int64(len(piece)) {
		chunk := piece
		if stream {
			chunk = head + piece + tail
		}
		if !write(chunk) {
			break
		}
	}
	return written
}

// toolCalls renders tool calls; streamed, each call is two deltas (id and name, then arguments).
func toolCalls(calls []ToolCall, stream bool) []any {
	var out []any
	for i, c := range calls {
		if !stream {
			out = append(out, map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
			continue
		}
		half := len(c.Arguments) / 2
		out = append(out,
			map[string]any{"index": i, "id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments[:half]}},
			map[string]any{"index": i, "function": map[string]any{"arguments": c.Arguments[half:]}})
	}
	return out
}

func writeError(w http.ResponseWriter, status int, msg, typ, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	var c any
	if code != "" {
		c = code
	}
	writeJSON(w, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": c}})
}

// chunks splits s into pieces of at most n runes, as a streaming model would.
func chunks(s string, n int) []string {
	var out []string
	r := []rune(s)
	for len(r) > n {
		out = append(out, string(r[:n]))
		r = r[n:]
	}
	if len(r) > 0 {
		out = append(out, string(r))
	}
	return out
}

func writeJSON(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	b = append(b, '\n')
	_, _ = w.Write(b)
}
