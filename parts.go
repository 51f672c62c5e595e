package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"toolrouter/access"
	"toolrouter/approval"
	"toolrouter/auth"
	"toolrouter/config"
	"toolrouter/console"
	"toolrouter/inventory"
	"toolrouter/limits"
	"toolrouter/notify"
	"toolrouter/observe"
	"toolrouter/redact"
	"toolrouter/reload"
	"toolrouter/retrieve"
	"toolrouter/router"
	"toolrouter/server"
	"toolrouter/tokens"
	"toolrouter/trajectory"
	records "toolrouter/usage"
)

// parts are what a command runs on, built by open and observe; closers close them.
type parts struct {
	invocation
	red       *redact.Redactor
	orgs      *access.Hierarchy
	anonymous bool // serve: requests without a credential are served
	inv       *inventory.Manager
	est       *tokens.Estimator
	models    modelParts
	traj      *trajectory.Writer
	ranker    router.Ranker
	examples  *retrieve.Examples
	acl       router.Access  // the orgs' policy, when it applies
	usage     *records.Store // the usage database, when usage records are on and a part keeps something in it
	store     *records.Store // tool pins and held calls: usage, when the safety checks keep them
	rt        *router.Router
	notices   *notify.Notifier                     // the approval webhooks', when one is configured
	notify    func(key string, held approval.Call) // sends a held call's notice, with notices
	// Built by observe, for the commands that serve requests.
	watch  *watchers
	lim    *limits.Limiter
	fanout observe.Fanout
	recent *console.Recent // the console's recent requests, with ui.enabled

	closers []func(context.Context)
	closeBy time.Time
}

// open builds the parts every command shares: the log without credentials, the orgs, the
// inventory, the models, the trajectory, retrieval and the router. A refused start (serve on a
// non-loopback address nobody can authenticate to) opens nothing.
func (p *parts) open(ctx context.Context, stderr io.Writer) error {
	cfg := p.cfg
	// Every log line and model error loses the credentials the configuration holds or names.
	p.red = secrets(cfg)
	p.logger = slog.New(p.red.Handler(p.logger.Handler()))
	processLogs(p.logger, stderr)
	var err error
	if p.orgs, err = access.New(cfg.Orgs); err != nil {
		return fmt.Errorf("orgs: %w", err) // config.Load validated them
	}
	if p.cmd == "serve" {
		if p.anonymous, err = auth.AnonymousAllowed(cfg.Listen, cfg.Auth); err != nil {
			return err
		}
		if p.anonymous && len(cfg.Orgs) > 0 && !p.orgs.Has(auth.Anonymous()) {
			p.logger.Warn("requests without a credential act for org " + access.DefaultOrg + ", which orgs does not define: they will be refused")
		}
	}
	if (p.cmd == "mcp" || p.cmd == "approve") && p.as.Depth() == 0 {
		// The MCP server over stdio, like every door without a credential, acts for org default,
		// and so does approve, for the calls it held.
		p.as = auth.Anonymous()
		if p.cmd == "mcp" && len(cfg.Orgs) > 0 && !p.orgs.Has(p.as) {
			p.logger.Warn("toolrouter mcp acts for org " + access.DefaultOrg + ", which orgs does not define: it is offered no tool; name an identity with -as")
		}
	}
	// The usage database is opened once, for the safety checks and the usage records alike, and
	// closed last (closers run last first): after the inventory's shutdown and the recorder's.
	if p.usage, err = openUsageStore(ctx, cfg, p.cmd == "serve" || p.cmd == "mcp"); err != nil {
		return err
	}
	if p.usage != nil {
		p.closers = append(p.closers, func(context.Context) {
			if err := p.usage.Close(); err != nil {
				p.logger.Warn("closing the usage database", "err", err)
			}
		})
	}
	p.store = safetyStore(cfg, p.usage, p.logger)
	p.inv = inventory.New(cfg.Servers, inventoryOptions(cfg, p.store, p.logger))
	p.inv.Start(ctx) // returns after every server's first attempt, at most its connect_timeout
	p.closers = append(p.closers, p.inv.Shutdown)
	p.est = tokens.New()
	if p.models, err = models(cfg, p.est, p.red, p.logger); err != nil {
		return err
	}
	if p.traj, err = openTrajectory(cfg.Trajectory, p.logger); err != nil {
		return err
	}
	p.closers = append(p.closers, func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_ = p.traj.Close(ctx)
	})
	if p.ranker, p.examples, err = retrieval(cfg, p.logger); err != nil {
		return err
	}
	p.closers = append(p.closers, func(context.Context) { _ = p.examples.Close() })
	if err := p.generate(ctx); err != nil {
		return err
	}
	p.acl = policy(p.orgs, len(cfg.Orgs) > 0 && (p.cmd == "serve" || p.as.Depth() > 0))
	if p.notices, p.notify, err = approvalNotices(cfg, p.orgs, p.logger); err != nil {
		return err
	}
	if p.notices != nil {
		p.closers = append(p.closers, func(ctx context.Context) { _ = p.notices.Close(ctx) })
	}
	p.rt = newRouter(p)
	if p.ranker != nil {
		// A pinned set larger than the prompt budget is refused at start, naming both sizes.
		if err := p.rt.CheckPinned(); err != nil {
			return err
		}
	}
	return nil
}

// generate starts the background writing of example queries (retrieval.generate_examples) for
// the commands that serve requests.
func (p *parts) generate(ctx context.Context) error {
	r := p.cfg.Retrieval
	if !r.Enabled || r.GenerateExamples == 0 || (p.cmd != "serve" && p.cmd != "mcp") {
		return nil
	}
	g, err := retrieve.NewGenerator(p.models.router, p.examples, retrieve.GenerateOptions{
		Model: p.cfg.Ollama.Model, PerTool: r.GenerateExamples, PerMinute: r.GeneratePerMinute, Max: r.GenerateMax,
		Path: p.cfg.GeneratedPath(), CallTimeout: p.cfg.Ollama.Timeout.D(), Options: p.cfg.Ollama.Options, Logger: p.logger})
	if err != nil {
		return fmt.Errorf("retrieval.generate_examples: %w", err)
	}
	go g.Run(ctx, p.inv)
	p.closers = append(p.closers, func(context.Context) { _ = g.Close() })
	return nil
}

// local runs the commands that answer once on stdout: inventory, route and search.
func (p *parts) local(ctx context.Context, stdout io.Writer) error {
	switch p.cmd {
	case "inventory":
		if p.as.Depth() > 0 {
			_, permits := p.orgs.Policy(p.as)
			return printJSON(stdout, p.inv.Snapshot().ExportFor(permits))
		}
		return printJSON(stdout, p.inv.Snapshot().Export())
	case "search":
		offer, err := p.rt.Search(ctx, p.rest[0], p.as, 20)
		if err != nil {
			return err
		}
		return printJSON(stdout, offer)
	}
	if err := noServerUp(p.inv.Snapshot()); err != nil {
		return err
	}
	out, err := p.rt.Route(ctx, router.Request{Query: p.rest[0], Identity: p.as})
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
}

// observe builds what watches served requests, over HTTP or MCP: the rate limits and the
// observers, told of each request in order, the rate limits' charges first.
func (p *parts) observe(ctx context.Context) error {
	var err error
	if p.watch, err = observers(ctx, p.cfg, p.usage, p.inv, p.orgs, p.notices, p.logger); err != nil {
		return err
	}
	p.closers = append(p.closers, p.watch.closers...)
	if p.lim, err = rateLimiter(p.cfg, p.watch, p.logger); err != nil {
		return err
	}
	p.closers = append(p.closers, p.lim.Close)
	p.fanout = append(observe.Fanout{p.lim}, p.watch.Fanout...)
	if p.cmd == "serve" && p.cfg.UI.Enabled {
		p.recent = console.NewRecent(p.cfg.UI.RecentRequests, p.cfg.UI.RecentRequestsBytes)
		p.fanout = append(p.fanout, p.recent)
	}
	return nil
}

// serve serves the HTTP API until ctx ends, reloading the configuration on o.reload's signals.
func (p *parts) serve(ctx context.Context, o runOptions) error {
	cfg, logger := p.cfg, p.logger
	rl := reload.New(ctx, cfg, reload.Options{Load: p.reread, Inventory: p.inv, Examples: p.examples, Logger: logger,
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
	m := p.models
	deps := server.Deps{Router: p.rt, Inventory: p.inv, Model: m.probe, Auth: authn, Access: p.orgs, Estimates: p.est, Reload: rl,
		Completer: m.completer, Observer: p.fanout, Metrics: p.watch.handler, Limiter: p.lim}
	deps.Approver, deps.Calls, deps.Queue = p.inv, p.rt, p.rt
	if p.ranker != nil {
		deps.Search = p.rt
	}
	if m.council != nil {
		deps.Council = m.council
	}
	if p.traj != nil {
		deps.Trajectory = p.traj
	}
	// Each MCP tool call is admitted and charged as a request of the work endpoints is.
	mcpSrv := p.mcpServer()
	go mcpSrv.Watch(ctx)
	deps.MCP = mcpSrv.Handler()
	if p.watch.usage != nil {
		deps.Usage = p.watch.usage
	}
	if cfg.UI.Enabled {
		if deps.Console, err = consoleParts(cfg.Usage, p.recent); err != nil {
			return err
		}
	}
	// A shutdown ends within http.shutdown_timeout: the HTTP server's drain, then closing the
	// rest in the last part (a quarter, at most a second).
	shutdown := cfg.HTTP.ShutdownTimeout.D()
	closing := min(shutdown/4, time.Second)
	opts := serverOptions(cfg, p.red, logger, shutdown-closing)
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Listen, err)
	}
	logger.Info("serving", "listen", ln.Addr().String(), "model", cfg.Ollama.Model, "ollama", redact.URL(cfg.Ollama.Host),
		"api_keys", len(cfg.Auth.Keys), "jwt", cfg.Auth.JWT.Enabled(), "anonymous", p.anonymous, "orgs", len(cfg.Orgs),
		"rate_limits", p.lim.Backend())
	if o.ready != nil {
		o.ready(ln.Addr().String())
	}
	err = server.Serve(ctx, ln, deps, opts)
	p.closeBy = time.Now().Add(closing)
	if err != nil {
		return fmt.Errorf("serving on %s: %w", cfg.Listen, err)
	}
	return nil
}
