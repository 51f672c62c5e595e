package fakemodel

import (
	"encoding/json"
	"testing"

	"github.com/ollama/ollama/api"
)

// TestReplySelection: the first selection calls the first tool of the enum and a later one none,
// in the shape of each router.reasoning's format: calls as tool names ("none", "brief") or as
// objects naming the tool ("full").
func TestReplySelection(t *testing.T) {
	const enum = `["calc.add","calc.sub","none"]`
	tests := []struct {
		name, format string
	}{
		{"none", `{"type":"object","properties":{"use_tool":{"type":"boolean"},"calls":{"type":"array","maxItems":4,"items":{"type":"string","enum":` + enum + `}},
			"needs_more":{"type":"boolean"},"direct":{"type":"boolean"}},"required":["use_tool","calls","needs_more","direct"]}`},
		{"brief", `{"type":"object","properties":{"reasoning":{"type":"string","maxLength":160},"use_tool":{"type":"boolean"},"calls":{"type":"array","maxItems":4,"items":{"type":"string","enum":` + enum + `}},
			"needs_more":{"type":"boolean"},"direct":{"type":"boolean"}},"required":["reasoning","use_tool","calls","needs_more","direct"]}`},
		{"full", `{"type":"object","properties":{"reasoning":{"type":"string"},"use_tool":{"type":"boolean"},
			"calls":{"type":"array","maxItems":4,"items":{"type":"object","properties":{"tool":{"type":"string","enum":` + enum + `},"task":{"type":"string"}},"required":["tool","task"]}},
			"needs_more":{"type":"boolean"},"direct":{"type":"boolean"}},"required":["reasoning","use_tool","calls","needs_more","direct"]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			format := json.RawMessage(tc.format)
			first := Reply(api.ChatRequest{Format: format, Messages: []api.Message{{Role: "system"}, {Role: "user", Content: "q"}}})
			use, tools := selection(t, first.Content)
			if !use || len(tools) != 1 || tools[0] != "calc.add" {
				t.Errorf("first selection: got %s, want one call of calc.add", first.Content)
			}
			later := Reply(api.ChatRequest{Format: format, Messages: []api.Message{{Role: "user"}, {Role: "assistant"}, {Role: "user"}}})
			if use, tools := selection(t, later.Content); use || len(tools) != 0 {
				t.Errorf("later selection: got %s, want no tool", later.Content)
			}
		})
	}
}

// selection reads a phase-1 answer in any shape: use_tool and the tools its calls name.
func selection(t *testing.T, content string) (bool, []string) {
	t.Helper()
	var sel struct {
		UseTool   bool              `json:"use_tool"`
		NeedsMore bool              `json:"needs_more"`
		Calls     []json.RawMessage `json:"calls"`
	}
	if err := json.Unmarshal([]byte(content), &sel); err != nil {
		t.Fatal(err)
	}
	if sel.NeedsMore {
		t.Errorf("got %s, want needs_more false", content)
	}
	var tools []string
	for _, c := range sel.Calls {
		var name string
		if err := json.Unmarshal(c, &name); err != nil {
			var obj struct{ Tool, Task string }
			if err := json.Unmarshal(c, &obj); err != nil {
				t.Fatalf("call %s is neither a name nor an object naming a tool", c)
			}
			name = obj.Tool
		}
		tools = append(tools, name)
	}
	return sel.UseTool, tools
}

// TestReplyLogprobs: asked for logprobs, the answer is one certain token spelling it; not asked,
// there are none.
func TestReplyLogprobs(t *testing.T) {
	format := json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"}},"required":["a"]}`)
	for _, asked := range []bool{false, true} {
		got := Reply(api.ChatRequest{Format: format, Logprobs: asked})
		switch {
		case !asked && got.Logprobs != nil:
			t.Errorf("not asked: got logprobs %+v, want none", got.Logprobs)
		case asked && (len(got.Logprobs) != 1 || got.Logprobs[0].Token != got.Content || got.Logprobs[0].Logprob != 0 ||
			len(got.Logprobs[0].TopLogprobs) != 1 || got.Logprobs[0].TopLogprobs[0].Token != got.Content):
			t.Errorf("asked: got logprobs %+v for %q, want one certain token spelling the answer", got.Logprobs, got.Content)
		}
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
