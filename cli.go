package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"toolrouter/inventory"
)

// The process's exit codes (README "Exit codes").
const (
	exitOK       = 0 // routed, or the command did what it was asked
	exitUsage    = 1 // a usage or configuration error, or any other failure
	exitDegraded = 2 // route: the outcome is degraded, or the model failed
	exitNoServer = 3 // route: no MCP server is up after the first connection round
)

// exitError is an error that ends the process with its own exit code; any other error is
// exitUsage.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// exitCode is the process's exit code for run's error.
func exitCode(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	}
	return exitUsage
}

// usage writes the commands and the flags of fs.
func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `Usage:
  toolrouter [flags] [serve]            serve the HTTP API (default)
  toolrouter [flags] route "QUERY"      route one query and print the outcome as JSON
  toolrouter [flags] inventory          print the exported tool inventory as JSON
  toolrouter [flags] search "QUERY"     show the tools retrieval offers for a query, as JSON
  toolrouter [flags] mcp                serve toolrouter as an MCP server over stdio
  toolrouter [flags] usage [-since T] [-until T] [-by org|team|agent|tool|model]
                                        print the usage records' totals as a table
  toolrouter keys new --org O [--team T] [--agent A] [--name N]
                                        make an API key
  toolrouter mcp-builtin NAME [-http ADDR]
                                        serve a built-in MCP server over stdio (or streamable HTTP)

Flags may come before or after the command and its query.
Exit codes: 0 routed; 1 usage or configuration error; 2 degraded outcome or model failure;
3 no MCP server up. A running server reloads its configuration on SIGHUP.

Flags:
`)
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// version is the module version and the VCS revision, time and modified flag the binary was
// built from, as runtime/debug reports them.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "toolrouter (no build information)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	parts := []string{"toolrouter " + v, bi.GoVersion}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision", "vcs.time", "vcs.modified":
			parts = append(parts, strings.TrimPrefix(s.Key, "vcs.")+"="+s.Value)
		}
	}
	return strings.Join(parts, " ")
}

// noServerUp is the exitNoServer error when no server of snap is up; nil when one is.
func noServerUp(snap *inventory.Snapshot) error {
	var down []string
	for _, s := range snap.Servers {
		if s.Status == inventory.StateUp {
			return nil
		}
		down = append(down, fmt.Sprintf("%s (%s: %s)", s.Name, s.Status, s.Error))
	}
	if len(down) == 0 {
		return &exitError{exitNoServer, errors.New("no MCP server is configured")}
	}
	return &exitError{exitNoServer, fmt.Errorf("no MCP server is up: %s", strings.Join(down, "; "))}
}
