package answer

import (
	"encoding/json"
	"testing"

	"github.com/ollama/ollama/api"
)

// TestClientConversation: the phases see the texts before the last user message as history, and
// each later assistant turn's calls with the results its tool messages gave them, matched by
// tool_call_id (in any order) or, without ids, in order.
func TestClientConversation(t *testing.T) {
	args := func(s string) api.ToolCallFunctionArguments {
		a := api.NewToolCallFunctionArguments()
		if err := json.Unmarshal([]byte(s), &a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	call := func(id, name, a string) api.ToolCall {
		return api.ToolCall{ID: id, Function: api.ToolCallFunction{Name: name, Arguments: args(a)}}
	}
	msgs := []api.Message{
		{Role: "system", Content: "be brief"},
		{Role: "user", Content: "hello"},
		{Role: "assistant", Content: "hi"},
		{Role: "user", Content: "weather in Paris and Rome?"},
		{Role: "assistant", ToolCalls: []api.ToolCall{call("a", "get_weather", `{"city":"Paris"}`), call("b", "get_weather", `{"city":"Rome"}`)}},
		{Role: "tool", ToolCallID: "b", Content: "rain"},
		{Role: "tool", ToolCallID: "a", Content: "sun"},
		{Role: "assistant", ToolCalls: []api.ToolCall{call("", "get_time", `{"zone":"CET"}`)}},
		{Role: "tool", Content: "noon"},
	}
	history, query, rounds := clientConversation(msgs, 3)
	if len(history) != 2 || history[0].Content != "hello" || history[1].Content != "hi" || query != "weather in Paris and Rome?" {
		t.Fatalf("got history %+v query %q, want hello, hi and the last user message", history, query)
	}
	if len(rounds) != 2 || len(rounds[0]) != 2 || len(rounds[1]) != 1 {
		t.Fatalf("got rounds %+v, want two rounds of 2 and 1 calls", rounds)
	}
	got := []string{rounds[0][0].Result, rounds[0][1].Result, rounds[1][0].Result}
	if got[0] != "sun" || got[1] != "rain" || got[2] != "noon" || rounds[0][1].Arguments["city"] != "Rome" || rounds[1][0].Name != "get_time" {
		t.Fatalf("got results %v and rounds %+v, want sun (a), rain (b), noon", got, rounds)
	}
}

// TestClientToolsChecks: a function's parameters are checked before any model call.
func TestClientToolsChecks(t *testing.T) {
	tool := func(name string) api.Tool {
		return api.Tool{Type: "function", Function: api.ToolFunction{Name: name}}
	}
	tests := []struct {
		name      string
		in        ChatRequest
		wantCode  string
		wantParam string
	}{
		{"parameters of Ollama's type, none given", ChatRequest{Tools: api.Tools{tool("f")}}, "", ""},
		{"raw parameters that do not compile", ChatRequest{Tools: api.Tools{tool("f"), tool("g")},
			Schemas: []json.RawMessage{nil, json.RawMessage(`{"type":"object","properties":{"a":{"type":"strin"}}}`)}}, "bad_tool_schema", "tools[1].function.parameters"},
		{"parameters over the depth bound", ChatRequest{Tools: api.Tools{tool("f")},
			Schemas: []json.RawMessage{json.RawMessage(`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string"}}}}}`)}}, "bad_tool_schema", "tools[0].function.parameters"},
		{"a name twice", ChatRequest{Tools: api.Tools{tool("f"), tool("f")}}, "bad_tools", "tools[1].function.name"},
		{"a function named none", ChatRequest{Tools: api.Tools{tool("f"), tool("none")}}, "bad_tools", "tools[1].function.name"},
		{"an unknown named function", ChatRequest{Tools: api.Tools{tool("f")}, ToolName: "g"}, "unknown_tool_choice", "tool_choice"},
	}
	c := &Chat{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "parameters over the depth bound" {
				c.SchemaBounds.MaxDepth, c.SchemaBounds.MaxBytes = 2, 1<<10
				defer func() { c.SchemaBounds.MaxDepth, c.SchemaBounds.MaxBytes = 0, 0 }()
			}
			tools, err := c.clientTools(tc.in)
			if tc.wantCode == "" {
				if err != nil || len(tools) != len(tc.in.Tools) {
					t.Fatalf("got %v, %v; want the tools", tools, err)
				}
				return
			}
			p, ok := err.(*Problem)
			if !ok || p.Code != tc.wantCode || p.Param != tc.wantParam || p.Status != 400 {
				t.Fatalf("got %v, want 400 %s at %s", err, tc.wantCode, tc.wantParam)
			}
		})
	}
}
