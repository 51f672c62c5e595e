package testmcp

import (
	"context"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"toolrouter/config"
	"toolrouter/inventory"
)

// Inventory starts a real inventory of two servers, the built-in calculator and faults (served
// in process), with o's options, and closes it when the test ends. It fails the test unless both
// servers' tools are there once Start returns.
func Inventory(tb testing.TB, faults *Faults, o inventory.Options) *inventory.Manager {
	tb.Helper()
	builtin := func(name string) config.Server {
		return config.Server{Transport: config.TransportBuiltin, Builtin: name, Purpose: name + " tools",
			ConnectTimeout: config.Duration(10 * time.Second), CallTimeout: config.Duration(10 * time.Second)}
	}
	o.InProcess = map[string]*server.MCPServer{"faults": faults.MCPServer}
	inv := inventory.New(map[string]config.Server{"calculator": builtin("calculator"), "faults": builtin("faults")}, o)
	inv.Start(context.Background())
	tb.Cleanup(inv.Close)
	for _, tool := range []string{"calculator.add", "faults.fail"} {
		if _, ok := inv.Snapshot().Tool(tool); !ok {
			tb.Fatalf("inventory has no %s after Start: %+v", tool, inv.Snapshot().Servers)
		}
	}
	return inv
}
