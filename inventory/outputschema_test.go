package inventory_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"toolrouter/config"
	"toolrouter/inventory"
)

// TestOutputSchemaKeptAndExported: a tool's outputSchema is kept byte for byte, compiled, and
// exported as output_schema; one over the server's bounds leaves the tool out with the key to
// raise, and one that does not compile makes the tool unavailable with the reason.
func TestOutputSchemaKeptAndExported(t *testing.T) {
	const good = `{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"unevaluatedProperties":false}`
	deep := `{"type":"string"}`
	for range 40 {
		deep = `{"type":"object","properties":{"a":` + deep + `}}`
	}
	srv := server.NewMCPServer("typed", "1.0.0")
	noop := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	}
	srv.AddTool(mcp.NewTool("good", mcp.WithRawOutputSchema(json.RawMessage(good))), noop)
	srv.AddTool(mcp.NewTool("plain"), noop)
	srv.AddTool(mcp.NewTool("deep", mcp.WithRawOutputSchema(json.RawMessage(deep))), noop)
	srv.AddTool(mcp.NewTool("broken", mcp.WithRawOutputSchema(json.RawMessage(`{"type":"object","pattern":"("}`))), noop)
	m := start(t, map[string]config.Server{"typed": inProcess("typed")}, inventory.Options{InProcess: map[string]*server.MCPServer{"typed": srv}})
	snap := wait(t, m, "typed up", func(s *inventory.Snapshot) bool { return s.Servers[0].Status == inventory.StateUp })

	for _, tc := range []struct {
		tool      string
		available bool
		output    string // the exported output_schema, "" for none
		reason    string // in unavailable_reason
	}{
		{tool: "typed.good", available: true, output: good},
		{tool: "typed.plain", available: true},
		{tool: "typed.broken", output: `{"type":"object","pattern":"("}`, reason: "output schema"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			tool, ok := snap.Tool(tc.tool)
			if !ok {
				t.Fatalf("%s missing", tc.tool)
			}
			if tool.Available != tc.available || !strings.Contains(tool.Unavailable, tc.reason) {
				t.Fatalf("got available %v (%q), want %v naming %q", tool.Available, tool.Unavailable, tc.available, tc.reason)
			}
			b, _ := json.Marshal(tool)
			var exported struct {
				Output json.RawMessage `json:"output_schema"`
			}
			_ = json.Unmarshal(b, &exported)
			if string(exported.Output) != tc.output {
				t.Errorf("got output_schema %s, want %s", exported.Output, tc.output)
			}
			if tc.available && (tool.Output != nil) != (tc.output != "") {
				t.Errorf("got compiled output %v, want one exactly when the tool declares a schema", tool.Output)
			}
		})
	}
	excl := snap.Servers[0].Excluded
	if len(excl) != 1 || excl[0].Name != "deep" || !strings.Contains(excl[0].Reason, "output") || !strings.Contains(excl[0].Reason, "servers.typed.max_schema_depth") {
		t.Errorf("got excluded %+v, want deep left out naming servers.typed.max_schema_depth", excl)
	}
}
