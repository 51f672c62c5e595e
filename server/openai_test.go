package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/ollama/ollama/api"

	"toolrouter/answer"
	"toolrouter/internal/fakeollama"
	"toolrouter/provider"
	"toolrouter/router"
	"toolrouter/server"
)

// fakeCompleter answers every completion with its pieces of thinking then of text (streamed one
// by one) and its reply's tool calls and token counts, or with err, and records what it was asked.
type fakeCompleter struct {
	thinking []string
	pieces   []string
	reply    answer.Completion
	err      error
	// hang, when not nil, makes Complete wait for its context's end after the pieces, then send
	// the context's cause on hang.
	hang chan error
	// missing are the model names Check finds unknown; checkErr, when not nil, is Check's answer
	// for every other name (a provider that cannot say).
	missing  []string
	checkErr error

	mu     sync.Mutex // guards reqs, checks
	reqs   []answer.CompletionRequest
	checks []string
}

func (f *fakeCompleter) Check(_ context.Context, model string) error {
	f.mu.Lock()
	f.checks = append(f.checks, model)
	f.mu.Unlock()
	if slices.Contains(f.missing, model) {
		return fmt.Errorf("model %s: %w", model, answer.ErrUnknownModel)
	}
	return f.checkErr
}

func (f *fakeCompleter) Complete(ctx context.Context, req answer.CompletionRequest, onDelta func(answer.Delta)) (answer.Completion, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	if f.err != nil {
		return answer.Completion{}, f.err
	}
	for _, p := range f.thinking {
		if onDelta != nil {
			onDelta(answer.Delta{Thinking: p})
		}
	}
	for _, p := range f.pieces {
		if err := ctx.Err(); err != nil {
			return answer.Completion{}, err
		}
		if onDelta != nil {
			onDelta(answer.Delta{Text: p})
		}
	}
	if f.hang != nil {
		<-ctx.Done()
		f.hang <- context.Cause(ctx)
		return answer.Completion{}, ctx.Err()
	}
	out := f.reply
	out.Text, out.Thinking = strings.Join(f.pieces, ""), strings.Join(f.thinking, "")
	return out, nil
}

func (f *fakeCompleter) requests() []answer.CompletionRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

type chatEnv struct {
	app     *fiber.App
	model   *fakeollama.Server
	comp    *fakeCompleter
	reports reports
}

// newChatEnv wires the API to a real router (fake routing model, real MCP servers), comp, and
// the council c (nil: none).
func newChatEnv(t *testing.T, model *fakeollama.Server, comp *fakeCompleter, c server.Councillor, o server.Options) *chatEnv {
	t.Helper()
	inv := newInventory(t)
	rt := router.New(model.Client(), inv, inv, router.Settings{Model: "fake", CallTimeout: 10 * time.Second, RepairAttempts: router.DefaultRepairAttempts}, quiet)
	reps := make(reports, 64)
	o.Model, o.Logger = "fake", quiet
	d := server.Deps{Router: rt, Inventory: inv, Model: model.Client(), Council: c, Observer: reps}
	if comp != nil {
		d.Completer = comp
	}
	return &chatEnv{app: server.New(d, o), model: model, comp: comp, reports: reps}
}

// chatBody is the part of a chat completion the tests read.
type chatBody struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
	XToolrouter struct {
		Mode    string          `json:"mode"`
		Routing *router.Outcome `json:"routing"`
		Council json.RawMessage `json:"council"`
		// CompletionUsage is the answering model's call.
		CompletionUsage map[string]float64 `json:"completion_usage"`
	} `json:"x_toolrouter"`
}

// openAIErrorOf checks raw is exactly OpenAI's {"error":{"message","type","param","code"}} and
// returns the code, type and param.
func openAIErrorOf(t *testing.T, raw []byte) (code, typ string, param any) {
	t.Helper()
	var top map[string]map[string]any
	if err := json.Unmarshal(raw, &top); err != nil || len(top) != 1 || top["error"] == nil {
		t.Fatalf("got body %s, want {\"error\":{...}}", raw)
	}
	e := top["error"]
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := e[k]; !ok {
			t.Fatalf("got error %v, want the key %q", e, k)
		}
	}
	if msg, _ := e["message"].(string); msg == "" {
		t.Fatalf("got error %v, want a message", e)
	}
	code, _ = e["code"].(string)
	typ, _ = e["type"].(string)
	return code, typ, e["param"]
}

// weatherTool is a tools field with one client tool.
const weatherTool = `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]`

func TestChatCompletionsRejectsBadRequests(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := []struct {
		name      string
		body      string
		wantCode  string
		wantParam any
	}{
		{"no model", `{"messages":[{"role":"user","content":"hi"}]}`, "missing_model", "model"},
		{"no messages", `{"model":"m"}`, "missing_messages", "messages"},
		{"empty messages", `{"model":"m","messages":[]}`, "missing_messages", "messages"},
		{"n over 1", `{"model":"m","n":2,"messages":[{"role":"user","content":"hi"}]}`, "unsupported_n", "n"},
		{"bad role", `{"model":"m","messages":[{"role":"robot","content":"hi"}]}`, "bad_role", "messages[0].role"},
		{"tool message without tools", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"tool","content":"5","tool_call_id":"a"}]}`, "bad_role", "messages[1].role"},
		{"image part", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"what is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]}`,
			"unsupported_content", "messages[0].content[1]"},
		{"content of the wrong type", `{"model":"m","messages":[{"role":"user","content":42}]}`, "bad_content", "messages[0].content"},
		{"no user message", `{"model":"m","messages":[{"role":"system","content":"be brief"}]}`, "missing_user_message", "messages"},
		{"empty user message", `{"model":"m","messages":[{"role":"user","content":"  "}]}`, "empty_message", "messages"},
		{"last user message too long", `{"model":"m","messages":[{"role":"user","content":"` + long + `"}]}`, "message_too_long", "messages"},
		{"too many messages", `{"model":"m","messages":[` + strings.Repeat(`{"role":"user","content":"a"},{"role":"assistant","content":"b"},`, 2) + `{"role":"user","content":"c"}]}`,
			"too_many_messages", "messages"},
		{"messages too long together", `{"model":"m","messages":[{"role":"system","content":"` + strings.Repeat("s", 1100) + `"},{"role":"user","content":"hi"}]}`,
			"messages_too_long", "messages"},
		{"temperature out of range", `{"model":"m","temperature":3,"messages":[{"role":"user","content":"hi"}]}`, "bad_temperature", "temperature"},
		{"temperature of the wrong type", `{"model":"m","temperature":"hot","messages":[{"role":"user","content":"hi"}]}`, "wrong_type", nil},
		{"max_tokens zero", `{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, "bad_max_tokens", "max_tokens"},
		{"too many stops", `{"model":"m","stop":["a","b","c","d","e"],"messages":[{"role":"user","content":"hi"}]}`, "bad_stop", "stop"},
		{"stream_options without stream", `{"model":"m","stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`, "bad_stream_options", "stream_options"},
		{"tool that is not a function", `{"model":"m","tools":[{"type":"retrieval"}],"messages":[{"role":"user","content":"hi"}]}`, "bad_tools", "tools[0]"},
		{"malformed JSON", `{"model":"m",`, "malformed_json", nil},
		{"unknown reasoning_effort", `{"model":"m","reasoning_effort":"xhigh","messages":[{"role":"user","content":"hi"}]}`, "bad_reasoning_effort", "reasoning_effort"},
		{"reasoning_effort of the wrong type", `{"model":"m","reasoning_effort":true,"messages":[{"role":"user","content":"hi"}]}`, "wrong_type", nil},
		{"unknown response_format", `{"model":"m","response_format":{"type":"xml"},"messages":[{"role":"user","content":"hi"}]}`, "bad_response_format", "response_format"},
		{"response_format not an object", `{"model":"m","response_format":"json","messages":[{"role":"user","content":"hi"}]}`, "bad_response_format", "response_format"},
		{"json_schema without a schema", `{"model":"m","response_format":{"type":"json_schema","json_schema":{"name":"x"}},"messages":[{"role":"user","content":"hi"}]}`, "bad_response_format", "response_format"},
		{"json_schema whose schema is not an object", `{"model":"m","response_format":{"type":"json_schema","json_schema":{"schema":"x"}},"messages":[{"role":"user","content":"hi"}]}`, "bad_response_format", "response_format"},
		{"response_format with the council", `{"model":"council","response_format":{"type":"json_object"},"messages":[{"role":"user","content":"hi"}]}`, "council_with_response_format", "response_format"},
		{"tool_choice required without tools", `{"model":"m","tool_choice":"required","messages":[{"role":"user","content":"hi"}]}`, "tools_missing", "tool_choice"},
		{"tool_choice naming an unknown function", `{"model":"m","tool_choice":{"type":"function","function":{"name":"get_time"}},` + weatherTool + `,"messages":[{"role":"user","content":"hi"}]}`,
			"unknown_tool_choice", "tool_choice"},
		{"parameters that do not compile", `{"model":"m","tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}},` +
			`{"type":"function","function":{"name":"broken","parameters":{"type":"object","properties":{"a":{"type":"strin"}}}}}],"messages":[{"role":"user","content":"hi"}]}`,
			"bad_tool_schema", "tools[1].function.parameters"},
		{"parameters with a remote reference", `{"model":"m","tools":[{"type":"function","function":{"name":"f","parameters":{"$ref":"https://example.com/s.json"}}}],"messages":[{"role":"user","content":"hi"}]}`,
			"bad_tool_schema", "tools[0].function.parameters"},
		{"a function given twice", `{"model":"m","tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"hi"}]}`,
			"bad_tools", "tools[1].function.name"},
		{"unknown tool_choice", `{"model":"m","tool_choice":"sometimes",` + weatherTool + `,"messages":[{"role":"user","content":"hi"}]}`, "bad_tool_choice", "tool_choice"},
		{"legacy functions", `{"model":"m","functions":[{"name":"get_weather","parameters":{"type":"object"}}],"messages":[{"role":"user","content":"hi"}]}`, "unsupported_functions", "functions"},
		{"legacy function_call", `{"model":"m","function_call":"auto",` + weatherTool + `,"messages":[{"role":"user","content":"hi"}]}`, "unsupported_functions", "function_call"},
	}
	comp := &fakeCompleter{pieces: []string{"never"}}
	e := newChatEnv(t, fakeollama.New(t), comp, nil, server.Options{MaxQueryBytes: 256, MaxHistory: 3})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, raw, _ := do(t, e.app, http.MethodPost, "/v1/chat/completions", []byte(tc.body))
			code, typ, param := openAIErrorOf(t, raw)
			if status != http.StatusBadRequest || code != tc.wantCode || typ != "invalid_request_error" || param != tc.wantParam {
				t.Errorf("got %d %s, want 400 code %s type invalid_request_error param %v", status, raw, tc.wantCode, tc.wantParam)
			}
		})
	}
	if n := len(comp.requests()) + len(e.model.Requests()); n != 0 {
		t.Errorf("got %d model calls for refused requests, want none", n)
	}
}

// TestChatCompletionsRouted: the last user message is routed with the earlier turns as history;
// the named model answers with the system messages kept, the tool results as evidence and the
// request's sampling fields; the response is OpenAI's with usage and x_toolrouter; the report
// has the routing and the completion call.
func TestChatCompletionsRouted(t *testing.T) {
	model := fakeollama.New(t, selectAdd(true)...)
	comp := &fakeCompleter{pieces: []string{"2 + 3 ", "is 5."}, reply: answer.Completion{FinishReason: "stop", Stats: provider.Stats{PromptTokens: 40, DecodeTokens: 6,
		Breakdown: provider.Breakdown{LoadMS: 1, PrefillMS: 8, DecodeMS: 30, RestMS: 2, UncachedTokens: 12}}}}
	e := newChatEnv(t, model, comp, nil, server.Options{})
	body := `{"model":"qwen2.5:7b","temperature":0.2,"max_tokens":64,"stop":"END","seed":7,"user":"someone","logit_bias":{},
		"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hello"},{"role":"assistant","content":"hi"},
		{"role":"user","content":[{"type":"text","text":"what is 2+3?"}]}]}`
	status, raw, _ := do(t, e.app, http.MethodPost, "/v1/chat/completions", []byte(body))
	if status != http.StatusOK {
		t.Fatalf("got %d %s", status, raw)
	}
	var out chatBody
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.ID, "chatcmpl-") || out.Object != "chat.completion" || out.Created == 0 || out.Model != "qwen2.5:7b" {
		t.Errorf("got id %q object %q created %d model %q, want chatcmpl-…, chat.completion, a time and qwen2.5:7b", out.ID, out.Object, out.Created, out.Model)
	}
	if len(out.Choices) != 1 || out.Choices[0].Message.Role != "assistant" || out.Choices[0].Message.Content == nil ||
		*out.Choices[0].Message.Content != "2 + 3 is 5." || out.Choices[0].FinishReason != "stop" {
		t.Fatalf("got choices %s, want one assistant message \"2 + 3 is 5.\" finished by stop", raw)
	}
	routing := out.XToolrouter.Routing
	if out.XToolrouter.Mode != "routed" || routing == nil || len(routing.Calls) != 1 || routing.Calls[0].Tool != "add" {
		t.Fatalf("got x_toolrouter %s, want mode routed with the calculator.add call", raw)
	}
	wantPrompt, wantCompletion := 40+routing.Usage.PromptTokens, 6+routing.Usage.CompletionTokens
	if out.Usage.PromptTokens != wantPrompt || out.Usage.CompletionTokens != wantCompletion || out.Usage.TotalTokens != wantPrompt+wantCompletion {
		t.Errorf("got usage %+v, want the routing's and the completion's: %d + %d", out.Usage, wantPrompt, wantCompletion)
	}

	reqs := comp.requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d completions, want 1", len(reqs))
	}
	req := reqs[0]
	var roles []string
	for _, m := range req.Messages {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, ","); got != "system,system,user,assistant,user" || req.Messages[0].Content != "Be brief." {
		t.Fatalf("got roles %s (first %q), want the client's system message, the evidence, then the conversation", got, req.Messages[0].Content)
	}
	if ev := req.Messages[1].Content; !strings.Contains(ev, "calculator.add") || !strings.Contains(ev, ">>>\n5\n<<<end ") {
		t.Errorf("got evidence %q, want the calculator.add call and its result 5", ev)
	}
	if req.Model != "qwen2.5:7b" || req.Tools != nil {
		t.Errorf("got model %q tools %v, want qwen2.5:7b and none", req.Model, req.Tools)
	}
	wantOpts := map[string]any{"temperature": 0.2, "num_predict": 64, "stop": []string{"END"}, "seed": int64(7)}
	if fmt.Sprint(req.Options) != fmt.Sprint(wantOpts) {
		t.Errorf("got options %v, want %v", req.Options, wantOpts)
	}
	// The routing model saw the earlier turns as history.
	if first := model.Requests()[0]; !slices.ContainsFunc(first.Messages, func(m api.Message) bool { return m.Content == "hello" }) {
		t.Errorf("the routing model was not sent the earlier user message: %+v", first.Messages)
	}

	rep := e.reports.next(t)
	if rep.Endpoint != "/v1/chat/completions" || rep.Status != http.StatusOK || rep.Outcome == nil || len(rep.ModelCalls) != 1 {
		t.Fatalf("got report endpoint %q status %d outcome %v model calls %d, want the route, 200, the outcome and one call", rep.Endpoint, rep.Status, rep.Outcome != nil, len(rep.ModelCalls))
	}
	wantBreakdown := provider.Breakdown{LoadMS: 1, PrefillMS: 8, DecodeMS: 30, RestMS: 2, UncachedTokens: 12}
	if c := rep.ModelCalls[0]; c.Phase != "completion" || c.Model != "qwen2.5:7b" || c.PromptTokens != 40 || c.CompletionTokens != 6 || c.Err != "" || c.Duration <= 0 ||
		c.Breakdown != wantBreakdown {
		t.Errorf("got model call %+v, want the completion's", c)
	}
	wantUsage := map[string]float64{"prompt_tokens": 40, "completion_tokens": 6, "total_tokens": 46,
		"load_ms": 1, "prefill_ms": 8, "decode_ms": 30, "rest_ms": 2, "uncached_prompt_tokens": 12}
	if !maps.Equal(out.XToolrouter.CompletionUsage, wantUsage) {
		t.Errorf("got x_toolrouter.completion_usage %v, want %v", out.XToolrouter.CompletionUsage, wantUsage)
	}
}

func TestChatCompletionsCouncil(t *testing.T) {
	model := fakeollama.New(t, selectAdd(false)...)
	fakes := newCouncil(t, 2, false)
	e := newChatEnv(t, model, &fakeCompleter{}, fakes.council, server.Options{})
	status, raw, _ := do(t, e.app, http.MethodPost, "/v1/chat/completions", []byte(`{"model":"council","messages":[{"role":"user","content":"2+3?"}]}`))
	if status != http.StatusOK {
		t.Fatalf("got %d %s", status, raw)
	}
	var out chatBody
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	if c := out.Choices[0].Message.Content; c == nil || *c != "The council's answer: 5." || out.XToolrouter.Mode != "council" || len(out.XToolrouter.Council) == 0 {
		t.Fatalf("got %s, want the chairman's answer with the council's run in x_toolrouter", raw)
	}
	if out.Usage.TotalTokens == 0 || out.Usage.TotalTokens != out.Usage.PromptTokens+out.Usage.CompletionTokens {
		t.Errorf("got usage %+v, want the routing's and the council's tokens", out.Usage)
	}
	if rep := e.reports.next(t); rep.Council == nil || rep.Outcome == nil {
		t.Errorf("got report council %v outcome %v, want both", rep.Council != nil, rep.Outcome != nil)
	}
}

// TestChatCompletionsErrors: every error status comes from the one mapping, rendered in OpenAI's
// shape on these routes.
func TestChatCompletionsErrors(t *testing.T) {
	tests := []struct {
		name       string
		method     string
		path       string
		body       string
		comp       *fakeCompleter
		wantStatus int
		wantCode   string
		wantType   string
	}{
		{"council without one", http.MethodPost, "/v1/chat/completions", `{"model":"council","messages":[{"role":"user","content":"hi"}]}`,
			&fakeCompleter{}, http.StatusServiceUnavailable, "no_council", "server_error"},
		{"unknown model", http.MethodPost, "/v1/chat/completions", `{"model":"nope","tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"hi"}]}`,
			&fakeCompleter{err: fmt.Errorf("model nope: %w", answer.ErrUnknownModel)}, http.StatusNotFound, "model_not_found", "invalid_request_error"},
		{"model down", http.MethodPost, "/v1/chat/completions", `{"model":"m","tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"hi"}]}`,
			&fakeCompleter{err: errors.New("connection refused")}, http.StatusBadGateway, "model_unavailable", "server_error"},
		{"no completer", http.MethodPost, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
			nil, http.StatusServiceUnavailable, "completions_off", "server_error"},
		{"wrong method", http.MethodGet, "/v1/chat/completions", "", &fakeCompleter{}, http.StatusMethodNotAllowed, "method_not_allowed", "invalid_request_error"},
		{"not JSON", http.MethodPost, "/v1/chat/completions", "", &fakeCompleter{}, http.StatusUnsupportedMediaType, "unsupported_media_type", "invalid_request_error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newChatEnv(t, fakeollama.New(t), tc.comp, nil, server.Options{})
			var body []byte
			if tc.body != "" {
				body = []byte(tc.body)
			}
			status, raw, _ := do(t, e.app, tc.method, tc.path, body)
			if code, typ, _ := openAIErrorOf(t, raw); status != tc.wantStatus || code != tc.wantCode || typ != tc.wantType {
				t.Errorf("got %d %s, want %d %s %s", status, raw, tc.wantStatus, tc.wantCode, tc.wantType)
			}
		})
	}
}

// readChunks reads a chat completion stream's data events up to [DONE] (done true) or the end.
func readChunks(t *testing.T, r *bufio.Reader) (chunks []map[string]any, done bool) {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return chunks, false
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "event:"):
			t.Errorf("got a named event %q, want unnamed events only", line)
		case line == "data: [DONE]":
			return chunks, true
		case strings.HasPrefix(line, "data: "):
			var m map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m); err != nil {
				t.Fatalf("chunk %q: %v", line, err)
			}
			chunks = append(chunks, m)
		}
	}
}

func TestChatCompletionsStream(t *testing.T) {
	tests := []struct {
		name         string
		includeUsage bool
		comp         *fakeCompleter
		wantText     string
		wantError    string // the code of the stream's error event
	}{
		{"with usage", true, &fakeCompleter{pieces: []string{"It ", "is ", "5."}, reply: answer.Completion{Stats: provider.Stats{PromptTokens: 30, DecodeTokens: 3}}}, "It is 5.", ""},
		{"without usage", false, &fakeCompleter{pieces: []string{"5"}}, "5", ""},
		{"model fails", false, &fakeCompleter{err: errors.New("connection refused")}, "", "model_unavailable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newChatEnv(t, fakeollama.New(t, selectAdd(true)...), tc.comp, nil, server.Options{})
			base := listen(t, e.app)
			body := fmt.Sprintf(`{"model":"m","stream":true,"stream_options":{"include_usage":%v},"messages":[{"role":"user","content":"2+3?"}]}`, tc.includeUsage)
			resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
				t.Fatalf("got %d %q, want 200 text/event-stream", resp.StatusCode, ct)
			}
			chunks, done := readChunks(t, bufio.NewReader(resp.Body))
			if len(chunks) == 0 {
				t.Fatal("got no chunks")
			}
			last := chunks[len(chunks)-1]
			if tc.wantError != "" {
				got, _ := last["error"].(map[string]any)
				if !done || got == nil || got["code"] != tc.wantError || got["type"] != "server_error" {
					t.Errorf("got last chunk %v (done %v), want an error %s, then [DONE]", last, done, tc.wantError)
				}
				if rep := e.reports.next(t); rep.ErrorCode != tc.wantError || len(rep.ModelCalls) != 1 || rep.ModelCalls[0].Err == "" {
					t.Errorf("got report error %q model calls %+v, want %s and the failed call", rep.ErrorCode, rep.ModelCalls, tc.wantError)
				}
				return
			}
			if !done {
				t.Fatal("the stream did not end with [DONE]")
			}
			var text strings.Builder
			var finish any
			for _, c := range chunks {
				if c["object"] != "chat.completion.chunk" || c["id"] != chunks[0]["id"] {
					t.Errorf("got chunk %v, want a chat.completion.chunk with the stream's id", c)
				}
				choices, _ := c["choices"].([]any)
				for _, ch := range choices {
					ch := ch.(map[string]any)
					if s, ok := ch["delta"].(map[string]any)["content"].(string); ok {
						text.WriteString(s)
					}
					if ch["finish_reason"] != nil {
						finish = ch["finish_reason"]
					}
				}
			}
			if text.String() != tc.wantText || finish != "stop" {
				t.Errorf("got text %q finish %v, want %q and stop", text.String(), finish, tc.wantText)
			}
			usage, _ := last["usage"].(map[string]any)
			if trace, _ := last["x_toolrouter"].(map[string]any); trace == nil || trace["routing"] == nil {
				t.Errorf("got last chunk %v, want x_toolrouter with the routing", last)
			}
			switch {
			case tc.includeUsage && (usage == nil || usage["completion_tokens"].(float64) < 3 || len(last["choices"].([]any)) != 0):
				t.Errorf("got last chunk %v, want the usage with no choices", last)
			case !tc.includeUsage && usage != nil:
				t.Errorf("got usage %v without include_usage", usage)
			}
			rep := e.reports.next(t)
			if rep.Endpoint != "/v1/chat/completions" || len(rep.ModelCalls) != 1 || rep.Outcome == nil {
				t.Errorf("got report %+v, want the route, the completion call and the outcome", rep)
			}
		})
	}
}

// TestModels: GET /v1/models lists council (when configured), the configured models and the
// router provider's pulled models, once each, in OpenAI's list format.
func TestModels(t *testing.T) {
	tests := []struct {
		name    string
		council bool
		down    bool // the router's provider does not answer
		want    string
	}{
		{"council and pulled models", true, false, "council,qwen2.5:7b,remote/gpt-4o-mini,llama3.1:8b"},
		{"no council", false, false, "qwen2.5:7b,remote/gpt-4o-mini,llama3.1:8b"},
		{"provider down", true, true, "council,qwen2.5:7b,remote/gpt-4o-mini"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			model := fakeollama.New(t)
			model.Models = []string{"qwen2.5:7b", "llama3.1:8b"}
			var c server.Councillor
			if tc.council {
				c = newCouncil(t, 2, false).council
			}
			e := newChatEnv(t, model, &fakeCompleter{}, c, server.Options{RouterProvider: "ollama",
				Models: []server.ModelInfo{{ID: "qwen2.5:7b", OwnedBy: "ollama"}, {ID: "remote/gpt-4o-mini", OwnedBy: "remote"}}})
			if tc.down {
				model.Close()
			}
			status, raw, _ := do(t, e.app, http.MethodGet, "/v1/models", nil)
			var out struct {
				Object string `json:"object"`
				Data   []struct {
					ID      string `json:"id"`
					Object  string `json:"object"`
					OwnedBy string `json:"owned_by"`
				} `json:"data"`
			}
			if err := json.Unmarshal(raw, &out); err != nil || status != http.StatusOK || out.Object != "list" {
				t.Fatalf("got %d %s, want 200 and a list", status, raw)
			}
			var ids []string
			for _, m := range out.Data {
				ids = append(ids, m.ID)
				if m.Object != "model" || m.OwnedBy == "" {
					t.Errorf("got model %+v, want object model and an owner", m)
				}
			}
			if got := strings.Join(ids, ","); got != tc.want {
				t.Errorf("got models %s, want %s", got, tc.want)
			}
		})
	}
}

// TestChatCompletionsStreamClientGone: a client that leaves a stream stops the model call, and the
// request is reported once.
func TestChatCompletionsStreamClientGone(t *testing.T) {
	comp := &fakeCompleter{pieces: []string{"thinking…"}, hang: make(chan error, 1)}
	e := newChatEnv(t, fakeollama.New(t, selectAdd(true)...), comp, nil, server.Options{})
	base := listen(t, e.app)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"2+3?"}]}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(resp.Body)
	for { // up to the first piece of text: the model call is under way
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before the text: %v", err)
		}
		if strings.Contains(line, "thinking") {
			break
		}
	}
	cancel()
	resp.Body.Close()
	select {
	case cause := <-comp.hang:
		if cause == nil || !strings.Contains(cause.Error(), "client") {
			t.Errorf("the model call ended with %v, want the client's leaving", cause)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the model call was not stopped within 10s of the client leaving")
	}
	if rep := e.reports.next(t); rep.ErrorCode != "client_closed_request" || len(rep.ModelCalls) != 1 {
		t.Errorf("got report error %q with %d model calls, want client_closed_request and the call", rep.ErrorCode, len(rep.ModelCalls))
	}
	select {
	case rep := <-e.reports:
		t.Errorf("got a second report %+v, want one", rep)
	default:
	}
}

// TestChatCompletionsRefusedBeforeWork: a request that ends in an error known before the work
// starts (an unknown model, the council with the client's tools, no council, a provider that
// cannot say whether it has the model) is answered with its status and OpenAI's error, streamed
// or not, and nothing runs for it: no routing, so no tool call, and no completion.
func TestChatCompletionsRefusedBeforeWork(t *testing.T) {
	const tools = `"tools":[{"type":"function","function":{"name":"get_weather"}}],`
	tests := []struct {
		name       string
		body       string // the fields before messages
		council    bool
		comp       *fakeCompleter
		wantStatus int
		wantCode   string
		wantType   string
		wantParam  any
	}{
		{"unknown model", `"model":"nope",`, false, &fakeCompleter{missing: []string{"nope"}},
			http.StatusNotFound, "model_not_found", "invalid_request_error", "model"},
		{"unknown model with the client's tools", `"model":"nope",` + tools, false, &fakeCompleter{missing: []string{"nope"}},
			http.StatusNotFound, "model_not_found", "invalid_request_error", "model"},
		{"provider cannot say", `"model":"m",`, false, &fakeCompleter{checkErr: errors.New("connection refused")},
			http.StatusBadGateway, "model_unavailable", "server_error", nil},
		{"council with the client's tools", `"model":"council",` + tools, true, &fakeCompleter{},
			http.StatusBadRequest, "council_with_tools", "invalid_request_error", "tools"},
		{"council without one", `"model":"council",`, false, &fakeCompleter{},
			http.StatusServiceUnavailable, "no_council", "server_error", nil},
	}
	for _, tc := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				var c server.Councillor
				if tc.council {
					c = newCouncil(t, 2, false).council
				}
				comp := &fakeCompleter{missing: tc.comp.missing, checkErr: tc.comp.checkErr}
				e := newChatEnv(t, fakeollama.New(t, selectAdd(true)...), comp, c, server.Options{})
				body := fmt.Sprintf(`{%s"stream":%v,"messages":[{"role":"user","content":"2+3?"}]}`, tc.body, stream)
				// do checks the answer is JSON: an error known before the first byte is no stream.
				status, raw, _ := do(t, e.app, http.MethodPost, "/v1/chat/completions", []byte(body))
				code, typ, param := openAIErrorOf(t, raw)
				if status != tc.wantStatus || code != tc.wantCode || typ != tc.wantType || param != tc.wantParam {
					t.Errorf("got %d %s, want %d code %s type %s param %v", status, raw, tc.wantStatus, tc.wantCode, tc.wantType, tc.wantParam)
				}
				if n := len(e.model.Requests()); n != 0 {
					t.Errorf("got %d routing model calls, want none: nothing may run for a refused request", n)
				}
				if n := len(comp.requests()); n != 0 {
					t.Errorf("got %d completions, want none", n)
				}
				if rep := e.reports.next(t); rep.Status != tc.wantStatus || rep.Outcome != nil || len(rep.ModelCalls) != 0 {
					t.Errorf("got report status %d outcome %v model calls %d, want %d, no outcome and no calls", rep.Status, rep.Outcome != nil, len(rep.ModelCalls), tc.wantStatus)
				}
			})
		}
	}
}
