package mcpserver_test

import (
	"regexp"
	"strings"
	"testing"

	"toolrouter/inventory"
	"toolrouter/mcpserver"
)

var mcpName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func tools(qualified ...[2]string) []*inventory.Tool {
	var out []*inventory.Tool
	for _, q := range qualified {
		out = append(out, &inventory.Tool{Server: q[0], Name: q[1], Qualified: inventory.Qualify(q[0], q[1])})
	}
	return out
}

// TestToolNames: every name is MCP-safe and unique, the plain form whenever it is both, and the
// same whatever the order of the list.
func TestToolNames(t *testing.T) {
	long := strings.Repeat("x", 70)
	for _, tc := range []struct {
		name  string
		tools []*inventory.Tool
		want  map[string]string // qualified -> name; "" only checks safety and uniqueness
	}{
		{"plain", tools([2]string{"calculator", "add"}, [2]string{"clock", "current_time"}),
			map[string]string{"calculator.add": "calculator__add", "clock.current_time": "clock__current_time"}},
		{"dots and other characters", tools([2]string{"fs", "read.file"}, [2]string{"my server", "ö"}),
			map[string]string{"fs.read.file": "fs__read_file", "my server.ö": "my_server___"}},
		{"collision", tools([2]string{"a", "b.c"}, [2]string{"a", "b_c"}, [2]string{"a", "d"}),
			map[string]string{"a.d": "a__d", "a.b.c": "", "a.b_c": ""}},
		{"long", tools([2]string{"srv", long}, [2]string{"srv", long + "y"}),
			map[string]string{"srv." + long: "", "srv." + long + "y": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mcpserver.ToolNames(tc.tools)
			reversed := make([]*inventory.Tool, len(tc.tools))
			for i, tool := range tc.tools {
				reversed[len(tc.tools)-1-i] = tool
			}
			again := mcpserver.ToolNames(reversed)
			seen := map[string]string{}
			for q, want := range tc.want {
				n := got[q]
				if !mcpName.MatchString(n) {
					t.Errorf("%s: got %q, not [A-Za-z0-9_-]{1,64}", q, n)
				}
				if want != "" && n != want {
					t.Errorf("%s: got %q, want %q", q, n, want)
				}
				if other, dup := seen[n]; dup {
					t.Errorf("%s and %s share %q", q, other, n)
				}
				seen[n] = q
				if again[q] != n {
					t.Errorf("%s: got %q for the list reversed, %q for it in order", q, again[q], n)
				}
				if n == mcpserver.ToolRoute || n == mcpserver.ToolAnswer {
					t.Errorf("%s: got %q, one of toolrouter's own tools", q, n)
				}
			}
		})
	}
}
