package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"toolrouter/access"
	"toolrouter/auth"
	"toolrouter/config"
	"toolrouter/inventory"
	"toolrouter/inventory/builtin"
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

// command is one command of the command line: what the usage says of it and, for a command that
// takes neither the shared flags nor the configuration, how it runs. The usage, the check of the
// command named and the dispatch all read this one table (commands).
type command struct {
	name     string   // the word that names it
	synopsis string   // its arguments, after "toolrouter "
	summary  []string // what it does, a line of the usage each
	// alone, if not nil, runs the command (given as self) with the arguments after its name; it
	// prints its own help for -h. Without it the command is run's, after the shared flags and the
	// configuration.
	alone func(ctx context.Context, self command, args []string, stdout, stderr io.Writer) error
}

// commands are the command line's commands, in the order the usage lists them; the first is the
// default.
var commands = []command{
	{name: "serve", synopsis: "[flags] [serve]", summary: []string{"serve the HTTP API (default)"}},
	{name: "route", synopsis: `[flags] route "QUERY"`, summary: []string{"route one query and print the outcome as JSON"}},
	{name: "inventory", synopsis: "[flags] inventory", summary: []string{"print the exported tool inventory as JSON"}},
	{name: "search", synopsis: `[flags] search "QUERY"`, summary: []string{"show the tools retrieval offers for a query, as JSON"}},
	{name: "mcp", synopsis: "[flags] mcp", summary: []string{"serve toolrouter as an MCP server over stdio"}},
	{name: "approve", synopsis: "[flags] approve TOKEN", summary: []string{"run a call held for approval, once (the token", "toolrouter mcp names), and print it as JSON"}},
	{name: "usage", synopsis: "[flags] usage [-since T] [-until T] [-by org|team|agent|tool|model]",
		summary: []string{"print the usage records' totals as a table"}},
	{name: "keys", synopsis: "keys new --org O [--team T] [--agent A] [--name N]", summary: []string{"make an API key"},
		alone: func(_ context.Context, self command, args []string, stdout, _ io.Writer) error {
			return newKey(self, args, stdout)
		}},
	{name: "tools", synopsis: "tools approve SERVER.TOOL [-url URL]",
		summary: []string{"lift a tool's quarantine on a running server", "(an admin API key in " + envAPIKey + ")"},
		alone: func(ctx context.Context, self command, args []string, stdout, _ io.Writer) error {
			return toolsCommand(ctx, self, args, stdout)
		}},
	{name: "mcp-builtin", synopsis: "mcp-builtin NAME [-http ADDR]",
		summary: []string{"serve a built-in MCP server over stdio (or streamable HTTP)"}, alone: serveBuiltin},
}

// commandNamed is the command of that name; false when there is none.
func commandNamed(name string) (command, bool) {
	i := slices.IndexFunc(commands, func(c command) bool { return c.name == name })
	if i < 0 {
		return command{}, false
	}
	return commands[i], true
}

// known tells whether name is a command that run runs after the shared flags and the
// configuration (not one that runs alone).
func known(name string) bool {
	c, ok := commandNamed(name)
	return ok && c.alone == nil
}

// commandNames are the commands' names, "a, b or c".
func commandNames() string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// writeCommand writes a command's lines of the usage: its synopsis, then its summary from column 40.
func writeCommand(w io.Writer, c command) {
	const column = 40
	line := "  toolrouter " + c.synopsis
	for _, s := range c.summary {
		if len(line) >= column-1 {
			fmt.Fprintln(w, line)
			line = ""
		}
		fmt.Fprintf(w, "%-*s%s\n", column, line, s)
		line = ""
	}
}

// usage writes the commands and the flags of fs.
func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintln(w, "Usage:")
	for _, c := range commands {
		writeCommand(w, c)
	}
	fmt.Fprint(w, `
Flags may come before or after the command and its query.
Exit codes: 0 routed; 1 usage or configuration error; 2 degraded outcome or model failure;
3 no MCP server up. A running server reloads its configuration on SIGHUP.

Flags:
`)
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// commandHelp writes the usage of c, a command that runs alone, with the flags of fs, to w.
func commandHelp(w io.Writer, c command, fs *flag.FlagSet) {
	fmt.Fprintln(w, "Usage:")
	writeCommand(w, c)
	if fs != nil {
		fmt.Fprintln(w, "\nFlags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
}

// isHelp tells whether arg asks for help, as the flag package reads it.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--h", "--help":
		return true
	}
	return false
}

// version is the module version and the VCS revision, time and modified flag the binary was
// built from, as runtime/debug reports them.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "toolrouter (no build information)"
	}
	parts := []string{"toolrouter " + moduleVersion(), bi.GoVersion}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision", "vcs.time", "vcs.modified":
			parts = append(parts, strings.TrimPrefix(s.Key, "vcs.")+"="+s.Value)
		}
	}
	return strings.Join(parts, " ")
}

// moduleVersion is the module version the binary was built as, "(devel)" for a build from a
// checkout: what toolrouter tells MCP clients it is.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
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

// The commands parse answers itself.
const (
	cmdHelp    = "-help"
	cmdVersion = "-version"
)

// invocation is a parsed command line: the command, its arguments, the configuration loaded, the
// log (to stderr), the identity of -as, and reread, which loads the configuration again as it was
// loaded now (file, environment, flags).
type invocation struct {
	cmd    string
	rest   []string
	cfg    config.Config
	logger *slog.Logger
	as     access.Identity
	reread func() (config.Config, error)
}

// parse reads the command line: flags may come before or after the command and after its query.
// -h and -version print to stdout and return cmdHelp or cmdVersion, loading nothing.
func parse(args []string, stdout, stderr io.Writer, uf *usageFlags) (invocation, error) {
	fs := flag.NewFlagSet("toolrouter", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the error says it all; -h prints the usage to stdout
	fs.Usage = func() {}
	path := fs.String("config", config.DefaultPath, "config file (JSON); \"\" for built-in defaults only")
	listen := fs.String("listen", "", "listen address (config key listen)")
	host := fs.String("ollama", "", "Ollama address in any form OLLAMA_HOST takes (config key ollama.host)")
	var mcpConfigs stringList
	fs.Var(&mcpConfigs, "mcp-config", "an MCP client's server list to serve too (Claude Desktop, Cursor, Windsurf, VS Code mcp.json); repeatable")
	model := fs.String("model", "", "tool-calling model (config key ollama.model)")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	asFlag := fs.String("as", "", "route, search, list the inventory, serve mcp or approve as this org[/team[/agent]] of orgs (default: the operator, every tool; mcp and approve: org default, as a request without a credential)")
	showVersion := fs.Bool("version", false, "print the version and the revision built from, and exit")
	uf.register(fs)
	// Flags and positional arguments interleave: parse flags up to the next positional, take it,
	// and go on. Everything after "--" is positional.
	var pos []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout, fs)
			return invocation{cmd: cmdHelp}, nil
		}
		if err != nil {
			return invocation{}, fmt.Errorf("%w (toolrouter -h lists the flags)", err)
		}
		left := fs.Args()
		if n := len(args) - len(left); n > 0 && args[n-1] == "--" {
			pos = append(pos, left...)
			break
		}
		if len(left) == 0 {
			break
		}
		pos, args = append(pos, left[0]), left[1:]
	}
	if *showVersion {
		fmt.Fprintln(stdout, version())
		return invocation{cmd: cmdVersion}, nil
	}
	cmd, rest := "serve", pos
	if len(rest) > 0 {
		cmd, rest = rest[0], rest[1:]
	}
	// The arguments are checked before anything is loaded or connected.
	switch {
	case !known(cmd):
		return invocation{}, fmt.Errorf("unknown command %q: want %s", cmd, commandNames())
	case cmd != "usage" && uf.set():
		return invocation{}, errors.New("-since, -until and -by apply to usage")
	case (cmd == "route" || cmd == "search") && len(rest) != 1:
		return invocation{}, fmt.Errorf(`usage: toolrouter [flags] %s "QUERY" (one argument; got %d)`, cmd, len(rest))
	case cmd == "approve" && len(rest) != 1:
		return invocation{}, fmt.Errorf("usage: toolrouter [flags] approve TOKEN (one argument; got %d)", len(rest))
	case (cmd == "serve" || cmd == "inventory" || cmd == "mcp" || cmd == "usage") && len(rest) > 0:
		return invocation{}, fmt.Errorf("usage: toolrouter [flags] %s (no arguments; got %q)", cmd, rest)
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*level)); err != nil {
		return invocation{}, fmt.Errorf("-log-level: %w", err)
	}
	var as access.Identity
	if *asFlag != "" {
		if cmd == "serve" {
			return invocation{}, errors.New("-as applies to route, search, inventory, mcp and approve; serve takes each request's identity from its credential")
		}
		var err error
		if as, err = access.ParseIdentity(*asFlag); err != nil {
			return invocation{}, fmt.Errorf("-as: %w", err)
		}
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	flags := map[string]any{}
	for key, v := range map[string]string{"listen": *listen, "ollama.host": *host, "ollama.model": *model} {
		if v != "" {
			flags[key] = v
		}
	}
	if *path == config.DefaultPath {
		if _, statErr := os.Stat(*path); errors.Is(statErr, os.ErrNotExist) {
			*path = "" // run on built-in defaults when started outside the repository
		}
	}
	file := *path
	reread := func() (config.Config, error) { return config.Load(file, flags, mcpConfigs...) }
	cfg, err := reread()
	if err != nil {
		return invocation{}, err
	}
	if as.Depth() > 0 && !cfg.Orgs.Has(as) {
		return invocation{}, fmt.Errorf("-as: %s is not in orgs", as)
	}
	return invocation{cmd: cmd, rest: rest, cfg: cfg, logger: logger, as: as, reread: reread}, nil
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// newKey runs "keys new": it prints one JSON object, the new key (shown this once) and the
// auth.keys entry that accepts it, which holds only the key's SHA-256.
func newKey(self command, args []string, stdout io.Writer) error {
	const usage = "usage: toolrouter keys new --org ORG [--team TEAM] [--agent AGENT] [--name NAME]"
	fs := flag.NewFlagSet("keys new", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the error says it all
	org := fs.String("org", "", "the org the key identifies")
	team := fs.String("team", "", "a team of the org")
	agent := fs.String("agent", "", "an agent of the team")
	name := fs.String("name", "", "the key's name in logs (default: org-team-agent)")
	if len(args) > 0 && isHelp(args[0]) {
		commandHelp(stdout, self, fs)
		return nil
	}
	if len(args) == 0 || args[0] != "new" {
		return errors.New(usage)
	}
	err := fs.Parse(args[1:])
	if errors.Is(err, flag.ErrHelp) {
		commandHelp(stdout, self, fs)
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w; %s", err, usage)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected %q; %s", fs.Arg(0), usage)
	}
	g, err := auth.NewKey(*name, auth.Identity{Org: *org, Team: *team, Agent: *agent})
	if err != nil {
		return fmt.Errorf("%w; %s", err, usage)
	}
	return printJSON(stdout, g)
}

// serveBuiltin serves one built-in MCP server over stdio, or streamable HTTP with -http.
// Its log goes to stderr.
func serveBuiltin(ctx context.Context, self command, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp-builtin", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the error says it all
	addr := fs.String("http", "", "serve streamable HTTP on this address instead of stdio")
	help := func() error {
		commandHelp(stdout, self, fs)
		fmt.Fprintf(stdout, "\nNAME is one of %v.\n", builtin.Names())
		return nil
	}
	if len(args) > 0 && isHelp(args[0]) {
		return help()
	}
	if len(args) == 0 {
		return fmt.Errorf("usage: toolrouter mcp-builtin NAME [-http ADDR]; NAME is one of %v", builtin.Names())
	}
	name := args[0]
	err := fs.Parse(args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return help()
	}
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(stderr, nil))
	processLogs(logger, stderr)
	if *addr == "" {
		return builtin.ServeStdio(ctx, name, logger)
	}
	h, err := builtin.Handler(name)
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: *addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
