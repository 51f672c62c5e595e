// Package builtin provides the MCP servers toolrouter serves itself: calculator and clock.
//
// The servers are built with mcp-go and run in-process, so the sidecar has
// working tools with nothing else installed. They can also be served on their
// own over stdio (ServeStdio) or streamable HTTP (Handler).
//
// Every tool reports bad input (a missing or mistyped parameter, division by
// zero, an unknown time zone, ...) as a tool error result, never as a
// protocol error, so the model sees the message and can correct its call.
package builtin

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// ErrUnknown is returned, wrapped, for a name that is not a built-in server.
var ErrUnknown = errors.New("unknown built-in server")

// serverVersion is the version the built-in servers report on initialize.
const serverVersion = "1.0.0"

// definition describes one built-in server.
type definition struct {
	purpose string
	tools   func(now func() time.Time) []server.ServerTool
}

var definitions = map[string]definition{
	"calculator": {
		purpose: "Arithmetic: add, subtract, multiply, divide, powers, roots and evaluating arithmetic expressions",
		tools:   func(func() time.Time) []server.ServerTool { return calculatorTools() },
	},
	"clock": {
		purpose: "Current time in any IANA time zone, converting times between zones, and differences between dates",
		tools:   clockTools,
	},
}

// Names lists the built-in servers, sorted.
func Names() []string {
	names := make([]string, 0, len(definitions))
	for name := range definitions {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Purpose returns the one-line purpose of a built-in server: the only
// description of it, which the configuration's defaults use and the server
// sends as its instructions. It returns "" for an unknown name.
func Purpose(name string) string {
	return definitions[name].purpose
}

// New returns the named built-in server. now may be nil (time.Now); the clock
// tools read the current time from it. An unknown name yields an error
// wrapping ErrUnknown.
func New(name string, now func() time.Time) (*server.MCPServer, error) {
	def, ok := definitions[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknown, name, strings.Join(Names(), ", "))
	}
	if now == nil {
		now = time.Now
	}
	srv := server.NewMCPServer(name, serverVersion,
		server.WithToolCapabilities(true),
		server.WithInstructions(def.purpose),
		server.WithRecovery(),
		server.WithOutputSchemaValidation(),
	)
	srv.AddTools(def.tools(now)...)
	return srv, nil
}
