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
// route, inventory and search act for the operator, with every tool, and mcp for org default, as a
// request without a credential does, unless -as names an identity of the orgs hierarchy. serve authenticates callers (auth) and refuses to start on a non-loopback
// address when none can authenticate, unless auth.allow_anonymous is set, and reloads its
// configuration on SIGHUP or POST /v1/admin/reload (package reload). Flags may come before or
// after the command and its query; -h prints the usage, -version the version. The exit codes are
// cli.go's: 0 routed, 1 usage or configuration error, 2 degraded or model failure, 3 no server up.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"toolrouter/access"
	"toolrouter/auth"
	"toolrouter/config"
	"toolrouter/inventory"
	"toolrouter/observe"
	"toolrouter/redact"
	"toolrouter/reload"
	"toolrouter/router"
	"toolrouter/server"
	"toolrouter/tokens"
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
	if cmd == "mcp" && as.Depth() == 0 {
		// The MCP server over stdio, like every door without a credential, acts for org default.
		as = auth.Anonymous()
		if len(cfg.Orgs) > 0 && !orgs.Has(as) {
			logger.Warn("toolrouter mcp acts for org " + access.DefaultOrg + ", which orgs does not define: its calls will be refused; name an identity with -as")
		}
	}
	applies := len(cfg.Orgs) > 0 && (cmd == "serve" || as.Depth() > 0) // the orgs' policy
	rt := newRouter(cfg, chat, inv, traj, policy(orgs, applies), ranker, est, learner, logger)

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
	watch, err := observers(ctx, cfg, inv, orgs, logger)
	if err != nil {
		return err
	}
	closers = append(closers, watch.closers...)
	lim, err := rateLimiter(cfg, watch, logger)
	if err != nil {
		return err
	}
	closers = append(closers, lim.Close)
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
	opts := serverOptions(cfg, red, logger, shutdown-closing)
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
