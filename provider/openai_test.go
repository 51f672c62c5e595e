package provider_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/internal/fakeollama"
	"toolrouter/internal/fakeopenai"
	"toolrouter/provider"
)

// TestOpenAITranslation checks the chat-completions body built from an Ollama request.
func TestOpenAITranslation(t *testing.T) {
	schema := `{"type":"object","properties":{"use_tool":{"type":"boolean"}},"required":["use_tool"]}`
	f := false
	tests := []struct {
		name string
		req  api.ChatRequest
		want map[string]any // top-level keys of the body and their JSON values
		gone []string       // keys that must not be sent
	}{
		{
			name: "json schema format and options",
			req: api.ChatRequest{Model: "gpt-4o-mini", Stream: &f, Format: json.RawMessage(schema),
				Options: map[string]any{"temperature": 0, "top_p": 0.9, "seed": 42, "num_predict": 256, "stop": "END", "num_ctx": 8192, "top_k": 20}},
			want: map[string]any{
				"model": "gpt-4o-mini", "stream": false, "temperature": 0.0, "top_p": 0.9, "seed": 42.0, "max_tokens": 256.0,
				"stop":            []any{"END"},
				"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "output", "schema": decode(t, schema)}},
			},
			gone: []string{"num_ctx", "top_k", "options", "format", "stream_options", "keep_alive"},
		},
		{
			name: "json format, streaming, stop list, unlimited num_predict",
			req:  api.ChatRequest{Model: "m", Format: json.RawMessage(`"json"`), Options: map[string]any{"stop": []any{"a", "b"}, "num_predict": -1}},
			want: map[string]any{
				"stream": true, "stream_options": map[string]any{"include_usage": true},
				"response_format": map[string]any{"type": "json_object"}, "stop": []any{"a", "b"},
			},
			gone: []string{"max_tokens", "temperature"},
		},
		{
			name: "no format, no options",
			req:  api.ChatRequest{Model: "m", Stream: &f},
			want: map[string]any{"stream": false},
			gone: []string{"response_format", "stop", "seed", "tools", "reasoning_effort"},
		},
		{
			name: "think level becomes reasoning_effort",
			req:  api.ChatRequest{Model: "m", Stream: &f, Think: &api.ThinkValue{Value: "high"}},
			want: map[string]any{"reasoning_effort": "high"},
		},
		{
			name: "think off becomes reasoning_effort none",
			req:  api.ChatRequest{Model: "m", Stream: &f, Think: &api.ThinkValue{Value: false}},
			want: map[string]any{"reasoning_effort": "none"},
		},
		{
			name: "think on is the server's default",
			req:  api.ChatRequest{Model: "m", Stream: &f, Think: &api.ThinkValue{Value: true}},
			gone: []string{"reasoning_effort"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := fakeopenai.New(t, fakeopenai.Reply{Content: "{}"})
			tc.req.Messages = []api.Message{{Role: "system", Content: "sys"}, {Role: "user", Content: "hi"}}
			if err := provider.NewOpenAI(fake.BaseURL(), "k", nil).Chat(context.Background(), &tc.req, func(api.ChatResponse) error { return nil }); err != nil {
				t.Fatal(err)
			}
			body := map[string]any{}
			if err := json.Unmarshal(fake.Requests()[0].Raw, &body); err != nil {
				t.Fatal(err)
			}
			for k, want := range tc.want {
				if got := body[k]; !reflect.DeepEqual(got, want) {
					t.Errorf("%s: got %#v, want %#v", k, got, want)
				}
			}
			for _, k := range tc.gone {
				if v, ok := body[k]; ok {
					t.Errorf("%s: got %#v, want it absent", k, v)
				}
			}
			wantMsgs := []any{map[string]any{"role": "system", "content": "sys"}, map[string]any{"role": "user", "content": "hi"}}
			if !reflect.DeepEqual(body["messages"], wantMsgs) {
				t.Errorf("messages: got %#v, want %#v", body["messages"], wantMsgs)
			}
		})
	}
}

func TestOpenAIRejectsUntranslatable(t *testing.T) {
	tests := []struct {
		name string
		req  api.ChatRequest
		want string
	}{
		{"bad temperature", api.ChatRequest{Options: map[string]any{"temperature": "hot"}}, "option temperature: want a number, got string"},
		{"fractional seed", api.ChatRequest{Options: map[string]any{"seed": 1.5}}, "option seed: want a whole number"},
		{"bad stop", api.ChatRequest{Options: map[string]any{"stop": 3}}, "option stop"},
		{"two bad options, one line", api.ChatRequest{Options: map[string]any{"top_p": "x", "stop": 3}},
			"option top_p: want a number, got string; option stop: want a string or a list of strings, got int"},
		{"unknown format", api.ChatRequest{Format: json.RawMessage(`"yaml"`)}, `format "yaml"`},
		{"images", api.ChatRequest{Messages: []api.Message{{Role: "user", Images: []api.ImageData{[]byte("x")}}}}, "images are not supported"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := fakeopenai.New(t)
			err := provider.NewOpenAI(fake.BaseURL(), "", nil).Chat(context.Background(), &tc.req, func(api.ChatResponse) error { return nil })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
			if n := len(fake.Requests()); n != 0 {
				t.Errorf("got %d requests sent, want none", n)
			}
		})
	}
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestOpenAIChatBehavesLikeOllama sends the same scripted answers through provider.Ollama (fake
// Ollama, NDJSON) and provider.OpenAI (fake OpenAI-compatible, SSE) and requires the callbacks the
// router relies on to be the same: the text, Done on the last callback only, the token counts.
func TestOpenAIChatBehavesLikeOllama(t *testing.T) {
	tests := []struct {
		name           string
		content        string
		prompt, answer int
		stream         bool
	}{
		{"non-streaming", `{"reasoning":"r","use_tool":true}`, 120, 14, false},
		{"streaming", "the council answers: 407, because 17*23 = 391 and 4^2 = 16", 33, 21, true},
		{"streaming empty answer", "", 5, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ol := fakeollama.New(t, fakeollama.Reply{Content: tc.content, PromptTokens: tc.prompt, CompletionTokens: tc.answer})
			oa := fakeopenai.New(t, fakeopenai.Reply{Content: tc.content, PromptTokens: tc.prompt, CompletionTokens: tc.answer})
			u, _ := url.Parse(ol.URL)
			for _, c := range []struct {
				name string
				c    chatter
			}{{"ollama", provider.NewOllama(u, nil)}, {"openai", provider.NewOpenAI(oa.BaseURL(), "k", nil)}} {
				var (
					text                strings.Builder
					calls, doneAt       int
					prompt, eval, dones int
				)
				req := &api.ChatRequest{Model: "m", Stream: &tc.stream, Messages: []api.Message{{Role: "user", Content: "q"}}}
				err := c.c.Chat(context.Background(), req, func(r api.ChatResponse) error {
					calls++
					text.WriteString(r.Message.Content)
					if r.Done {
						dones++
						doneAt, prompt, eval = calls, r.PromptEvalCount, r.EvalCount
					} else if r.PromptEvalCount != 0 || r.EvalCount != 0 {
						t.Errorf("%s: token counts on a callback before Done", c.name)
					}
					return nil
				})
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				if text.String() != tc.content {
					t.Errorf("%s: got text %q, want %q", c.name, text.String(), tc.content)
				}
				if dones != 1 || doneAt != calls {
					t.Errorf("%s: got Done %d times, at callback %d of %d; want once, on the last", c.name, dones, doneAt, calls)
				}
				if prompt != tc.prompt || eval != tc.answer {
					t.Errorf("%s: got tokens %d/%d, want %d/%d", c.name, prompt, eval, tc.prompt, tc.answer)
				}
				if !tc.stream && calls != 1 {
					t.Errorf("%s: got %d callbacks without streaming, want 1", c.name, calls)
				}
			}
		})
	}
}

func TestOpenAIErrors(t *testing.T) {
	tests := []struct {
		name   string
		reply  fakeopenai.Reply
		stream bool
		want   *provider.APIError // nil: a plain error containing text
		text   string
	}{
		{"401 error object", fakeopenai.Reply{Status: 401, Error: "Incorrect API key provided", ErrorType: "invalid_request_error", ErrorCode: "invalid_api_key"}, false,
			&provider.APIError{StatusCode: 401, Status: "401 Unauthorized", Message: "Incorrect API key provided", Type: "invalid_request_error", Code: "invalid_api_key"},
			"401 Unauthorized: Incorrect API key provided (invalid_request_error, invalid_api_key)"},
		{"429 while streaming", fakeopenai.Reply{Status: 429, Error: "Rate limit reached", ErrorType: "requests"}, true,
			&provider.APIError{StatusCode: 429, Status: "429 Too Many Requests", Message: "Rate limit reached", Type: "requests"}, ""},
		{"numeric code", fakeopenai.Reply{Status: 400, Raw: `{"error":{"message":"bad","code":400}}`}, false,
			&provider.APIError{StatusCode: 400, Status: "400 Bad Request", Message: "bad", Code: "400"}, ""},
		{"gemini array", fakeopenai.Reply{Status: 404, Raw: `[{"error":{"code":404,"message":"models/x is not found","status":"NOT_FOUND"}}]`}, false,
			&provider.APIError{StatusCode: 404, Status: "404 Not Found", Message: "models/x is not found", Code: "404"}, ""},
		{"plain text body", fakeopenai.Reply{Status: 502, Raw: "<html>bad gateway</html>"}, false,
			&provider.APIError{StatusCode: 502, Status: "502 Bad Gateway", Message: "<html>bad gateway</html>"}, ""},
		{"string error", fakeopenai.Reply{Status: 500, Raw: `{"error":"model crashed"}`}, false,
			&provider.APIError{StatusCode: 500, Status: "500 Internal Server Error", Message: "model crashed"}, ""},
		{"error mid-stream", fakeopenai.Reply{Content: "partial", StreamError: "upstream overloaded"}, true,
			&provider.APIError{StatusCode: 200, Status: "200 OK", Message: "upstream overloaded", Type: "server_error"}, ""},
		{"garbage", fakeopenai.Reply{Raw: "not json"}, false, nil, "decoding chat response"},
		{"no choices", fakeopenai.Reply{Raw: `{"id":"x","choices":[]}`}, false, nil, "no choices"},
		{"bad tool arguments", fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{ID: "c", Name: "f", Arguments: "{nope"}}}, true, nil, "tool call f: arguments are not a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := fakeopenai.New(t, tc.reply)
			req := &api.ChatRequest{Model: "m", Stream: &tc.stream}
			err := provider.NewOpenAI(fake.BaseURL(), "", nil).Chat(context.Background(), req, func(api.ChatResponse) error { return nil })
			if err == nil {
				t.Fatal("got no error")
			}
			if tc.want != nil {
				var got *provider.APIError
				if !errors.As(err, &got) || !reflect.DeepEqual(got, tc.want) {
					t.Errorf("got %#v, want %#v", err, tc.want)
				}
			}
			if tc.text != "" && !strings.Contains(err.Error(), tc.text) {
				t.Errorf("got %q, want it to contain %q", err, tc.text)
			}
		})
	}
}

// TestOpenAIStreamEnds: a stream cut before its end gives no Done (the caller decides), one with a
// finish_reason but no [DONE] is complete.
func TestOpenAIStreamEnds(t *testing.T) {
	stream := true
	fake := fakeopenai.New(t,
		fakeopenai.Reply{Content: "cut short", NoDone: true},
		fakeopenai.Reply{Raw: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"length\"}]}\n\n"},
		fakeopenai.Reply{Content: "cut short again", NoDone: true},
	)
	t.Run("events without blank lines", func(t *testing.T) {
		fake := fakeopenai.New(t, fakeopenai.Reply{Raw: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n" +
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,\"prompt_tokens_details\":{\"cached_tokens\":1}}}\n" +
			"data: [DONE]\n"})
		got, err := provider.ChatModel{Client: provider.NewOpenAI(fake.BaseURL(), "", nil), Model: "m", Stream: true}.Complete(context.Background(), nil)
		if err != nil || got.Text != "ab" || got.Stats.PromptTokens != 3 || got.Stats.DecodeTokens != 2 || got.Stats.UncachedTokens != 2 {
			t.Errorf("got %+v, %v; want ab with 3/2 tokens, 1 prompt token cached", got, err)
		}
	})
	c := provider.NewOpenAI(fake.BaseURL(), "", nil)
	var done []bool
	for range 2 {
		var d bool
		err := c.Chat(context.Background(), &api.ChatRequest{Stream: &stream}, func(r api.ChatResponse) error {
			if r.Done {
				d = r.DoneReason != ""
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		done = append(done, d)
	}
	if !reflect.DeepEqual(done, []bool{false, true}) {
		t.Errorf("got done %v, want [false true]", done)
	}
	_, err := provider.ChatModel{Client: c, Model: "m", Stream: true}.Complete(context.Background(), nil)
	if !errors.Is(err, provider.ErrNoDone) {
		t.Errorf("Complete after a cut stream: got %v, want ErrNoDone", err)
	}
}

// TestOpenAIToolCalls covers native tool calling: tools and earlier calls going out, calls coming
// back streamed and not.
func TestOpenAIToolCalls(t *testing.T) {
	var tools api.Tools
	if err := json.Unmarshal([]byte(`[{"type":"function","function":{"name":"calculator.add","description":"Add.","parameters":{"type":"object","required":["a","b"],"properties":{"a":{"type":"number"},"b":{"type":"number"}}}}}]`), &tools); err != nil {
		t.Fatal(err)
	}
	args := api.NewToolCallFunctionArguments()
	args.Set("a", 2)
	args.Set("b", 3)
	history := []api.Message{
		{Role: "user", Content: "2+3 and 4+5?"},
		{Role: "assistant", ToolCalls: []api.ToolCall{{ID: "call_a", Function: api.ToolCallFunction{Name: "calculator.add", Arguments: args}}, {Function: api.ToolCallFunction{Name: "calculator.add", Arguments: args}}}},
		{Role: "tool", Content: "5", ToolCallID: "call_a"},
		{Role: "tool", Content: "9", ToolName: "calculator.add"},
	}
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			fake := fakeopenai.New(t, fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{ID: "call_9", Name: "calculator.multiply", Arguments: `{"a":6,"b":7}`}}, PromptTokens: 50, CompletionTokens: 9})
			var final api.ChatResponse
			err := provider.NewOpenAI(fake.BaseURL(), "", nil).Chat(context.Background(),
				&api.ChatRequest{Model: "m", Stream: &stream, Tools: tools, Messages: history},
				func(r api.ChatResponse) error {
					if r.Done {
						final = r
					}
					return nil
				})
			if err != nil {
				t.Fatal(err)
			}
			calls := final.Message.ToolCalls
			if len(calls) != 1 || calls[0].ID != "call_9" || calls[0].Function.Name != "calculator.multiply" || calls[0].Function.Arguments.String() != `{"a":6,"b":7}` {
				t.Errorf("got tool calls %+v, want calculator.multiply {a:6,b:7} with id call_9", calls)
			}
			if final.DoneReason != "tool_calls" || final.EvalCount != 9 {
				t.Errorf("got done reason %q and %d tokens, want tool_calls and 9", final.DoneReason, final.EvalCount)
			}
			body := fake.Requests()[0].Body
			var sentTools []map[string]any
			_ = json.Unmarshal(body.Tools, &sentTools)
			if len(sentTools) != 1 || sentTools[0]["type"] != "function" || sentTools[0]["function"].(map[string]any)["name"] != "calculator.add" {
				t.Errorf("got tools %s, want the calculator.add function", body.Tools)
			}
			asst := body.Messages[1]
			if len(asst.ToolCalls) != 2 || asst.ToolCalls[0].ID != "call_a" || asst.ToolCalls[1].ID == "" ||
				asst.ToolCalls[0].Function.Arguments != `{"a":2,"b":3}` || asst.ToolCalls[0].Type != "function" {
				t.Errorf("got assistant tool calls %+v, want both calls with ids and JSON-string arguments", asst.ToolCalls)
			}
			if got := []string{body.Messages[2].ToolCallID, body.Messages[3].ToolCallID}; got[0] != "call_a" || got[1] != asst.ToolCalls[1].ID {
				t.Errorf("got tool_call_ids %v, want [call_a %s]", got, asst.ToolCalls[1].ID)
			}
		})
	}
}

// TestOpenAIKeyNeverLeaks: the key goes in the Authorization header and nowhere else — not in
// errors (even when the server echoes it, whole or masked), not in the client's printed or logged
// form.
func TestOpenAIKeyNeverLeaks(t *testing.T) {
	const key = "sk-proj-7hR2xQ9mZ4vL1nB8cK3wT6yP0aS5dF"
	fake := fakeopenai.New(t,
		fakeopenai.Reply{Status: 401, Error: "Incorrect API key provided: " + key + ". You can find your API key at https://platform.openai.com.", ErrorCode: "invalid_api_key"},
		fakeopenai.Reply{Status: 401, Error: "Incorrect API key provided: sk-proj-7hR2****************************5dF", ErrorCode: "invalid_api_key"},
		fakeopenai.Reply{Status: 400, Raw: "bad header Authorization: Bearer " + key},
		fakeopenai.Reply{Content: "mid", StreamError: "denied for " + key},
	)
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	c := provider.NewOpenAI(fake.BaseURL(), key, nil)
	var errs []string
	for i := range 4 {
		stream := i == 3
		err := c.Chat(context.Background(), &api.ChatRequest{Model: "m", Stream: &stream}, func(api.ChatResponse) error { return nil })
		if err == nil {
			t.Fatalf("request %d: got no error", i)
		}
		errs = append(errs, err.Error(), fmt.Sprintf("%v %+v %#v", err, err, err))
		logger.Error("model failed", "err", err, "client", c)
	}
	fake.Close()
	_, err := provider.ChatModel{Client: c, Model: "m"}.Complete(context.Background(), []provider.Message{{Role: "user", Content: "q"}})
	errs = append(errs, err.Error(), fmt.Sprintf("%v|%+v|%#v|%s", c, c, c, c))
	logger.Info("client", "client", c, "any", any(c))
	out := strings.Join(errs, "\n") + logs.String()
	for i := 0; i+8 <= len(key); i++ {
		if piece := key[i : i+8]; strings.Contains(out, piece) {
			t.Fatalf("output contains %q, a piece of the key:\n%s", piece, out)
		}
	}
	if !strings.Contains(out, "Incorrect API key provided") {
		t.Errorf("the server's message was lost: %s", out)
	}
	for i, r := range fake.Requests() {
		if r.Authorization != "Bearer "+key {
			t.Errorf("request %d: got Authorization %q, want the bearer key", i, r.Authorization)
		}
		if bytes.Contains(r.Raw, []byte(key)) {
			t.Errorf("request %d: the key is in the body", i)
		}
	}
}

func TestOpenAINoKeyNoHeader(t *testing.T) {
	fake := fakeopenai.New(t, fakeopenai.Reply{Content: "x"})
	f := false
	if err := provider.NewOpenAI(fake.BaseURL()+"/", "", nil).Chat(context.Background(), &api.ChatRequest{Stream: &f}, func(api.ChatResponse) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got := fake.Requests()[0].Authorization; got != "" {
		t.Errorf("got Authorization %q, want none without a key", got)
	}
}

// TestChatModelComplete runs the council's view of a model over both providers.
func TestChatModelComplete(t *testing.T) {
	ol := fakeollama.NewFunc(t, func(api.ChatRequest) fakeollama.Reply {
		return fakeollama.Reply{Content: "forty-two", PromptTokens: 11, CompletionTokens: 3}
	})
	oa := fakeopenai.NewFunc(t, func(fakeopenai.Request) fakeopenai.Reply {
		return fakeopenai.Reply{Content: "forty-two", PromptTokens: 11, CompletionTokens: 3}
	})
	u, _ := url.Parse(ol.URL)
	msgs := []provider.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "answer?"}}
	for _, stream := range []bool{false, true} {
		for _, m := range []provider.ChatModel{
			{Client: provider.NewOllama(u, nil), Model: "qwen2.5:7b", Options: map[string]any{"temperature": 0.2}, KeepAlive: time.Minute, Stream: stream},
			{Client: provider.NewOpenAI(oa.BaseURL(), "k", nil), Model: "gpt-4o-mini", Options: map[string]any{"temperature": 0.2}, Stream: stream},
		} {
			got, err := m.Complete(context.Background(), msgs)
			if err != nil {
				t.Fatalf("%s stream=%v: %v", m, stream, err)
			}
			if got.Text != "forty-two" || got.Stats.PromptTokens != 11 || got.Stats.DecodeTokens != 3 || got.Model != m.Model || got.Wall <= 0 {
				t.Errorf("%s stream=%v: got %+v, want the text, 11/3 tokens, the model and a duration", m, stream, got)
			}
		}
	}
	if r := ol.Requests()[0]; r.KeepAlive == nil || r.KeepAlive.Duration != time.Minute || r.Options["temperature"] != 0.2 || r.Messages[0].Role != "system" {
		t.Errorf("ollama request: got %+v, want keep_alive 1m, the options and the messages", r)
	}
	if r := oa.Requests()[0].Body; *r.Temperature != 0.2 || len(r.Messages) != 2 {
		t.Errorf("openai request: got %+v, want temperature 0.2 and two messages", r)
	}
}

func TestChatModelTimeout(t *testing.T) {
	oa := fakeopenai.New(t, fakeopenai.Reply{Hang: true})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := provider.ChatModel{Client: provider.NewOpenAI(oa.BaseURL(), "", nil), Model: "m"}.Complete(ctx, nil)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "model m: ") {
		t.Errorf("got %v, want model m: context deadline exceeded", err)
	}
}
