package tinymodel

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/parser"
	"github.com/ollama/ollama/template"
	"github.com/ollama/ollama/thinking"
	"github.com/ollama/ollama/tools"
)

var update = flag.Bool("update", false, "rewrite the golden prompts under testdata")

// TestModelfile reads the Modelfile as `ollama create` does and renders its template with
// Ollama's own packages: the tools and thinking capabilities Ollama infers from it, the tool-call
// tag it parses answers by, and the prompts it sends (golden files under testdata).
func TestModelfile(t *testing.T) {
	args := api.NewToolCallFunctionArguments()
	args.Set("a", 2)
	args.Set("b", 3)
	call := api.Message{Role: "assistant", ToolCalls: []api.ToolCall{{Function: api.ToolCallFunction{Name: "calculator.add", Arguments: args}}}}
	props := api.NewToolPropertiesMap()
	props.Set("a", api.ToolProperty{Type: api.PropertyType{"number"}})
	props.Set("b", api.ToolProperty{Type: api.PropertyType{"number"}})
	add := api.Tools{{Type: "function", Function: api.ToolFunction{Name: "calculator.add", Description: "Adds two numbers.",
		Parameters: api.ToolFunctionParameters{Type: "object", Required: []string{"a", "b"}, Properties: props}}}}
	system := api.Message{Role: "system", Content: "Pick one tool."}
	user := api.Message{Role: "user", Content: "What is 2 + 3?"}

	tests := []struct {
		name     string
		thinking bool
		values   template.Values
		wantTags [2]string // thinking tags Ollama infers
	}{
		{name: "plain-tool-round-trip", values: template.Values{Tools: add, Messages: []api.Message{
			system, user, call, {Role: "tool", Content: "5"}, {Role: "user", Content: "And 5 + 1?"}}}},
		{name: "thinking-on", thinking: true, values: template.Values{Tools: add, Messages: []api.Message{system, user}, Think: true, IsThinkSet: true},
			wantTags: [2]string{"<think>", "</think>"}},
		{name: "thinking-off", thinking: true, values: template.Values{Messages: []api.Message{user}, IsThinkSet: true},
			wantTags: [2]string{"<think>", "</think>"}},
		{name: "thinking-unset", thinking: true, values: template.Values{Messages: []api.Message{user}},
			wantTags: [2]string{"<think>", "</think>"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mf, err := parser.ParseFile(strings.NewReader(Modelfile("/m/tiny.gguf", tc.thinking)))
			if err != nil {
				t.Fatalf("parsing the Modelfile as ollama create does: %v", err)
			}
			got := map[string][]string{}
			for _, c := range mf.Commands {
				got[c.Name] = append(got[c.Name], c.Args)
			}
			if want := []string{"<|im_end|>", "<|endoftext|>"}; !slices.Equal(got["stop"], want) {
				t.Errorf("got stop %q, want %q", got["stop"], want)
			}
			if want := []string{"/m/tiny.gguf"}; !slices.Equal(got["model"], want) {
				t.Errorf("got FROM %q, want %q", got["model"], want)
			}
			if len(got["template"]) != 1 {
				t.Fatalf("got %d templates, want 1", len(got["template"]))
			}
			tmpl, err := template.Parse(got["template"][0])
			if err != nil {
				t.Fatalf("parsing the template as Ollama does: %v", err)
			}
			if vars, _ := tmpl.Vars(); !slices.Contains(vars, "tools") {
				t.Errorf("got template variables %q, want tools among them (the tools capability)", vars)
			}
			if tag := tools.NewParser(tmpl.Template, add).Tag(); tag != "<tool_call>" {
				t.Errorf("got tool-call tag %q, want <tool_call>", tag)
			}
			if open, close := thinking.InferTags(tmpl.Template); [2]string{open, close} != tc.wantTags {
				t.Errorf("got thinking tags %q %q, want %q", open, close, tc.wantTags)
			}
			var b strings.Builder
			if err := tmpl.Execute(&b, tc.values); err != nil {
				t.Fatalf("rendering: %v", err)
			}
			golden := filepath.Join("testdata", "prompt-"+tc.name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -run TestModelfile -update writes it)", err)
			}
			if b.String() != string(want) {
				t.Errorf("got prompt\n%s\nwant (%s)\n%s", b.String(), golden, want)
			}
		})
	}
}
