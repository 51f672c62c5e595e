package fakemodel

import (
	"encoding/json"
	"testing"

	"github.com/ollama/ollama/api"
)

func TestReplySelection(t *testing.T) {
	format := json.RawMessage(`{"type":"object","properties":{"reasoning":{"type":"string"},"use_tool":{"type":"boolean"},
		"calls":{"type":"array","maxItems":4,"items":{"type":"object","properties":{"tool":{"type":"string","enum":["none","calc.add","calc.sub"]},"task":{"type":"string"}},"required":["tool","task"]}},
		"needs_more":{"type":"boolean"},"direct":{"type":"boolean"}},"required":["reasoning","use_tool","calls","needs_more","direct"]}`)
	first := Reply(api.ChatRequest{Format: format, Messages: []api.Message{{Role: "system"}, {Role: "user", Content: "q"}}})
	var sel struct {
		UseTool   bool `json:"use_tool"`
		NeedsMore bool `json:"needs_more"`
		Calls     []struct {
			Tool, Task string
		} `json:"calls"`
	}
	if err := json.Unmarshal([]byte(first.Content), &sel); err != nil {
		t.Fatal(err)
	}
	if !sel.UseTool || sel.NeedsMore || len(sel.Calls) != 1 || sel.Calls[0].Tool != "calc.add" {
		t.Errorf("first selection: got %s, want one call of calc.add", first.Content)
	}
	later := Reply(api.ChatRequest{Format: format, Messages: []api.Message{{Role: "user"}, {Role: "assistant"}, {Role: "user"}}})
	if err := json.Unmarshal([]byte(later.Content), &sel); err != nil {
		t.Fatal(err)
	}
	if sel.UseTool || len(sel.Calls) != 0 {
		t.Errorf("later selection: got %s, want no tool", later.Content)
	}
}

func TestReplyArguments(t *testing.T) {
	tests := []struct{ format, want string }{
		{`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"},"c":{"type":"string"}},"required":["a","b"]}`, `{"a":0,"b":0}`},
		{`{"type":"object","properties":{"unit":{"type":"string","enum":["days","weeks"]},"n":{"type":"integer","minimum":3},"xs":{"type":"array","minItems":2,"items":{"type":"boolean"}}},"required":["unit","n","xs"]}`, `{"n":3,"unit":"days","xs":[false,false]}`},
		{`{"type":"object","properties":{"o":{"anyOf":[{"type":"null"},{"type":"string"}]}},"required":["o"]}`, `{"o":null}`},
	}
	for _, tc := range tests {
		got := Reply(api.ChatRequest{Format: json.RawMessage(tc.format)})
		if got.Content != tc.want {
			t.Errorf("format %s: got %s, want %s", tc.format, got.Content, tc.want)
		}
	}
}

func TestReplyNative(t *testing.T) {
	var params api.ToolFunctionParameters
	if err := json.Unmarshal([]byte(`{"type":"object","required":["x"],"properties":{"x":{"type":"integer"},"y":{"type":"string"}}}`), &params); err != nil {
		t.Fatal(err)
	}
	tools := []api.Tool{{Type: "function", Function: api.ToolFunction{Name: "s.first", Parameters: params}}, {Type: "function", Function: api.ToolFunction{Name: "s.second"}}}
	first := Reply(api.ChatRequest{Tools: tools, Messages: []api.Message{{Role: "user", Content: "q"}}})
	if len(first.ToolCalls) != 1 || first.ToolCalls[0].Function.Name != "s.first" {
		t.Fatalf("first round: got %+v, want one call of s.first", first.ToolCalls)
	}
	if b, _ := json.Marshal(first.ToolCalls[0].Function.Arguments); string(b) != `{"x":0}` {
		t.Errorf("got arguments %s, want {\"x\":0}", b)
	}
	later := Reply(api.ChatRequest{Tools: tools, Messages: []api.Message{{Role: "user"}, {Role: "assistant"}, {Role: "tool"}}})
	if len(later.ToolCalls) != 0 {
		t.Errorf("later round: got %+v, want no call", later.ToolCalls)
	}
}
