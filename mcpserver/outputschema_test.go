package mcpserver_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"toolrouter/access"
	"toolrouter/internal/fakeollama"
	"toolrouter/internal/testmcp"
	"toolrouter/inventory"
	"toolrouter/mcpserver"
	"toolrouter/router"
)

// TestCallOverResultBoundKeepsOutputSchemaContract: an exposed tool that declares an output
// schema is listed with it, so an MCP client requires structuredContent of every result that is
// not an error (the TypeScript SDK throws otherwise). A result whose structured content is over
// router.max_result_bytes, and so dropped, must then be an error result, never a success
// without structuredContent.
func TestCallOverResultBoundKeepsOutputSchemaContract(t *testing.T) {
	faults := testmcp.NewFaults()
	inv := testmcp.Inventory(t, faults, inventory.Options{Logger: quiet, RefreshInterval: time.Millisecond})
	rt := router.New(fakeollama.New(t).Client(), inv, inv, router.Settings{Model: "fake", CallTimeout: 10 * time.Second, MaxResultBytes: 4}, quiet)
	srv := mcpserver.New(mcpserver.Deps{Router: rt, Inventory: inv, Observer: &recorder{}}, mcpserver.Options{ExposeInventory: true, Logger: quiet})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go srv.Watch(ctx)
	e := &env{srv: srv}
	c := e.inProcess(t)
	idctx := access.WithIdentity(t.Context(), access.Identity{Org: "beta", Name: "beta-key"})
	list, err := c.ListTools(idctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(list.Tools, func(tool mcp.Tool) bool { return tool.Name == "calculator__add" })
	if i < 0 || list.Tools[i].OutputSchema.Type != "object" {
		t.Fatalf("calculator__add is not listed with its output schema (at %d)", i)
	}
	res, err := callTool(idctx, c, "calculator__add", map[string]any{"a": 123456, "b": 654321})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError && res.StructuredContent == nil {
		t.Errorf("got a success without structuredContent (%q) for a tool listed with an output schema, want an error result", text(res))
	}
}
