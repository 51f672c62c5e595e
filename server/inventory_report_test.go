package server_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"toolrouter/config"
	"toolrouter/internal/fakeollama"
	"toolrouter/internal/testmcp"
	"toolrouter/inventory"
	"toolrouter/inventory/builtin"
	"toolrouter/server"
)

// TestReportsShowWhatTheInventoryLeftOut: /readyz and /v1/inventory show the tools left out (a
// schema over its bounds, a name outside MCP's rule) with the reason, each server's list_changed
// and refresh counts, and never a credential of a server's URL or headers.
func TestReportsShowWhatTheInventoryLeftOut(t *testing.T) {
	calc, err := builtin.Handler("calculator")
	if err != nil {
		t.Fatal(err)
	}
	httpSrv := httptest.NewServer(calc)
	t.Cleanup(httpSrv.Close)
	hostile := mcpserver.NewMCPServer("hostile", "1", mcpserver.WithToolCapabilities(true))
	ok := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	}
	hostile.AddTool(mcp.NewToolWithRawSchema("deep", "deep", testmcp.DeepSchema(2000)), ok)
	hostile.AddTool(mcp.NewTool("bad name", mcp.WithDescription("bad")), ok)
	hostile.AddTool(mcp.NewTool("fine", mcp.WithDescription("fine")), ok)

	timeouts := func(s config.Server) config.Server {
		s.ConnectTimeout, s.CallTimeout = config.Duration(10*time.Second), config.Duration(10*time.Second)
		return s
	}
	url := strings.Replace(httpSrv.URL, "http://", "http://bob:pw-s3cret@", 1) + "/mcp?access_token=tok-s3cret"
	inv := inventory.New(map[string]config.Server{
		"calc":    timeouts(config.Server{Transport: config.TransportStreamableHTTP, URL: url, Headers: map[string]string{"X-Api-Key": "hdr-s3cret"}}),
		"hostile": timeouts(config.Server{Transport: config.TransportBuiltin, Builtin: "hostile"}),
	}, inventory.Options{Logger: quiet, InProcess: map[string]*mcpserver.MCPServer{"hostile": hostile}})
	inv.Start(context.Background())
	t.Cleanup(inv.Close)
	for range 3 {
		hostile.SendNotificationToAllClients(string(mcp.MethodNotificationToolsListChanged), nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := inv.Wait(ctx, func(s *inventory.Snapshot) bool {
		for _, sv := range s.Servers {
			if sv.Name == "hostile" && sv.ListChanged == 3 && sv.Refreshes >= 1 {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}

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
