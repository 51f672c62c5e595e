package provider

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ollama/ollama/api"
)

// OpenAI is a client for one OpenAI-compatible chat-completions endpoint: OpenAI itself, vLLM,
// llama.cpp's server, LM Studio, OpenRouter, and the OpenAI-compatible endpoints of Gemini and
// Anthropic. Its Chat takes and gives Ollama's api types, so the router's tool-calling model and
// the council's members can use either provider unchanged.
//
// The API key is sent only in the Authorization header. It never appears in an error, and the
// client prints as its base URL only: String, GoString, Format and LogValue leave the key out.
// It is safe for concurrent use.
type OpenAI struct {
	base     string
	endpoint string
	key      secret
	http     *http.Client
	lim      limits
	bufs     sync.Pool // *bytes.Buffer for request bodies
}

// NewOpenAI returns a client for the server whose API lives at baseURL, the URL that
// "/chat/completions" is appended to: "https://api.openai.com/v1", "http://127.0.0.1:8000/v1"
// (vLLM, llama.cpp), "https://openrouter.ai/api/v1",
// "https://generativelanguage.googleapis.com/v1beta/openai", "https://api.anthropic.com/v1".
// apiKey may be empty for local servers; hc nil means http.DefaultClient.
func NewOpenAI(baseURL, apiKey string, hc *http.Client, opts ...Option) *OpenAI {
	if hc == nil {
		hc = http.DefaultClient
	}
	base := strings.TrimRight(baseURL, "/")
	return &OpenAI{
		base: base, endpoint: base + "/chat/completions", key: secret(apiKey), http: hc, lim: newLimits(opts),
		bufs: sync.Pool{New: func() any { return new(bytes.Buffer) }},
	}
}

// String returns the client's base URL; the key is never printed.
func (o *OpenAI) String() string { return "openai-compatible " + o.base }

// GoString is String, so %#v does not print the key either.
func (o *OpenAI) GoString() string { return o.String() }

// Format prints String for every verb.
func (o *OpenAI) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, o.String()) }

// LogValue logs the base URL only.
func (o *OpenAI) LogValue() slog.Value { return slog.StringValue(o.String()) }

// APIError is an HTTP error status, or an error object in a stream, from an OpenAI-compatible
// server, with the server's message ({"error": {"message", "type", "code"}}). The API key is
// removed from Message if the server echoed it.
type APIError struct {
	StatusCode int
	// Status is the HTTP status line text ("401 Unauthorized").
	Status  string
	Message string
	Type    string
	Code    string
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(e.Status)
	if b.Len() == 0 {
		b.WriteString(strconv.Itoa(e.StatusCode))
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	var tags []string
	for _, s := range []string{e.Type, e.Code} {
		if s != "" {
			tags = append(tags, s)
		}
	}
	if len(tags) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(tags, ", "))
	}
	return b.String()
}

// Chat sends req to /chat/completions and calls fn as provider.Ollama does: once with the whole
// answer and Done set when req.Stream is false; when streaming, once per content delta, then once
// more with Done, the tool calls and the token counts. Translation:
//
//   - messages keep their role and content; assistant tool calls and "tool" messages become
//     tool_calls and tool_call_id (calls without an id get "call_N");
//   - Format "json" becomes response_format {"type":"json_object"}, a JSON Schema becomes
//     {"type":"json_schema","json_schema":{"name":"output","schema":…}};
//   - Think, a level ("low", "medium", "high"), becomes reasoning_effort with that level; false
//     becomes reasoning_effort "none"; true is not sent (the server's default);
//   - options temperature, top_p, seed, num_predict (max_tokens), stop, frequency_penalty and
//     presence_penalty are sent; Ollama-only options (num_ctx, top_k, …) and keep_alive are not;
//   - usage becomes PromptEvalCount, PromptEvalCachedCount (prompt_tokens_details.cached_tokens)
//     and EvalCount, finish_reason DoneReason, reasoning_content Thinking.
//
// An HTTP error status or a streamed error object is an *APIError. An answer past the response
// limit ends the call with ErrResponseTooLarge, without reading the rest.
func (o *OpenAI) Chat(ctx context.Context, req *api.ChatRequest, fn api.ChatResponseFunc) error {
	body, err := translate(req)
	if err != nil {
		return err
	}
	buf := o.bufs.Get().(*bytes.Buffer)
	buf.Reset()
	defer o.bufs.Put(buf)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(body); err != nil {
		return fmt.Errorf("encoding chat request: %w", err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, o.endpoint, bytes.NewReader(buf.Bytes()))
	if err != nil {
		return fmt.Errorf("building chat request: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("User-Agent", "toolrouter")
	if body.Stream {
		hreq.Header.Set("Accept", "text/event-stream")
	} else {
		hreq.Header.Set("Accept", "application/json")
	}
	if o.key != "" {
		hreq.Header.Set("Authorization", "Bearer "+string(o.key))
	}
	resp, err := o.http.Do(hreq)
	if err != nil {
		return errors.New(o.key.redact(err.Error()))
	}
	defer resp.Body.Close()
	if resp.StatusCode >= http.StatusBadRequest {
		return o.statusError(resp)
	}
	// A server that ignores "stream": true answers with one JSON object; take it as it is.
	if body.Stream && !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return o.stream(resp, fn)
	}
	return o.whole(resp, fn)
}

// whole decodes a non-streaming answer.
func (o *OpenAI) whole(resp *http.Response, fn api.ChatResponseFunc) error {
	limit := o.lim.maxLine()
	b, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil {
		return fmt.Errorf("reading chat response: %w", err)
	}
	if len(b) > limit {
		return lineTooLong(limit)
	}
	var r oaResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("decoding chat response %q: %w", o.key.redact(clip(b)), err)
	}
	if e := r.apiError(resp, o.key); e != nil {
		return e
	}
	if len(r.Choices) == 0 {
		return fmt.Errorf("chat response has no choices: %q", o.key.redact(clip(b)))
	}
	c := r.Choices[0]
	calls, err := toolCalls(c.Message.ToolCalls)
	if err != nil {
		return err
	}
	out := r.response()
	out.Message = api.Message{Role: "assistant", Content: c.Message.Content, Thinking: c.Message.thinking(), ToolCalls: calls}
	out.Done, out.DoneReason = true, c.finish()
	if err := o.lim.meter().Add(out.Message); err != nil {
		return err
	}
	return fn(out)
}

// stream reads server-sent events: "data: {chunk}" events, then "data: [DONE]".
func (o *OpenAI) stream(resp *http.Response, fn api.ChatResponseFunc) error {
	r := bufio.NewReaderSize(resp.Body, 16<<10)
	limit, m := o.lim.maxLine(), o.lim.meter()
	var (
		data     []byte // the current event's data lines
		last     oaResponse
		finish   string
		usage    *oaUsage
		partials []oaToolCall // tool calls accumulated by index
	)
	final := func() error {
		calls, err := toolCalls(partials)
		if err != nil {
			return err
		}
		out := last.response()
		out.Message = api.Message{Role: "assistant", ToolCalls: calls}
		out.Done, out.DoneReason = true, finish
		if usage != nil {
			out.Metrics = usage.metrics()
		}
		return fn(out)
	}
	// event handles one complete event; done reports [DONE].
	event := func() (done bool, err error) {
		d := bytes.TrimSpace(data)
		data = data[:0]
		if len(d) == 0 {
			return false, nil
		}
		if string(d) == "[DONE]" {
			return true, final()
		}
		var chunk oaResponse
		if err := json.Unmarshal(d, &chunk); err != nil {
			return false, fmt.Errorf("decoding chat stream event %q: %w", o.key.redact(clip(d)), err)
		}
		if e := chunk.apiError(resp, o.key); e != nil {
			return false, e
		}
		last.ID, last.Model, last.Created = chunk.ID, chunk.Model, chunk.Created
		if chunk.Usage != nil {
			usage = chunk.Usage
		}
		for _, c := range chunk.Choices {
			if c.Index != 0 {
				continue // n > 1 is never requested
			}
			if f := c.finish(); f != "" {
				finish = f
			}
			n := len(c.Delta.Content) + len(c.Delta.thinking())
			for _, tc := range c.Delta.ToolCalls {
				n += len(tc.Function.Name) + len(tc.Function.Arguments)
				partials = mergeToolCall(partials, tc)
			}
			if err := m.count(n); err != nil {
				return false, err
			}
			if c.Delta.Content == "" && c.Delta.thinking() == "" {
				continue
			}
			out := chunk.response()
			out.Metrics = api.Metrics{} // counts come with Done, as Ollama sends them
			out.Message = api.Message{Role: "assistant", Content: c.Delta.Content, Thinking: c.Delta.thinking()}
			if err := fn(out); err != nil {
				return false, err
			}
		}
		return false, nil
	}
	for {
		line, err := readLine(r, limit)
		switch {
		case len(line) == 0:
			if done, eerr := event(); done || eerr != nil {
				return eerr
			}
		case bytes.HasPrefix(line, []byte("data:")):
			if len(data) > 0 && (json.Valid(data) || string(bytes.TrimSpace(data)) == "[DONE]") {
				// A server that omits the blank line between events: the previous one was whole.
				if done, eerr := event(); done || eerr != nil {
					return eerr
				}
			}
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
			if len(data) > limit { // one event's data lines together
				return lineTooLong(limit)
			}
		default:
			// comments (": keep-alive"), event:, id:, retry: carry nothing for us
		}
		if errors.Is(err, io.EOF) {
			if done, eerr := event(); done || eerr != nil {
				return eerr
			}
			if finish != "" {
				// Finished without [DONE]: the answer is complete, only the terminator is missing.
				return final()
			}
			return nil // like Ollama's stream without its done message: the caller sees no Done
		}
		if err != nil {
			return fmt.Errorf("reading chat stream: %w", err)
		}
	}
}

// statusError turns an HTTP error status into an *APIError with the server's message.
func (o *OpenAI) statusError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &APIError{StatusCode: resp.StatusCode, Status: resp.Status}
	var r oaResponse
	if json.Unmarshal(b, &r) == nil {
		if ae := r.apiError(resp, o.key); ae != nil {
			return ae
		}
		if r.Message != "" { // {"message": "..."}, as some proxies answer
			e.Message = o.key.redact(r.Message)
			return e
		}
	}
	var list []oaResponse // Gemini answers errors as a one-element array
	if json.Unmarshal(b, &list) == nil && len(list) > 0 {
		if ae := list[0].apiError(resp, o.key); ae != nil {
			return ae
		}
	}
	e.Message = o.key.redact(strings.TrimSpace(clip(b)))
	return e
}

// translate builds the chat-completions request body.
func translate(req *api.ChatRequest) (*oaRequest, error) {
	out := &oaRequest{Model: req.Model, Messages: make([]oaMessage, 0, len(req.Messages)), Tools: req.Tools}
	if req.Stream == nil || *req.Stream { // Ollama streams unless told not to
		out.Stream = true
		out.StreamOptions = &oaStreamOptions{IncludeUsage: true}
	}
	var pending []string // ids of the last assistant message's tool calls not yet answered
	for i, m := range req.Messages {
		if len(m.Images) > 0 {
			return nil, fmt.Errorf("message %d: images are not supported by the OpenAI-compatible client", i)
		}
		om := oaMessage{Role: m.Role, Content: m.Content}
		switch {
		case len(m.ToolCalls) > 0:
			pending = pending[:0]
			for j, tc := range m.ToolCalls {
				id := tc.ID
				if id == "" {
					id = fmt.Sprintf("call_%d_%d", i, j)
				}
				args, err := json.Marshal(tc.Function.Arguments)
				if err != nil {
					return nil, fmt.Errorf("message %d: encoding tool call arguments: %w", i, err)
				}
				om.ToolCalls = append(om.ToolCalls, oaToolCall{ID: id, Type: "function", Function: oaFunction{Name: tc.Function.Name, Arguments: string(args)}})
				pending = append(pending, id)
			}
		case m.Role == "tool":
			om.ToolCallID = m.ToolCallID
			if om.ToolCallID == "" && len(pending) > 0 {
				om.ToolCallID = pending[0]
			}
			if k := slices.Index(pending, om.ToolCallID); k >= 0 {
				pending = append(pending[:k], pending[k+1:]...)
			}
		}
		out.Messages = append(out.Messages, om)
	}
	if err := out.format(req.Format); err != nil {
		return nil, err
	}
	if t := req.Think; t != nil {
		switch {
		case t.IsString():
			out.ReasoningEffort = t.String()
		case !t.Bool():
			out.ReasoningEffort = "none"
		}
	}
	if err := out.options(req.Options); err != nil {
		return nil, err
	}
	return out, nil
}

func (r *oaRequest) format(f json.RawMessage) error {
	f = bytes.TrimSpace(f)
	if len(f) == 0 || string(f) == "null" || string(f) == `""` {
		return nil
	}
	var s string
	if json.Unmarshal(f, &s) == nil {
		if s != "json" {
			return fmt.Errorf("format %q: want \"json\" or a JSON Schema object", s)
		}
		r.ResponseFormat = &oaResponseFormat{Type: "json_object"}
		return nil
	}
	if f[0] != '{' || !json.Valid(f) {
		return fmt.Errorf("format: want \"json\" or a JSON Schema object, got %s", clip(f))
	}
	r.ResponseFormat = &oaResponseFormat{Type: "json_schema", JSONSchema: &oaJSONSchema{Name: "output", Schema: f}}
	return nil
}

// options translates the Ollama options the chat-completions API has.
func (r *oaRequest) options(opts map[string]any) error {
	var errs []error
	num := func(key string) *float64 {
		v, ok := opts[key]
		if !ok || v == nil {
			return nil
		}
		f, ok := toFloat(v)
		if !ok {
			errs = append(errs, fmt.Errorf("option %s: want a number, got %T", key, v))
			return nil
		}
		return &f
	}
	integer := func(key string) *int64 {
		f := num(key)
		if f == nil {
			return nil
		}
		if *f != math.Trunc(*f) {
			errs = append(errs, fmt.Errorf("option %s: want a whole number, got %v", key, *f))
			return nil
		}
		i := int64(*f)
		return &i
	}
	r.Temperature = num("temperature")
	r.TopP = num("top_p")
	r.FrequencyPenalty = num("frequency_penalty")
	r.PresencePenalty = num("presence_penalty")
	r.Seed = integer("seed")
	if n := integer("num_predict"); n != nil && *n > 0 { // -1 (no limit) and -2 (fill context) are the default
		r.MaxTokens = n
	}
	switch s := opts["stop"].(type) {
	case nil:
	case string:
		r.Stop = []string{s}
	case []string:
		r.Stop = s
	case []any:
		for _, v := range s {
			str, ok := v.(string)
			if !ok {
				errs = append(errs, fmt.Errorf("option stop: want strings, got %T", v))
				break
			}
			r.Stop = append(r.Stop, str)
		}
	default:
		errs = append(errs, fmt.Errorf("option stop: want a string or a list of strings, got %T", s))
	}
	if len(errs) == 0 {
		return nil
	}
	return joinedError(errs)
}

// joinedError is errors.Join on one line: its errors' texts separated by "; ".
type joinedError []error

func (e joinedError) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e joinedError) Unwrap() []error { return e }

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(n, 64)
		return f, err == nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(rv.Uint()), true
	case reflect.Float32, reflect.Float64:
		return rv.Float(), true
	}
	return 0, false
}

// mergeToolCall adds one streamed tool-call delta: the first delta of an index carries its id and
// name, later ones more of its arguments.
func mergeToolCall(calls []oaToolCall, d oaToolCall) []oaToolCall {
	i := len(calls)
	if d.Index != nil {
		i = *d.Index
	}
	for len(calls) <= i {
		calls = append(calls, oaToolCall{})
	}
	c := &calls[i]
	if d.ID != "" {
		c.ID = d.ID
	}
	if d.Function.Name != "" {
		c.Function.Name = d.Function.Name
	}
	c.Function.Arguments += d.Function.Arguments
	return calls
}

func toolCalls(calls []oaToolCall) ([]api.ToolCall, error) {
	var out []api.ToolCall
	for i, c := range calls {
		if c.Function.Name == "" && c.Function.Arguments == "" {
			continue
		}
		tc := api.ToolCall{ID: c.ID, Function: api.ToolCallFunction{Index: i, Name: c.Function.Name}}
		args := strings.TrimSpace(c.Function.Arguments)
		if args == "" {
			args = "{}"
		}
		if err := json.Unmarshal([]byte(args), &tc.Function.Arguments); err != nil {
			return nil, fmt.Errorf("tool call %s: arguments are not a JSON object: %q", c.Function.Name, clip([]byte(args)))
		}
		out = append(out, tc)
	}
	return out, nil
}

// Wire types of the chat-completions API.
type (
	oaRequest struct {
		Model            string            `json:"model"`
		Messages         []oaMessage       `json:"messages"`
		Stream           bool              `json:"stream"`
		StreamOptions    *oaStreamOptions  `json:"stream_options,omitempty"`
		Temperature      *float64          `json:"temperature,omitempty"`
		TopP             *float64          `json:"top_p,omitempty"`
		Seed             *int64            `json:"seed,omitempty"`
		MaxTokens        *int64            `json:"max_tokens,omitempty"`
		Stop             []string          `json:"stop,omitempty"`
		FrequencyPenalty *float64          `json:"frequency_penalty,omitempty"`
		PresencePenalty  *float64          `json:"presence_penalty,omitempty"`
		ResponseFormat   *oaResponseFormat `json:"response_format,omitempty"`
		ReasoningEffort  string            `json:"reasoning_effort,omitempty"`
		Tools            api.Tools         `json:"tools,omitempty"`
	}
	oaStreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	}
	oaResponseFormat struct {
		Type       string        `json:"type"`
		JSONSchema *oaJSONSchema `json:"json_schema,omitempty"`
	}
	oaJSONSchema struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
	}
	oaMessage struct {
		Role       string       `json:"role"`
		Content    string       `json:"content"`
		ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
		ToolCallID string       `json:"tool_call_id,omitempty"`
	}
	oaToolCall struct {
		Index    *int       `json:"index,omitempty"`
		ID       string     `json:"id,omitempty"`
		Type     string     `json:"type,omitempty"`
		Function oaFunction `json:"function"`
	}
	oaFunction struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	}
	oaResponse struct {
		ID      string     `json:"id"`
		Model   string     `json:"model"`
		Created int64      `json:"created"`
		Choices []oaChoice `json:"choices"`
		Usage   *oaUsage   `json:"usage"`
		// Error is {"message", "type", "code"}, or a string from some servers.
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	oaChoice struct {
		Index        int      `json:"index"`
		Message      oaAnswer `json:"message"`
		Delta        oaAnswer `json:"delta"`
		FinishReason *string  `json:"finish_reason"`
	}
	oaAnswer struct {
		Role             string       `json:"role"`
		Content          string       `json:"content"`
		ReasoningContent string       `json:"reasoning_content"`
		Reasoning        string       `json:"reasoning"`
		ToolCalls        []oaToolCall `json:"tool_calls"`
	}
	oaUsage struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens *int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	}
)

// metrics are the usage in Ollama's terms. prompt_tokens counts the whole prompt and
// prompt_tokens_details.cached_tokens the part of it served from the cache, as Ollama's
// prompt_eval_count and prompt_eval_cached_count do; OpenAI-compatible servers report no durations.
func (u oaUsage) metrics() api.Metrics {
	m := api.Metrics{PromptEvalCount: u.PromptTokens, EvalCount: u.CompletionTokens}
	if d := u.PromptTokensDetails; d != nil {
		m.PromptEvalCachedCount = d.CachedTokens
	}
	return m
}

func (a oaAnswer) thinking() string {
	if a.ReasoningContent != "" {
		return a.ReasoningContent
	}
	return a.Reasoning
}

func (c oaChoice) finish() string {
	if c.FinishReason == nil {
		return ""
	}
	return *c.FinishReason
}

// response starts an api.ChatResponse from the chunk's metadata.
func (r oaResponse) response() api.ChatResponse {
	out := api.ChatResponse{Model: r.Model, CreatedAt: time.Now().UTC()}
	if r.Created > 0 {
		out.CreatedAt = time.Unix(r.Created, 0).UTC()
	}
	if r.Usage != nil {
		out.Metrics = r.Usage.metrics()
	}
	return out
}

// apiError returns the response's error object as an *APIError, nil when it has none.
func (r oaResponse) apiError(resp *http.Response, key secret) *APIError {
	raw := bytes.TrimSpace(r.Error)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	e := &APIError{StatusCode: resp.StatusCode, Status: resp.Status}
	var obj struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	var s string
	switch {
	case json.Unmarshal(raw, &s) == nil:
		e.Message = s
	case json.Unmarshal(raw, &obj) == nil:
		e.Message, e.Type = obj.Message, obj.Type
		code := strings.TrimSpace(string(obj.Code))
		if code != "" && code != "null" {
			if json.Unmarshal(obj.Code, &s) == nil {
				code = s
			}
			e.Code = code
		}
	default:
		e.Message = clip(raw)
	}
	e.Message = key.redact(e.Message)
	return e
}

// secret is an API key: it prints as [redacted] however it is formatted.
type secret string

func (s secret) String() string             { return "[redacted]" }
func (s secret) GoString() string           { return "[redacted]" }
func (s secret) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, "[redacted]") }
func (s secret) LogValue() slog.Value       { return slog.StringValue("[redacted]") }

// redactWindow is the length of the pieces of a key that redact removes: servers that echo a key
// often mask its middle ("sk-proj-abc…wxyz"), so any 8 consecutive bytes of the key are removed.
const redactWindow = 8

// redact removes the key, and every run of at least redactWindow bytes of it, from text.
func (s secret) redact(text string) string {
	k := string(s)
	switch {
	case k == "" || text == "":
		return text
	case len(k) < redactWindow:
		return strings.ReplaceAll(text, k, "[redacted]")
	}
	covered := make([]bool, len(text))
	found := false
	for i := 0; i+redactWindow <= len(k); i++ {
		w := k[i : i+redactWindow]
		for off := 0; off < len(text); {
			j := strings.Index(text[off:], w)
			if j < 0 {
				break
			}
			for p := off + j; p < off+j+redactWindow; p++ {
				covered[p] = true
			}
			found = true
			off += j + 1
		}
	}
	if !found {
		return text
	}
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		if !covered[i] {
			b.WriteByte(text[i])
			continue
		}
		b.WriteString("[redacted]")
		for i+1 < len(text) && covered[i+1] {
			i++
		}
	}
	return b.String()
}
