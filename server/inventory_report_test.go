package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"toolrouter/config"
	"toolrouter/internal/fakeollama"
	"toolrouter/internal/testmcp"
	"toolrouter/inventory"
	"toolrouter/server"
)

// TestReportsShowWhatTheInventoryLeftOut: /readyz and /v1/inventory show the tools left out (a
// schema over its bounds, a name outside MCP's rule) with the reason, each server's list_changed
// and refresh counts, and never a credential of a server's URL or headers.
func TestReportsShowWhatTheInventoryLeftOut(t *testing.T) {
	httpSrv := calculatorServer(t)
	hostile := mcpserver.NewMCPServer("hostile", "1", mcpserver.WithToolCapabilities(true))
	ok := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	}
	hostile.AddTool(mcp.NewToolWithRawSchema("deep", "deep", testmcp.DeepSchema(2000)), ok)
	hostile.AddTool(mcp.NewTool("bad name", mcp.WithDescription("bad")), ok)
	hostile.AddTool(mcp.NewTool("fine", mcp.WithDescription("fine")), ok)

	url := strings.Replace(httpSrv.URL, "http://", "http://bob:pw-s3cret@", 1) + "/mcp?access_token=tok-s3cret"
	inv := startInventory(t, map[string]config.Server{
		"calc":    {Transport: config.TransportStreamableHTTP, URL: url, Headers: map[string]string{"X-Api-Key": "hdr-s3cret"}},
		"hostile": {Transport: config.TransportBuiltin, Builtin: "hostile"},
	}, inventory.Options{Logger: quiet, InProcess: map[string]*mcpserver.MCPServer{"hostile": hostile}})
	for range 3 {
		hostile.SendNotificationToAllClients(string(mcp.MethodNotificationToolsListChanged), nil)
	}
	waitInventory(t, inv, "hostile's three list_changed and a refresh", func(s *inventory.Snapshot) bool {
		for _, sv := range s.Servers {
			if sv.Name == "hostile" && sv.ListChanged == 3 && sv.Refreshes >= 1 {
				return true
			}
		}
		return false
	})

	model := fakeollama.New(t)
	app := server.New(server.Deps{Inventory: inv, Model: model.Client()}, server.Options{Model: "fake", ModelHost: model.URL, Logger: quiet})
	_, readyz, _ := do(t, app, "GET", "/readyz", nil)
	_, export, _ := do(t, app, "GET", "/v1/inventory", nil)

	var ready struct {
		Servers []struct {
			Name        string               `json:"name"`
			Status      string               `json:"status"`
			Excluded    []inventory.Excluded `json:"excluded_tools"`
			ListChanged uint64               `json:"list_changed"`
			Refreshes   uint64               `json:"refreshes"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(readyz, &ready); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, sv := range ready.Servers {
		if sv.Name != "hostile" {
			continue
		}
		found = true
		reasons := map[string]string{}
		for _, x := range sv.Excluded {
			reasons[x.Name] = x.Reason
		}
		if !strings.Contains(reasons["deep"], "max_schema_depth") || !strings.Contains(reasons["bad name"], "naming rule") {
			t.Errorf("got excluded %+v on /readyz, want deep (max_schema_depth) and \"bad name\" (naming rule)", sv.Excluded)
		}
		if sv.ListChanged != 3 || sv.Refreshes < 1 {
			t.Errorf("got list_changed %d refreshes %d on /readyz, want 3 and at least 1", sv.ListChanged, sv.Refreshes)
		}
	}
	if !found {
		t.Errorf("got /readyz %s, want the server hostile listed", readyz)
	}
	if !strings.Contains(string(export), `"excluded_tools":[`) {
		t.Errorf("got /v1/inventory %.400s, want excluded_tools", export)
	}
	for where, out := range map[string][]byte{"/readyz": readyz, "/v1/inventory": export} {
		for _, secret := range []string{"pw-s3cret", "tok-s3cret", "hdr-s3cret"} {
			if strings.Contains(string(out), secret) {
				t.Errorf("got %q in %s: %s", secret, where, out)
			}
		}
	}
}
