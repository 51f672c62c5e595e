// Command toolrouter is a sidecar that decides, for each query a council of models receives,
// whether an MCP tool is needed, which one and with what arguments, and runs it.
//
//	toolrouter [flags] [serve]            serve the HTTP API (default)
//	toolrouter [flags] route "QUERY"      route one query and print the outcome as JSON
//	toolrouter [flags] inventory          print the exported tool inventory as JSON
//	toolrouter [flags] search "QUERY"     show the tools retrieval offers for a query, as JSON
//	toolrouter [flags] mcp                serve toolrouter as an MCP server over stdio
//	toolrouter [flags] approve TOKEN      run a call held for approval, once, and print it as JSON
//	toolrouter [flags] usage [-since T] [-until T] [-by org|team|agent|tool|model]
//	                                      print the usage records' totals as a table
//	toolrouter keys new --org O [--team T] [--agent A] [--name N]
//	                                      make an API key: prints {"key", "entry"} (auth.keys entry)
//	toolrouter tools approve SERVER.TOOL [-url URL]
//	                                      lift a tool's quarantine on a running server
//	toolrouter mcp-builtin NAME [-http ADDR]
//	                                      serve a built-in MCP server over stdio (or streamable HTTP)
//
// route, inventory and search act for the operator, with every tool, and mcp and approve for org default, as a
// request without a credential does, unless -as names an identity of the orgs hierarchy. serve authenticates callers (auth) and refuses to start on a non-loopback
// address when none can authenticate, unless auth.allow_anonymous is set, and reloads its
// configuration on SIGHUP or POST /v1/admin/reload (package reload). Flags may come before or
// after the command and its query; -h prints the usage, -version the version. The exit codes are
// cli.go's: 0 routed, 1 usage or configuration error, 2 degraded or model failure, 3 no server up.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// SIGHUP reloads the configuration of a running server instead of ending the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	err := runWith(ctx, os.Args[1:], os.Stdout, os.Stderr, runOptions{reload: hup})
	signal.Stop(hup)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "toolrouter:", err)
	}
	os.Exit(exitCode(err))
}

// runOptions are what main gives a command beside its arguments.
type runOptions struct {
	// ready, if not nil, is told the address once the API is listening.
	ready func(addr string)
	// reload, if not nil, delivers the signals that make a running server reload its configuration.
	reload <-chan os.Signal
}

// run runs one command, printing command output to stdout and the log to stderr; ready, if not
// nil, is told the address once the API is listening. An error's exit code is exitCode's.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, ready func(addr string)) error {
	return runWith(ctx, args, stdout, stderr, runOptions{ready: ready})
}

// runWith is run with what main gives beside the arguments (o): the commands that need no
// configuration, then the configuration, the parts every command shares (open), and the command.
func runWith(ctx context.Context, args []string, stdout, stderr io.Writer, o runOptions) error {
	if len(args) > 0 {
		if c, ok := commandNamed(args[0]); ok && c.alone != nil {
			return c.alone(ctx, c, args[1:], stdout, stderr)
		}
	}
	var uf usageFlags
	inv, err := parse(args, stdout, stderr, &uf)
	if err != nil || inv.cmd == cmdHelp || inv.cmd == cmdVersion {
		return err
	}
	if inv.cmd != "serve" && o.reload != nil {
		// Only a server reloads: for another command a hangup ends it, as it would by default.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-o.reload:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	if inv.cmd == "usage" {
		return printUsage(ctx, inv.cfg.Usage, &uf, stdout)
	}
	// What run opened is closed when it returns, last first: after serving, within the end of
	// http.shutdown_timeout (p.closeBy); after another command, however long it takes.
	p := &parts{invocation: inv}
	defer func() { closeAll(p.closers, p.closeBy) }()
	if err := p.open(ctx, stderr); err != nil {
		return err
	}
	switch inv.cmd {
	case "inventory", "route", "search":
		return p.local(ctx, stdout)
	case "approve":
		return p.approveHeld(ctx, stdout)
	}
	if err := p.observe(ctx); err != nil {
		return err
	}
	if inv.cmd == "mcp" {
		go warnModelUnreachable(ctx, p.models.probe, inv.cfg.Ollama.Host, p.logger)
		return serveMCPStdio(ctx, p.mcpServer(), p.as, os.Stdin, stdout)
	}
	return p.serve(ctx, o)
}
