package builtin

import (
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestExamples: every built-in tool has example queries, each names a tool its server lists, none
// repeats another (ignoring case and spacing), and callers get a copy they may change.
func TestExamples(t *testing.T) {
	seen := map[string]string{}
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			c := connect(t, name, nil)
			res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var tools []string
			for _, tl := range res.Tools {
				tools = append(tools, tl.Name)
			}
			ex := Examples(name)
			for _, tool := range tools {
				if len(ex[tool]) < 3 {
					t.Errorf("%s.%s: got %d examples, want at least 3", name, tool, len(ex[tool]))
				}
			}
			for tool, qs := range ex {
				if !slices.Contains(tools, tool) {
					t.Errorf("examples of %s.%s: the server lists no such tool (it lists %v)", name, tool, tools)
				}
				for _, q := range qs {
					key := strings.Join(strings.Fields(strings.ToLower(q)), " ")
					if other, ok := seen[key]; ok {
						t.Errorf("example %q of %s.%s repeats one of %s", q, name, tool, other)
					}
					seen[key] = name + "." + tool
				}
			}
			ex[tools[0]] = nil
			if len(Examples(name)[tools[0]]) == 0 {
				t.Error("changing the returned map changed the built-in examples")
			}
		})
	}
	if got := Examples("nope"); got != nil {
		t.Errorf("Examples(nope): got %v, want nil", got)
	}
}
