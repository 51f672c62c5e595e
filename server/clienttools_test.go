package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"toolrouter/answer"
	"toolrouter/internal/fakeollama"
	"toolrouter/provider"
	"toolrouter/server"
)

// clientToolsModel is the routing model of the client-tools tests: phase 1 chooses get_weather
// twice unless the conversation already holds a tool's result ("sunny"), phase 2 writes a city
// (invalid first when the query asks for a repair).
func clientToolsModel(t *testing.T) *fakeollama.Server {
	return fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply {
		var all strings.Builder
		for _, m := range req.Messages {
			all.WriteString(m.Content)
		}
		switch {
		case strings.Contains(string(req.Format), `"use_tool"`) && strings.Contains(all.String(), "sunny"):
			return fakeollama.Reply{Content: `{"use_tool":false,"calls":[],"needs_more":false,"direct":false}`, PromptTokens: 10, CompletionTokens: 5}
		case strings.Contains(string(req.Format), `"use_tool"`):
			return fakeollama.Reply{Content: `{"use_tool":true,"calls":["get_weather","get_weather"],"needs_more":false,"direct":false}`, PromptTokens: 10, CompletionTokens: 5}
		case strings.Contains(all.String(), "repair") && !strings.Contains(all.String(), "length must be"):
			return fakeollama.Reply{Content: `{"city":"P"}`, PromptTokens: 7, CompletionTokens: 3}
		}
		return fakeollama.Reply{Content: `{"city":"Paris"}`, PromptTokens: 7, CompletionTokens: 3}
	})
}

const clientTools = `"tools":[{"type":"function","function":{"name":"get_weather","description":"weather of a city",
	"parameters":{"type":"object","properties":{"city":{"type":"string","minLength":2}},"required":["city"],"additionalProperties":false}}},
	{"type":"function","function":{"name":"get_time","description":"time in a zone","parameters":{"type":"object","properties":{"zone":{"type":"string"}}}}}]`

// TestChatCompletionsClientTools: a request with its own tools is answered with calls chosen and
// written by the two phases (on the fake routing model), under each tool_choice, streamed or not;
// tool_choice "none" and a conversation ending with the tools' results get the model's text.
func TestChatCompletionsClientTools(t *testing.T) {
	tests := []struct {
		name  string
		extra string // fields added to the request
		msgs  string
		// wantCalls are the calls' names (none: a text answer).
		wantCalls   []string
		wantArgs    string
		wantRouting bool
		wantText    bool
		// wantPhase1 says phase 1 ran; wantRequired that it could not answer "no tool".
		wantPhase1, wantRequired bool
	}{
		{name: "auto, parallel calls", msgs: `[{"role":"user","content":"weather in Paris?"}]`,
			wantCalls: []string{"get_weather", "get_weather"}, wantArgs: `{"city":"Paris"}`, wantRouting: true, wantPhase1: true},
		{name: "parallel calls off", extra: `"parallel_tool_calls":false,`, msgs: `[{"role":"user","content":"weather in Paris?"}]`,
			wantCalls: []string{"get_weather"}, wantArgs: `{"city":"Paris"}`, wantRouting: true, wantPhase1: true},
		{name: "required", extra: `"tool_choice":"required",`, msgs: `[{"role":"user","content":"weather in Paris?"}]`,
			wantCalls: []string{"get_weather", "get_weather"}, wantArgs: `{"city":"Paris"}`, wantRouting: true, wantPhase1: true, wantRequired: true},
		{name: "named", extra: `"tool_choice":{"type":"function","function":{"name":"get_weather"}},`, msgs: `[{"role":"user","content":"weather in Paris?"}]`,
			wantCalls: []string{"get_weather"}, wantArgs: `{"city":"Paris"}`, wantRouting: true},
		{name: "arguments repaired", extra: `"tool_choice":{"type":"function","function":{"name":"get_weather"}},`, msgs: `[{"role":"user","content":"weather in Paris? repair"}]`,
			wantCalls: []string{"get_weather"}, wantArgs: `{"city":"Paris"}`, wantRouting: true},
		{name: "none", extra: `"tool_choice":"none",`, msgs: `[{"role":"user","content":"weather in Paris?"}]`, wantText: true},
		{name: "tool results answered in text", msgs: `[{"role":"user","content":"weather in Paris?"},
			{"role":"assistant","content":null,"tool_calls":[{"id":"call_0","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
			{"role":"tool","tool_call_id":"call_0","content":"sunny"}]`, wantText: true, wantRouting: true, wantPhase1: true},
	}
	for _, tc := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "", true: "/stream"}[stream], func(t *testing.T) {
				model := clientToolsModel(t)
				comp := &fakeCompleter{pieces: []string{"It is ", "sunny."}, reply: answer.Completion{FinishReason: "stop", Stats: provider.Stats{PromptTokens: 30, DecodeTokens: 4}}}
				e := newChatEnv(t, model, comp, nil, server.Options{})
				body := `{"model":"qwen3:4b",` + tc.extra + clientTools + `,"stream":` + map[bool]string{false: "false", true: "true"}[stream] + `,"messages":` + tc.msgs + `}`
				calls, text, finish, mode, routed := clientToolsAnswer(t, e, body, stream)
				var names []string
				for _, c := range calls {
					names = append(names, c.Function.Name)
					if !strings.HasPrefix(c.ID, "call_") || c.Type != "function" || c.Function.Arguments != tc.wantArgs {
						t.Errorf("got call %+v, want id call_…, type function, arguments %s", c, tc.wantArgs)
					}
				}
				if strings.Join(names, ",") != strings.Join(tc.wantCalls, ",") {
					t.Fatalf("got calls %v, want %v", names, tc.wantCalls)
				}
				if len(calls) == 2 && calls[0].ID == calls[1].ID {
					t.Errorf("two calls share the id %s", calls[0].ID)
				}
				wantFinish := "tool_calls"
				if tc.wantText {
					wantFinish = "stop"
					if text != "It is sunny." {
						t.Errorf("got text %q, want the model's", text)
					}
				} else if len(comp.requests()) != 0 {
					t.Errorf("the answering model was asked %d times for a tool call answer, want none", len(comp.requests()))
				}
				if finish != wantFinish || mode != "client_tools" || routed != tc.wantRouting {
					t.Errorf("got finish %q mode %q routing %v, want %q client_tools %v", finish, mode, routed, wantFinish, tc.wantRouting)
				}
				reqs := model.Requests()
				phase1 := len(reqs) > 0 && strings.Contains(string(reqs[0].Format), `"use_tool"`)
				if phase1 != tc.wantPhase1 {
					t.Fatalf("phase 1 ran: got %v, want %v", phase1, tc.wantPhase1)
				}
				if phase1 {
					f := string(reqs[0].Format)
					if required := !strings.Contains(f, `"none"`) && strings.Contains(f, `"minItems":1`); required != tc.wantRequired {
						t.Errorf("phase 1 required a call: got %v, want %v (%s)", required, tc.wantRequired, f)
					}
				}
				if tc.wantText && len(comp.requests()) == 1 && comp.requests()[0].Tools != nil {
					t.Errorf("the text answer was offered tools %v, want none", comp.requests()[0].Tools)
				}
			})
		}
	}
}

// TestChatCompletionsRequiredCallInvalid: a required call whose arguments stay invalid after the
// repairs is a 502 naming why, never a call with arguments that do not validate.
func TestChatCompletionsRequiredCallInvalid(t *testing.T) {
	model := fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply { return fakeollama.Reply{Content: `{"city":5}`} })
	e := newChatEnv(t, model, &fakeCompleter{}, nil, server.Options{})
	body := `{"model":"m","tool_choice":{"type":"function","function":{"name":"get_weather"}},` + clientTools + `,"messages":[{"role":"user","content":"weather?"}]}`
	status, raw, _ := do(t, e.app, http.MethodPost, "/v1/chat/completions", []byte(body))
	code, _, _ := openAIErrorOf(t, raw)
	if status != http.StatusBadGateway || code != "no_valid_tool_call" || !strings.Contains(string(raw), "get_weather") {
		t.Fatalf("got %d %s, want 502 no_valid_tool_call naming get_weather", status, raw)
	}
}

type toolCallOut struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// clientToolsAnswer sends body and reads the answer, streamed (tool calls put together from their
// deltas) or not.
func clientToolsAnswer(t *testing.T, e *chatEnv, body string, stream bool) (calls []toolCallOut, text, finish, mode string, routed bool) {
	t.Helper()
	if !stream {
		status, raw, _ := do(t, e.app, http.MethodPost, "/v1/chat/completions", []byte(body))
		if status != http.StatusOK {
			t.Fatalf("got %d %s", status, raw)
		}
		var out struct {
			Choices []struct {
				Message struct {
					Content   *string       `json:"content"`
					ToolCalls []toolCallOut `json:"tool_calls"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			XToolrouter struct {
				Mode    string          `json:"mode"`
				Routing json.RawMessage `json:"routing"`
			} `json:"x_toolrouter"`
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		m := out.Choices[0].Message
		if len(m.ToolCalls) > 0 && m.Content != nil {
			t.Errorf("got content %q beside tool calls, want null", *m.Content)
		}
		if m.Content != nil {
			text = *m.Content
		}
		return m.ToolCalls, text, out.Choices[0].FinishReason, out.XToolrouter.Mode, len(out.XToolrouter.Routing) > 0
	}
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	chunks, done := readChunks(t, bufio.NewReader(resp.Body))
	if !done {
		t.Fatal("the stream did not end with [DONE]")
	}
	for _, c := range chunks {
		if x, ok := c["x_toolrouter"].(map[string]any); ok {
			mode, _ = x["mode"].(string)
			routed = x["routing"] != nil
		}
		choices, _ := c["choices"].([]any)
		if len(choices) == 0 {
			continue
		}
		ch := choices[0].(map[string]any)
		if f, ok := ch["finish_reason"].(string); ok {
			finish = f
		}
		d := ch["delta"].(map[string]any)
		if s, ok := d["content"].(string); ok {
			text += s
		}
		tcs, _ := d["tool_calls"].([]any)
		for _, x := range tcs {
			tcm := x.(map[string]any)
			i := int(tcm["index"].(float64))
			fn := tcm["function"].(map[string]any)
			if i == len(calls) {
				if tcm["id"] == nil || fn["name"] == nil {
					t.Fatalf("a call's first delta %v has no id or name", tcm)
				}
				calls = append(calls, toolCallOut{ID: tcm["id"].(string), Type: tcm["type"].(string)})
				calls[i].Function.Name = fn["name"].(string)
			}
			if i >= len(calls) {
				t.Fatalf("delta of call %d before call %d", i, len(calls))
			}
			a, _ := fn["arguments"].(string)
			calls[i].Function.Arguments += a
		}
	}
	return calls, text, finish, mode, routed
}
