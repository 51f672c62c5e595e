// Command toolrouter is a sidecar that decides, for each query a council of models receives,
// whether an MCP tool is needed, which one and with what arguments, and runs it.
//
//	toolrouter [flags] [serve]            serve the HTTP API (default)
//	toolrouter [flags] route "QUERY"      route one query and print the outcome as JSON
//	toolrouter [flags] inventory          print the exported tool inventory as JSON
//	toolrouter [flags] search "QUERY"     show the tools retrieval offers for a query, as JSON
//	toolrouter [flags] mcp                serve toolrouter as an MCP server over stdio
//	toolrouter [flags] usage [-since T] [-until T] [-by org|team|agent|tool|model]
//	                                      print the usage records' totals as a table
//	toolrouter keys new --org O [--team T] [--agent A] [--name N]
//	                                      make an API key: prints {"key", "entry"} (auth.keys entry)
//	toolrouter mcp-builtin NAME [-http ADDR]
//	                                      serve a built-in MCP server over stdio (or streamable HTTP)
//
// route, inventory, search and mcp act for the operator, with every tool, unless -as names an identity
// of the orgs hierarchy. serve authenticates callers (auth) and refuses to start on a non-loopback
// address when none can authenticate, unless auth.allow_anonymous is set, and reloads its
// configuration on SIGHUP or POST /v1/admin/reload (package reload). Flags may come before or
// after the command and its query; -h prints the usage, -version the version. The exit codes are
// cli.go's: 0 routed, 1 usage or configuration error, 2 degraded or model failure, 3 no server up.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"toolrouter/access"
	"toolrouter/auth"
	"toolrouter/config"
	"toolrouter/internal/redact"
	"toolrouter/inventory"
	"toolrouter/inventory/builtin"
	"toolrouter/observe"
	"toolrouter/reload"
	"toolrouter/router"
	"toolrouter/server"
	"toolrouter/tokens"
	"toolrouter/trajectory"
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

// runWith is run with what main gives beside the arguments (o).
func runWith(ctx context.Context, args []string, stdout, stderr io.Writer, o runOptions) error {
	if len(args) > 0 && args[0] == "mcp-builtin" {
		logger := slog.New(slog.NewJSONHandler(stderr, nil))
		processLogs(logger, stderr)
		return serveBuiltin(ctx, args[1:], logger)
	}
	if len(args) > 0 && args[0] == "keys" {
		return newKey(args[1:], stdout)
	}
	var uf usageFlags
	cmd, rest, cfg, logger, as, reread, err := parse(args, stdout, stderr, &uf)
	if err != nil || cmd == cmdHelp || cmd == cmdVersion {
		return err
	}
	if cmd != "serve" && o.reload != nil {
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
	if cmd == "usage" {
		return printUsage(ctx, cfg.Usage, &uf, stdout)
	}
	// Every log line and model error loses the credentials the configuration holds or names.
	red := secrets(cfg)
	logger = slog.New(red.Handler(logger.Handler()))
	processLogs(logger, stderr)
	orgs, err := access.New(cfg.Orgs)
	if err != nil {
		return fmt.Errorf("orgs: %w", err) // config.Load validated them
	}
	// Checked first, so that a refused start opens nothing.
	anonymous := false
	if cmd == "serve" {
		if anonymous, err = auth.AnonymousAllowed(cfg.Listen, cfg.Auth); err != nil {
			return err
		}
		if anonymous && len(cfg.Orgs) > 0 && !orgs.Has(auth.Anonymous()) {
			logger.Warn("requests without a credential act for org " + access.DefaultOrg + ", which orgs does not define: they will be refused")
		}
	}
	// What run opened is closed when it returns, last first: after serving, within the end of
	// http.shutdown_timeout (closeBy); after another command, however long it takes.
	var (
		closers []func(context.Context)
		closeBy time.Time
	)
	defer func() { closeAll(closers, closeBy) }()
	inv := inventory.New(cfg.Servers, inventory.Options{Logger: logger})
	inv.Start(ctx) // returns after every server's first attempt, at most its connect_timeout
	closers = append(closers, inv.Shutdown)

	est := tokens.New()
	chat, probe, cncl, comp, err := models(cfg, est, red, logger)
	if err != nil {
		return err
	}
	traj, err := openTrajectory(cfg.Trajectory, logger)
	if err != nil {
		return err
	}
	closers = append(closers, func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_ = traj.Close(ctx)
	})
	ranker, examples, err := retrieval(cfg, logger)
	if err != nil {
		return err
	}
	closers = append(closers, func(context.Context) { _ = examples.Close() })
	var learner router.Learner
	if cfg.Retrieval.LearnExamples {
		learner = examples
	}
	applies := len(cfg.Orgs) > 0 && (cmd == "serve" || as.Depth() > 0) // the orgs' policy
	rt := router.New(chat, inv, inv, router.Settings{
		Model:            cfg.Ollama.Model,
		KeepAlive:        cfg.Ollama.KeepAlive.D(),
		Options:          cfg.Ollama.Options,
		CallTimeout:      cfg.Ollama.Timeout.D(),
		MaxResponseBytes: cfg.Ollama.MaxResponseBytes,
		SelectTimeout:    cfg.Router.SelectTimeout.D(),
		ArgumentsTimeout: cfg.Router.ArgumentsTimeout.D(),
		ExecuteTimeout:   cfg.Router.ExecuteTimeout.D(),
		RepairAttempts:   cfg.Router.RepairAttempts,
		OnModelFailure:   cfg.Router.OnModelFailure,
		Mode:             cfg.Router.Mode,
		MaxToolCalls:     cfg.Router.MaxToolCalls,
		ParallelCalls:    cfg.Router.ParallelCalls,
		Deadline:         cfg.Router.Deadline.D(),
		ContextReserve:   cfg.Router.ContextReserve,
		Recorder:         recorder(traj),
		Access:           policy(orgs, applies),
		Ranker:           ranker,
		PromptBudget:     cfg.Retrieval.PromptBudget,
		MaxSearches:      cfg.Retrieval.MaxSearches,
		SharedPrefix:     cfg.Router.SharedPrefix,
		Think:            cfg.Router.Think,
		Estimator:        est,
		Learner:          learner,
	}, logger)

	switch cmd {
	case "inventory":
		if as.Depth() > 0 {
			_, permits := orgs.Policy(as)
			return printJSON(stdout, inv.Snapshot().ExportFor(permits))
		}
		return printJSON(stdout, inv.Snapshot().Export())
	case "route":
		if err := noServerUp(inv.Snapshot()); err != nil {
			return err
		}
		out, err := rt.Route(ctx, router.Request{Query: rest[0], Identity: as})
		if errors.Is(err, router.ErrModel) {
			return &exitError{exitDegraded, err}
		}
		if err != nil {
			return err
		}
		if err := printJSON(stdout, out); err != nil {
			return err
		}
		if out.Degraded != "" {
			return &exitError{exitDegraded, fmt.Errorf("degraded: %s", out.Degraded)}
		}
		return nil
	case "search":
		offer, err := rt.Search(ctx, rest[0], as, 20)
		if err != nil {
			return err
		}
		return printJSON(stdout, offer)
	}
	// Served requests, over HTTP or MCP, are admitted by the rate limits and reported to each
	// observer, in order: the rate limits' charges first.
	watch, err := observers(ctx, cfg, inv, logger)
	if err != nil {
		return err
	}
	closers = append(closers, watch.closers...)
	lim, err := rateLimiter(cfg, watch, logger)
	if err != nil {
		return err
	}
	closers = append(closers, lim.Close)
	// Every served request's report goes to each observer, in order: the rate limits' charges
	// first.
	fanout := append(observe.Fanout{lim}, watch.Fanout...)
	if cmd == "mcp" {
		return serveMCPStdio(ctx, newMCPServer(cfg, rt, inv, cncl, policy(orgs, applies), lim, fanout, red, logger), as, os.Stdin, stdout)
	}
	rl := reload.New(ctx, cfg, reload.Options{Load: reread, Inventory: inv, Examples: examples, Logger: logger,
		NewAuth: func(ctx context.Context, c config.Config) (*auth.Authenticator, error) {
			anonymous, err := auth.AnonymousAllowed(cfg.Listen, c.Auth) // the listen address is the running one
			if err != nil {
				return nil, err
			}
			return auth.New(ctx, c.Auth, auth.Options{Anonymous: anonymous, Logger: logger})
		}})
	authn, err := rl.Auth()
	if err != nil {
		return err
	}
	if o.reload != nil {
		go rl.Watch(ctx, o.reload)
	}
	deps := server.Deps{Router: rt, Inventory: inv, Model: probe, Auth: authn, Access: orgs, Estimates: est, Reload: rl, Completer: comp,
		Observer: fanout, Metrics: watch.handler, Limiter: lim}
	if ranker != nil {
		deps.Search = rt
	}
	if cncl != nil {
		deps.Council = cncl
	}
	if traj != nil {
		deps.Trajectory = traj
	}
	// Each MCP tool call is admitted and charged as a request of the work endpoints is.
	mcpSrv := newMCPServer(cfg, rt, inv, cncl, policy(orgs, applies), lim, fanout, red, logger)
	go mcpSrv.Watch(ctx)
	deps.MCP = mcpSrv.Handler()
	if watch.usage != nil {
		deps.Usage = watch.usage
	}
	// A shutdown ends within http.shutdown_timeout: the HTTP server's drain, then closing the
	// rest in the last part (a quarter, at most a second).
	shutdown := cfg.HTTP.ShutdownTimeout.D()
	closing := min(shutdown/4, time.Second)
	opts := server.Options{
		Model: cfg.Ollama.Model, ModelHost: cfg.Ollama.Host,
		BodyLimit: cfg.HTTP.BodyLimit, MaxQueryBytes: cfg.Router.MaxQueryBytes, MaxHistory: cfg.Router.MaxHistory,
		RequestTimeout: cfg.HTTP.RequestTimeout.D(), ReadTimeout: cfg.HTTP.ReadTimeout.D(),
		WriteTimeout: cfg.HTTP.WriteTimeout.D(), Logger: logger, RequestLog: cfg.Log.Requests,
		ShutdownTimeout: shutdown - closing, MaxDeadline: cfg.Router.Deadline.D(), AllowedOrigins: cfg.HTTP.AllowedOrigins,
		Listen: cfg.Listen, AllowedHosts: cfg.HTTP.AllowedHosts, AdminReadyz: cfg.Auth.Configured(), Redactor: red,
		Models: chatModels(cfg), RouterProvider: cfg.Router.Provider, MaxEvidenceBytes: cfg.Council.MaxEvidenceBytes,
		AdminMetrics: cfg.Auth.Configured(),
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Listen, err)
	}
	logger.Info("serving", "listen", ln.Addr().String(), "model", cfg.Ollama.Model, "ollama", redact.URL(cfg.Ollama.Host),
		"api_keys", len(cfg.Auth.Keys), "jwt", cfg.Auth.JWT.Enabled(), "anonymous", anonymous, "orgs", len(cfg.Orgs),
		"rate_limits", lim.Backend())
	if o.ready != nil {
		o.ready(ln.Addr().String())
	}
	err = server.Serve(ctx, ln, deps, opts)
	closeBy = time.Now().Add(closing)
	if err != nil {
		return fmt.Errorf("serving on %s: %w", cfg.Listen, err)
	}
	return nil
}

// closeAll runs closers, last first, and returns when they have all returned or at by (when it is
// not zero), whichever comes first: on a shutdown, an MCP server or a disk that does not stop in
// time does not keep the process.
func closeAll(closers []func(context.Context), by time.Time) {
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if !by.IsZero() {
		ctx, cancel = context.WithDeadline(ctx, by)
	}
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i](ctx)
		}
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// The commands parse answers itself.
const (
	cmdHelp    = "-help"
	cmdVersion = "-version"
)

// parse reads the command line: flags may come before or after the command and after its query.
// -h and -version print to stdout and return cmdHelp or cmdVersion, loading nothing. The log goes
// to stderr. reread loads the configuration again as it was loaded now (file, environment, flags).
func parse(args []string, stdout, stderr io.Writer, uf *usageFlags) (cmd string, rest []string, cfg config.Config, logger *slog.Logger, as access.Identity, reread func() (config.Config, error), err error) {
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
	asFlag := fs.String("as", "", "route, search, list the inventory or serve mcp as this org[/team[/agent]] of orgs (default: the operator, every tool)")
	showVersion := fs.Bool("version", false, "print the version and the revision built from, and exit")
	uf.register(fs)
	// Flags and positional arguments interleave: parse flags up to the next positional, take it,
	// and go on. Everything after "--" is positional.
	var pos []string
	for {
		if err = fs.Parse(args); errors.Is(err, flag.ErrHelp) {
			usage(stdout, fs)
			return cmdHelp, nil, cfg, nil, as, nil, nil
		}
		if err != nil {
			err = fmt.Errorf("%w (toolrouter -h lists the flags)", err)
			return
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
		return cmdVersion, nil, cfg, nil, as, nil, nil
	}
	cmd, rest = "serve", pos
	if len(rest) > 0 {
		cmd, rest = rest[0], rest[1:]
	}
	// The arguments are checked before anything is loaded or connected.
	switch {
	case cmd != "serve" && cmd != "route" && cmd != "inventory" && cmd != "search" && cmd != "mcp" && cmd != "usage":
		err = fmt.Errorf("unknown command %q: want serve, route, search, inventory, mcp, usage or mcp-builtin", cmd)
		return
	case cmd != "usage" && uf.set():
		err = errors.New("-since, -until and -by apply to usage")
		return
	case (cmd == "route" || cmd == "search") && len(rest) != 1:
		err = fmt.Errorf(`usage: toolrouter [flags] %s "QUERY" (one argument; got %d)`, cmd, len(rest))
		return
	case (cmd == "serve" || cmd == "inventory" || cmd == "mcp" || cmd == "usage") && len(rest) > 0:
		err = fmt.Errorf("usage: toolrouter [flags] %s (no arguments; got %q)", cmd, rest)
		return
	}
	var lvl slog.Level
	if err = lvl.UnmarshalText([]byte(*level)); err != nil {
		err = fmt.Errorf("-log-level: %w", err)
		return
	}
	if *asFlag != "" {
		if cmd == "serve" {
			err = errors.New("-as applies to route, search, inventory and mcp; serve takes each request's identity from its credential")
			return
		}
		if as, err = access.ParseIdentity(*asFlag); err != nil {
			err = fmt.Errorf("-as: %w", err)
			return
		}
	}
	logger = slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: lvl}))
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
	reread = func() (config.Config, error) { return config.Load(file, flags, mcpConfigs...) }
	if cfg, err = reread(); err != nil {
		return
	}
	if as.Depth() > 0 && !cfg.Orgs.Has(as) {
		err = fmt.Errorf("-as: %s is not in orgs", as)
	}
	return
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// newKey runs "keys new": it prints one JSON object, the new key (shown this once) and the
// auth.keys entry that accepts it, which holds only the key's SHA-256.
func newKey(args []string, stdout io.Writer) error {
	const usage = "usage: toolrouter keys new --org ORG [--team TEAM] [--agent AGENT] [--name NAME]"
	if len(args) == 0 || args[0] != "new" {
		return errors.New(usage)
	}
	fs := flag.NewFlagSet("keys new", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the error says it all
	org := fs.String("org", "", "the org the key identifies")
	team := fs.String("team", "", "a team of the org")
	agent := fs.String("agent", "", "an agent of the team")
	name := fs.String("name", "", "the key's name in logs (default: org-team-agent)")
	if err := fs.Parse(args[1:]); err != nil {
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
func serveBuiltin(ctx context.Context, args []string, logger *slog.Logger) error {
	fs := flag.NewFlagSet("mcp-builtin", flag.ContinueOnError)
	addr := fs.String("http", "", "serve streamable HTTP on this address instead of stdio")
	if len(args) == 0 {
		return fmt.Errorf("usage: toolrouter mcp-builtin NAME [-http ADDR]; NAME is one of %v", builtin.Names())
	}
	name := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
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

// openTrajectory opens the trajectory log when one is configured; a nil writer records nothing.
func openTrajectory(c config.Trajectory, logger *slog.Logger) (*trajectory.Writer, error) {
	if c.Path == "" {
		return nil, nil
	}
	w, err := trajectory.Open(trajectory.Options{Path: c.Path, MaxBytes: c.MaxBytes, MaxFiles: c.MaxFiles, QueueSize: c.QueueSize, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("opening trajectory log: %w", err)
	}
	return w, nil
}

// policy is the router's access policy: the hierarchy when it has orgs and applies (serving, or
// a command run -as an identity); nil, every tool, otherwise.
func policy(orgs *access.Hierarchy, applies bool) router.Access {
	if !applies {
		return nil
	}
	return orgs
}

// recorder keeps a nil writer from becoming a non-nil interface.
func recorder(w *trajectory.Writer) router.Recorder {
	if w == nil {
		return nil
	}
	return w
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
