package retrieval

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"toolrouter/config"
	"toolrouter/inventory"
)

// Serve brings a pool up the production way: one in-process mcp-go server per pool server in an
// inventory.Manager, and waits for every server's first connection. Every tool answers "ok",
// except those of a built-in server (Server.Builtin), which is the sidecar's own, served as the
// sidecar serves it. The caller closes the manager.
func Serve(ctx context.Context, p *Pool, log *slog.Logger) (*inventory.Manager, error) {
	servers := make(map[string]config.Server, len(p.Servers))
	inProcess := make(map[string]*server.MCPServer, len(p.Servers))
	for _, s := range p.Servers {
		servers[s.Name] = config.Server{
			Purpose: s.Purpose, Transport: config.TransportBuiltin, Builtin: s.Name,
			ConnectTimeout: config.Duration(time.Minute), CallTimeout: config.Duration(time.Minute),
			// Nor relisting when a list's time to live passes (see the health pings below).
			ListTTLMin: config.Duration(24 * time.Hour), ListTTLMax: config.Duration(24 * time.Hour),
		}
		if s.Builtin {
			continue
		}
		srv := server.NewMCPServer(s.Name, "1.0.0", server.WithToolCapabilities(false))
		tools := make([]server.ServerTool, len(s.Tools))
		for i, t := range s.Tools {
			tool := mcp.NewToolWithRawSchema(t.Name, t.Description, t.Schema)
			tool.Title = t.Title
			tools[i] = server.ServerTool{Tool: tool, Handler: answerOK}
		}
		srv.AddTools(tools...)
		inProcess[s.Name] = srv
	}
	// No health pings (nor relisting, above) during a measurement: each ends in listing the
	// server's tools again, and a long run on a loaded machine counted the tools of servers being
	// relisted as gone.
	inv := inventory.New(servers, inventory.Options{Logger: log, InProcess: inProcess, HealthInterval: 24 * time.Hour})
	inv.Start(ctx)
	snap := inv.Snapshot()
	for _, s := range snap.Servers {
		if s.Status != inventory.StateUp {
			inv.Close()
			return nil, fmt.Errorf("%s: server %s is %s: %s", p.Name, s.Name, s.Status, s.Error)
		}
	}
	want := p.Tools()
	for _, s := range snap.Servers {
		if i := slices.IndexFunc(p.Servers, func(ps Server) bool { return ps.Name == s.Name }); i >= 0 && p.Servers[i].Builtin {
			want += len(s.Tools)
		}
	}
	if got := len(snap.Available()); got != want {
		inv.Close()
		return nil, fmt.Errorf("%s: %d of %d tools available", p.Name, got, want)
	}
	return inv, nil
}

func answerOK(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return mcp.NewToolResultText("ok"), nil
}
