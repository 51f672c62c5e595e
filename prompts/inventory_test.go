package prompts

import (
	"encoding/json"
	"strings"
	"testing"

	"toolrouter/inventory"
)

// A schema's $comment, $schema, $id and vendor keywords reach neither phase's prompt; what helps
// the model fill a value (descriptions, enums, patterns, defaults, $ref and $defs) does, and a
// parameter whose name looks like a vendor keyword stays a parameter.
func TestPromptsShowNoUnreadKeywords(t *testing.T) {
	tool := &inventory.Tool{
		Qualified:   "files.write",
		Description: "Writes a file.",
		InputSchema: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"urn:hidden-id",` +
			`"$comment":"HIDDEN-COMMENT","x-llm-hint":"HIDDEN-VENDOR","type":"object",` +
			`"properties":{"path":{"type":"string","pattern":"^/","description":"Where to write.","x-Note":{"n":"HIDDEN-NESTED"}},` +
			`"x-request-id":{"$ref":"#/$defs/Id"}},"required":["path"],"$defs":{"Id":{"type":"string","$comment":"HIDDEN-DEF"}}}`),
		Parameters: []inventory.Param{
			{Name: "path", Type: "string", Description: "Where to write.", Required: true},
			{Name: "x-request-id", Type: "any"},
		},
	}
	phase2, err := ArgumentsTool(ToolOf(tool))
	if err != nil {
		t.Fatal(err)
	}
	phase1, err := SelectToolText(ToolOf(tool))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ name, text string }{{"phase 1", phase1}, {"phase 2", phase2}} {
		for _, hidden := range []string{"HIDDEN", "$comment", "x-llm-hint", "x-Note", "$schema", "$id"} {
			if strings.Contains(p.text, hidden) {
				t.Errorf("%s shows %q:\n%s", p.name, hidden, p.text)
			}
		}
	}
	want := `Input schema: {"type":"object","properties":{"path":{"type":"string","pattern":"^/","description":"Where to write."},` +
		`"x-request-id":{"$ref":"#/$defs/Id"}},"required":["path"],"$defs":{"Id":{"type":"string"}}}`
	if !strings.Contains(phase2, want) {
		t.Errorf("phase 2 prompt lacks\n%s\ngot:\n%s", want, phase2)
	}
	if !strings.Contains(phase1, "x-request-id") {
		t.Errorf("phase 1 prompt lost the parameter x-request-id:\n%s", phase1)
	}
}
