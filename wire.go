package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ollama/ollama/api"
	"go.opentelemetry.io/otel"

	"toolrouter/access"
	"toolrouter/answer"
	"toolrouter/approval"
	"toolrouter/config"
	"toolrouter/console"
	"toolrouter/council"
	"toolrouter/inventory"
	"toolrouter/limits"
	"toolrouter/mcpserver"
	"toolrouter/metrics"
	"toolrouter/notify"
	"toolrouter/observe"
	"toolrouter/provider"
	"toolrouter/redact"
	"toolrouter/reload"
	"toolrouter/retrieve"
	"toolrouter/router"
	"toolrouter/server"
	"toolrouter/telemetry"
	"toolrouter/tokens"
	"toolrouter/trajectory"
	records "toolrouter/usage"
)

// models builds one client per configured provider, then the router's model, the readiness probe,
// the council (nil when none is configured) and the chat completions' completer. Every client's errors go through red: a model
// server's URL may carry a credential, and errors quote URLs.
// modelParts are the model clients the parts use: the router's model, the readiness probe, the
// council (nil when none is configured) and the chat completions' completer.
type modelParts struct {
	router    router.Chatter
	renders   bool // the router's provider is Ollama, which renders templates (router.Settings.Renders)
	probe     server.ModelProbe
	council   *council.Council
	completer *answer.ProviderCompleter
}

func models(cfg config.Config, est *tokens.Estimator, red *redact.Redactor, logger *slog.Logger) (modelParts, error) {
	hc := &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}}
	clients := map[string]provider.Chatter{}
	providers := map[string]answer.Provider{}
	limit := provider.WithMaxResponseBytes(cfg.Ollama.MaxResponseBytes)
	var probe server.ModelProbe
	renders := false
	for name := range cfg.Providers {
		p, _ := cfg.Provider(name)
		switch p.Type {
		case config.ProviderOllama:
			u, err := url.Parse(p.BaseURL)
			if err != nil {
				return modelParts{}, fmt.Errorf("providers.%s.base_url: %w", name, err)
			}
			o := provider.NewOllama(u, hc, limit)
			clients[name] = redactedOllama{redactedChat{o, red}, o}
			providers[name] = answer.Provider{Client: clients[name], Show: redactedShow{api.NewClient(u, hc), red}, Ollama: true}
			if name == cfg.Router.Provider {
				probe, renders = ollamaProbe{redactedProbe{o, red}, api.NewClient(u, hc), red}, true
			}
		case config.ProviderOpenAI:
			clients[name] = redactedChat{provider.NewOpenAI(p.BaseURL, os.Getenv(p.APIKeyEnv), hc, limit), red}
			providers[name] = answer.Provider{Client: clients[name]}
		}
	}
	if probe == nil {
		probe = unprobed{provider: cfg.Router.Provider, model: cfg.Ollama.Model}
	}
	comp := answer.NewCompleter(answer.CompleterOptions{Providers: providers, Fallback: cfg.Router.Provider,
		NumCtx: router.NumCtx(cfg.Ollama.Options), KeepAlive: cfg.Ollama.KeepAlive.D(), MaxResponseBytes: cfg.Ollama.MaxResponseBytes,
		// router.prefill applies to the Ollama providers; unset, it is on for them.
		Prefill: cfg.Router.Prefill == nil || *cfg.Router.Prefill})
	out := modelParts{router: clients[cfg.Router.Provider], renders: renders, probe: probe, completer: comp}
	if !cfg.Council.Enabled() {
		return out, nil
	}
	member := func(m config.Member) council.Member {
		cm := provider.ChatModel{Client: clients[m.Provider], Model: m.Model, Options: m.Options,
			MaxResponseBytes: cfg.Ollama.MaxResponseBytes}
		if p, _ := cfg.Provider(m.Provider); p.Type == config.ProviderOllama {
			// An Ollama member is always sent num_ctx (its own, else the router's) and never a
			// prompt over it.
			cm.Options = maps.Clone(m.Options)
			if cm.Options == nil {
				cm.Options = map[string]any{}
			}
			n := router.NumCtx(cm.Options)
			if n <= 0 {
				n = router.NumCtx(cfg.Ollama.Options)
				cm.Options["num_ctx"] = n
			}
			cm.Window, cm.Estimator = max(n-cfg.Router.ContextReserve, 256), est
		}
		return council.Member{
			Name: m.Name, ModelID: m.Model, Timeout: m.Timeout.D(), Model: cm,
			Price: council.Price{PromptPerMTok: m.PricePromptPerMTok, CompletionPerMTok: m.PriceCompletionPerMTok},
		}
	}
	members := make([]council.Member, 0, len(cfg.Council.Members))
	for _, m := range cfg.Council.Members {
		members = append(members, member(m))
	}
	out.council = council.New(members, member(cfg.Council.Chairman), council.Options{
		PeerReview: cfg.Council.PeerReview, Quorum: cfg.Council.Quorum,
		StageTimeout: cfg.Council.StageTimeout.D(), MaxEvidenceBytes: cfg.Council.MaxEvidenceBytes, Logger: logger,
	})
	return out, nil
}

// redactedChat masks credentials in a model client's errors.
type redactedChat struct {
	provider.Chatter
	r *redact.Redactor
}

func (c redactedChat) Chat(ctx context.Context, req *api.ChatRequest, fn api.ChatResponseFunc) error {
	return c.r.Error(c.Chatter.Chat(ctx, req, fn))
}

// redactedOllama is an Ollama client's redactedChat that also tells a model's trained context
// length (router.ContextLengther), so that the router caps num_ctx at it.
type redactedOllama struct {
	redactedChat
	o *provider.Ollama
}

var _ router.ContextLengther = redactedOllama{}

func (c redactedOllama) ContextLength(ctx context.Context, model string) (int, error) {
	n, err := c.o.ContextLength(ctx, model)
	return n, c.r.Error(err)
}

// redactedShow masks credentials in the chat completions' model check's errors.
type redactedShow struct {
	answer.ModelShower
	r *redact.Redactor
}

func (s redactedShow) Show(ctx context.Context, req *api.ShowRequest) (*api.ShowResponse, error) {
	resp, err := s.ModelShower.Show(ctx, req)
	return resp, s.r.Error(err)
}

// redactedProbe masks credentials in the readiness probe's errors.
type redactedProbe struct {
	server.ModelProbe
	r *redact.Redactor
}

func (p redactedProbe) List(ctx context.Context) (*api.ListResponse, error) {
	l, err := p.ModelProbe.List(ctx)
	return l, p.r.Error(err)
}

// ollamaProbe is the router's Ollama server as the API asks about it: its models (readiness,
// /v1/models, /api/tags), one model's details (/api/show) and its loaded models (/api/ps), with
// credentials masked in the errors.
type ollamaProbe struct {
	redactedProbe
	c *api.Client
	r *redact.Redactor
}

func (p ollamaProbe) Show(ctx context.Context, req *api.ShowRequest) (*api.ShowResponse, error) {
	resp, err := p.c.Show(ctx, req)
	return resp, p.r.Error(err)
}

func (p ollamaProbe) ListRunning(ctx context.Context) (*api.ProcessResponse, error) {
	resp, err := p.c.ListRunning(ctx)
	return resp, p.r.Error(err)
}

// secrets is the Redactor of every credential the configuration holds or names: the MCP servers'
// (URL user and password and secret query values, the values of credential headers and
// environment variables and of those servers.NAME.secrets names), those in the URLs of the model
// servers, the JWKS and Redis, the providers' API keys and the API keys that auth.keys read from
// the environment. It masks any URL's credentials too.
func secrets(cfg config.Config) *redact.Redactor {
	var s []string
	for _, sc := range cfg.Servers {
		s = append(s, redact.ServerSecrets(sc.URL, sc.Headers, sc.Env, sc.Secrets...)...)
	}
	for _, u := range []string{cfg.Ollama.Host, cfg.Auth.JWT.JWKSURL, cfg.Limits.RedisURL} {
		s = append(s, redact.ServerSecrets(u, nil, nil)...)
	}
	for _, p := range cfg.Providers {
		s = append(s, redact.ServerSecrets(p.BaseURL, nil, nil)...)
		if p.APIKeyEnv != "" {
			s = append(s, os.Getenv(p.APIKeyEnv))
		}
	}
	for _, k := range cfg.Auth.Keys {
		if k.Env != "" {
			s = append(s, os.Getenv(k.Env))
		}
	}
	// Approval webhooks: the signing secrets, and the URLs whole, since chat services put the
	// webhook's secret in its path (an error posting to one names the URL).
	hooks := []access.Webhook{cfg.Safety.ApprovalWebhook}
	for _, o := range cfg.Orgs {
		hooks = append(hooks, o.ApprovalWebhook)
	}
	for _, h := range hooks {
		if h.URL != "" {
			s = append(s, h.URL, os.Getenv(h.SecretEnv))
			s = append(s, redact.ServerSecrets(h.URL, nil, nil)...)
		}
	}
	return redact.New(s...)
}

// unprobed stands in for the readiness probe of a router model behind an OpenAI-compatible
// endpoint, which has no portable "is this model loaded" call: it reports the model present.
type unprobed struct{ provider, model string }

func (u unprobed) List(context.Context) (*api.ListResponse, error) {
	return &api.ListResponse{Models: []api.ListModelResponse{{Name: u.model, Model: u.model}}}, nil
}

// retrieval builds the shortlist's ranker (nil when retrieval is off) and the examples store:
// configured examples, and learned ones kept on disk when learning is on. The caller closes the
// store.
func retrieval(cfg config.Config, logger *slog.Logger) (router.Ranker, *retrieve.Examples, error) {
	r := cfg.Retrieval
	path := ""
	if r.LearnExamples {
		path = cfg.ExamplesPath()
	}
	ex, err := retrieve.OpenExamples(path, r.ExamplesPerTool)
	if err != nil {
		return nil, nil, fmt.Errorf("retrieval.examples_file: %w", err)
	}
	ex.SetConfigured(reload.ConfiguredExamples(cfg.Servers))
	if !r.Enabled {
		return nil, ex, nil
	}
	var emb retrieve.Embedder
	opts := retrieve.DenseOptions{Model: r.EmbedModel, CachePath: r.VectorCache}
	if r.EmbedModel != "" {
		u, err := url.Parse(cfg.Ollama.Host)
		if err != nil {
			return nil, nil, fmt.Errorf("ollama.host: %w", err)
		}
		emb = retrieve.NewOllamaEmbedder(u, nil, retrieve.EmbedderOptions{})
		if opts.CachePath == "" && cfg.ExamplesPath() != "" {
			opts.CachePath = filepath.Join(filepath.Dir(cfg.ExamplesPath()), "vectors.jsonl")
		}
	}
	ret, err := retrieve.NewRetriever(retrieve.NewIndexWith(matching(r.Match)), emb, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("retrieval: %w", err)
	}
	return retrieve.NewCatalog(ret, ex, logger), ex, nil
}

// matching is retrieval.match as the index takes it.
func matching(m config.Match) retrieve.Matching {
	return retrieve.Matching{
		Loose: m.Loose, NoAbbrev: !m.Abbreviations, NoDate: !m.Dates,
		NoDerivation: !m.Derivations, NoBigrams: !m.Bigrams, NoRelated: !m.Related,
		NoValues: !m.Values,
	}
}

// watchers are the observers of served requests and what else they serve.
type watchers struct {
	observe.Fanout
	// metrics is nil when metrics.enabled is false; handler serves GET /metrics (nil then too).
	metrics *metrics.Metrics
	handler http.Handler
	// usage is the usage records' recorder, nil when usage is off.
	usage *records.Recorder
	// closers close the metrics listener and flush the usage records and the traces; the caller
	// runs them on shutdown.
	closers []func(context.Context)
}

// rateLimited counts a refused request in the metrics, when they are on.
func (w *watchers) rateLimited(level, limit string) {
	if w.metrics != nil {
		w.metrics.RateLimited(level, limit)
	}
}

// heldCall counts a held call's outcome in the metrics, when they are on.
func (w *watchers) heldCall(outcome string) {
	if w.metrics != nil {
		w.metrics.HeldCall(outcome)
	}
}

// heldCall counts a held call's outcome, once the observers are built (the router is built
// before them), and marks it in the console's recent requests.
func (p *parts) heldCall(d approval.Decision, key string, held approval.Call) {
	if d == router.OutcomeHeld && p.notify != nil {
		p.notify(key, held)
	}
	if p.watch != nil {
		p.watch.heldCall(string(d))
	}
	if p.recent != nil && d != router.OutcomeHeld {
		p.recent.Decided(held.RequestID, held.Step, string(d))
	}
}

// redisUp sets the rate limits' Redis gauge, when metrics are on.
func (w *watchers) redisUp(up bool) {
	if w.metrics != nil {
		w.metrics.RedisUp(up)
	}
}

// observers builds the observers of served requests: the metrics, unless metrics.enabled is
// false (with a listener of their own when metrics.listen is set), the usage records in usage,
// the usage database, unless it is nil (recording only the identities orgs defines), and the
// traces, when the OTEL_* environment turns them on.
func observers(ctx context.Context, cfg config.Config, usage *records.Store, inv metrics.Inventory, orgs *access.Hierarchy,
	notices *notify.Notifier, logger *slog.Logger) (*watchers, error) {
	var (
		obs     observe.Fanout
		handler http.Handler
		closers []func(context.Context)
		met     *metrics.Metrics
	)
	if cfg.Metrics.Enabled {
		// The models as the router and the council name them, and as a chat completion does
		// ("provider/model" beyond the router's provider).
		models := []string{cfg.Ollama.Model, cfg.Council.Chairman.Model}
		for _, m := range cfg.Council.Members {
			models = append(models, m.Model)
		}
		for _, m := range chatModels(cfg) {
			models = append(models, m.ID)
		}
		mo := metrics.Options{Inventory: inv, Models: models}
		if notices != nil {
			mo.Notices = notices
		}
		met = metrics.New(mo)
		obs, handler = append(obs, met), met.Handler()
		if cfg.Metrics.Listen != "" {
			stop, addr, err := serveMetrics(cfg.Metrics.Listen, handler)
			if err != nil {
				return nil, err
			}
			closers = append(closers, stop)
			logger.Info("serving metrics", "listen", addr)
		}
	}
	// Usage records; a record dropped and a database file lost are counted in the metrics, when
	// they are on.
	var onDrop, onFileLost func()
	if met != nil {
		onDrop, onFileLost = met.UsageDropped, met.UsageFileLost
	}
	rec := usageRecorder(usage, cfg.Usage, logger, onDrop, onFileLost, orgs.Has)
	if rec != nil {
		obs = append(obs, rec)
		closers = append(closers, func(ctx context.Context) {
			if err := rec.Close(ctx); err != nil {
				logger.Warn("closing usage records", "err", err)
			}
		})
	}
	systems := map[string]string{}
	for _, m := range append([]config.Member{cfg.Council.Chairman, {Provider: cfg.Router.Provider, Model: cfg.Ollama.Model}}, cfg.Council.Members...) {
		if p, ok := cfg.Provider(m.Provider); ok && m.Model != "" {
			systems[m.Model] = string(p.Type)
		}
	}
	for _, m := range chatModels(cfg) {
		if p, ok := cfg.Provider(m.OwnedBy); ok {
			systems[m.ID] = string(p.Type)
		}
	}
	tracer, err := telemetry.FromEnv(ctx, telemetry.Options{Systems: systems})
	if err != nil {
		for _, c := range closers {
			c(ctx)
		}
		return nil, err
	}
	if tracer != nil {
		// The SDK reports export failures only through its global error handler.
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { logger.Warn("exporting traces", "error", err) }))
		obs = append(obs, tracer)
		closers = append(closers, func(ctx context.Context) {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if err := tracer.Shutdown(ctx); err != nil {
				logger.Warn("flushing traces", "error", err)
			}
		})
		logger.Info("exporting traces", "service", cmp.Or(os.Getenv("OTEL_SERVICE_NAME"), telemetry.DefaultServiceName))
	}
	return &watchers{Fanout: obs, metrics: met, handler: handler, usage: rec, closers: closers}, nil
}

// serveMetrics serves h at /metrics, and nothing else, on a plain listener of its own at addr,
// without authentication. It returns the address it listens on and stop, which shuts the
// listener down within ctx's deadline, then closes what is left.
func serveMetrics(addr string, h http.Handler) (stop func(context.Context), bound string, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("metrics.listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln) // http.ErrServerClosed once stopped
	}()
	return func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			_ = srv.Close()
		}
		<-done
	}, ln.Addr().String(), nil
}

// rateLimiter builds the rate limits of orgs and limits.anonymous, counted in process or in Redis
// (limits.redis_url). A concurrent slot held in Redis lasts at most a whole request.
func rateLimiter(cfg config.Config, w *watchers, logger *slog.Logger) (*limits.Limiter, error) {
	l := cfg.Limits
	return limits.New(limits.Options{Orgs: cfg.Orgs, Anonymous: l.Anonymous, RedisURL: l.RedisURL,
		OnRedisDown: l.OnRedisDown, Replicas: l.Replicas, RedisTimeout: l.RedisTimeout.D(),
		LeaseTTL: cfg.HTTP.RequestTimeout.D(), Logger: logger, OnReject: w.rateLimited, OnBackend: w.redisUp})
}

// mcpServer builds toolrouter's MCP server (mcpserver) over the router, the inventory and the
// council, with the router's access policy; each tool call is admitted by the rate limits and
// reported to the observers.
func (p *parts) mcpServer() *mcpserver.Server {
	cfg := p.cfg
	d := mcpserver.Deps{Router: p.rt, Inventory: p.inv, Access: p.acl, Limiter: p.lim, Observer: p.fanout}
	if p.models.council != nil {
		d.Council = p.models.council
	}
	return mcpserver.New(d, mcpserver.Options{
		ExposeInventory: cfg.MCPServer.ExposeInventory,
		MaxQueryBytes:   cfg.Router.MaxQueryBytes, MaxHistory: cfg.Router.MaxHistory, MaxDeadline: cfg.Router.Deadline.D(),
		Redactor: p.red, Logger: p.logger, Version: moduleVersion(),
		SessionIdleTTL: cfg.MCPServer.SessionIdleTTL.D(), MaxSessions: cfg.MCPServer.MaxSessions,
		MaxSessionsPerIdentity: cfg.MCPServer.MaxSessionsPerIdentity,
	})
}

// serveMCPStdio runs `toolrouter mcp`: the MCP server on stdin and stdout for the operator, or the
// identity of -as, until stdin closes or ctx ends. The log goes to stderr: stdout is the protocol.
func serveMCPStdio(ctx context.Context, srv *mcpserver.Server, as access.Identity, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go srv.Watch(ctx)
	return srv.ServeStdio(ctx, as, in, out)
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

// learner is where the router learns example queries: the examples, with
// retrieval.learn_examples; nil otherwise.
func (p *parts) learner() router.Learner {
	if p.cfg.Retrieval.LearnExamples {
		return p.examples
	}
	return nil
}

// newRouter builds the router over the parts' model, inventory, trajectory, policy, retrieval and
// estimator, with the configuration's router, model and retrieval settings.
func newRouter(p *parts) *router.Router {
	cfg := p.cfg
	return router.New(p.models.router, p.inv, p.inv, router.Settings{
		Model:            cfg.Ollama.Model,
		KeepAlive:        cfg.Ollama.KeepAlive.D(),
		Options:          cfg.Ollama.Options,
		CallTimeout:      cfg.Ollama.Timeout.D(),
		MaxResponseBytes: cfg.Ollama.MaxResponseBytes,
		SelectTimeout:    cfg.Router.SelectTimeout.D(),
		ArgumentsTimeout: cfg.Router.ArgumentsTimeout.D(),
		ExecuteTimeout:   cfg.Router.ExecuteTimeout.D(),
		MaxResultBytes:   cfg.Router.MaxResultBytes,
		RepairAttempts:   cfg.Router.RepairAttempts,
		OnModelFailure:   cfg.Router.OnModelFailure,
		Mode:             cfg.Router.Mode,
		Reasoning:        cfg.Router.Reasoning,
		MinConfidence:    cfg.Router.MinConfidence,
		MaxToolCalls:     cfg.Router.MaxToolCalls,
		ParallelCalls:    cfg.Router.ParallelCalls,
		Deadline:         cfg.Router.Deadline.D(),
		ContextReserve:   cfg.Router.ContextReserve,
		Recorder:         recorder(p.traj),
		Access:           p.acl,
		Ranker:           p.ranker,
		PromptBudget:     cfg.Retrieval.PromptBudget,
		Pinned:           cfg.Retrieval.Pinned,
		MaxSearches:      cfg.Retrieval.MaxSearches,
		SearchWhenWeak:   cfg.Retrieval.SearchWhenWeak,
		SharedPrefix:     cfg.Router.SharedPrefix,
		Prefill:          cfg.PrefillOn(),
		Renders:          p.models.renders,
		Think:            cfg.Router.Think,
		Estimator:        p.est,
		Learner:          p.learner(),
		Approvals:        approvals(cfg, p.store),
		AutoExecute:      cfg.Safety.AutoExecute,
		HeldShare: approval.Share{Calls: cfg.Safety.MaxHeldPerIdentity, Bytes: cfg.Safety.MaxHeldBytesPerIdentity,
			ArgumentBytes: cfg.Safety.MaxHeldArgumentBytes},
		ApprovalWait:    cfg.Safety.ApprovalWait.D(),
		Approvers:       cfg.Safety.Approvers,
		OnHeld:          p.heldCall,
		ResultsMayWiden: cfg.Safety.ResultsMayWiden,
		Redactor:        p.red,
	}, p.logger)
}

// serverOptions are the HTTP API's options from the configuration; shutdown bounds its drain.
func serverOptions(cfg config.Config, red *redact.Redactor, logger *slog.Logger, shutdown time.Duration) server.Options {
	return server.Options{
		Model: cfg.Ollama.Model, ModelHost: cfg.Ollama.Host,
		BodyLimit: cfg.HTTP.BodyLimit, MaxQueryBytes: cfg.Router.MaxQueryBytes, MaxHistory: cfg.Router.MaxHistory,
		RequestTimeout: cfg.HTTP.RequestTimeout.D(), ReadTimeout: cfg.HTTP.ReadTimeout.D(),
		WriteTimeout: cfg.HTTP.WriteTimeout.D(), Logger: logger, RequestLog: cfg.Log.Requests,
		ShutdownTimeout: shutdown, MaxDeadline: cfg.Router.Deadline.D(), AllowedOrigins: cfg.HTTP.AllowedOrigins,
		Listen: cfg.Listen, AllowedHosts: cfg.HTTP.AllowedHosts, AdminReadyz: cfg.Auth.Configured(), Redactor: red,
		Models: chatModels(cfg), RouterProvider: cfg.Router.Provider, MaxEvidenceBytes: cfg.Council.MaxEvidenceBytes,
		AdminMetrics: cfg.Auth.Configured(),
		Deliberation: &answer.Deliberation{Show: cfg.Council.StreamDeliberation, Names: cfg.Council.ReasoningNames},
	}
}

// chatModels are the configured models GET /v1/models lists, named as completions take them: the
// router's model, then the council's members and chairman.
func chatModels(cfg config.Config) []server.ModelInfo {
	named := func(p, m string) server.ModelInfo {
		if p == cfg.Router.Provider {
			return server.ModelInfo{ID: m, OwnedBy: p}
		}
		return server.ModelInfo{ID: p + "/" + m, OwnedBy: p}
	}
	out := []server.ModelInfo{named(cfg.Router.Provider, cfg.Ollama.Model)}
	if cfg.Council.Enabled() {
		for _, m := range append(cfg.Council.Members, cfg.Council.Chairman) {
			if m.Model != "" {
				out = append(out, named(m.Provider, m.Model))
			}
		}
	}
	return out
}

// consoleParts builds the operator console (ui.enabled): its files, the recent requests' ring and
// what its overview shows of the build and the usage store.
func consoleParts(u config.Usage, recent *console.Recent) (*server.Console, error) {
	files, err := console.NewFiles()
	if err != nil {
		return nil, err
	}
	store := server.UsageStore{Backend: "off"}
	switch {
	case u.PostgresURL != "":
		store.Backend = "postgres"
		// A URL's host and database; a key=value string says no more than its backend.
		if pu, err := url.Parse(u.PostgresURL); err == nil && pu.Host != "" {
			store.Where = pu.Host + pu.Path
		}
	case u.Path != "":
		store.Backend, store.Where = "sqlite", u.Path
	}
	return &server.Console{Files: files, Recent: recent, Build: console.ReadBuild(), Usage: store}, nil
}

// inventoryOptions are the inventory's safety settings and where it keeps the pins of tool
// definitions: store (see safetyStore), else the inventory's memory.
func inventoryOptions(cfg config.Config, store *records.Store, logger *slog.Logger) inventory.Options {
	o := inventory.Options{Logger: logger, Safety: cfg.Safety.Checks}
	if store != nil {
		o.Pins = store
	}
	return o
}

// safetyStore is where the safety checks keep tool pins and the calls held for approval: usage,
// the usage database, so that replicas sharing it agree; nil when they keep neither or usage
// records are off (usage is nil), and both are then kept in memory (a restart forgets them;
// replicas do not share them).
func safetyStore(cfg config.Config, usage *records.Store, logger *slog.Logger) *records.Store {
	if !safetyKeeps(cfg) {
		return nil
	}
	if usage == nil {
		logger.Info("tool pins and calls awaiting approval are kept in memory: usage records are off, so a restart forgets them and replicas do not share them")
		return nil
	}
	return usage
}

// safetyKeeps reports whether the safety checks keep anything: tool pins (safety.pin, or
// safety.scan's quarantine), or calls held for approval (safety.auto_execute, or orgs, whose
// levels may narrow it).
func safetyKeeps(cfg config.Config) bool {
	pins := cfg.Safety.Pin != config.PinOff || cfg.Safety.Scan == config.ScanQuarantine
	held := cfg.Safety.AutoExecute != access.All || len(cfg.Orgs) > 0
	return pins || held
}

// approvals keeps the calls held for approval in store, or in memory without one.
func approvals(cfg config.Config, store *records.Store) router.Approvals {
	if store == nil {
		return approval.NewKeeper(approval.NewMemory(), cfg.Safety.ApprovalTTL.D())
	}
	return approval.NewKeeper(store, cfg.Safety.ApprovalTTL.D())
}

// approvalNotices builds the notifier of the approval webhooks (safety's and the orgs') and what
// the router tells it of each held call, or nothing when no webhook is configured. A webhook
// whose secret variable is unset or empty refuses the start.
func approvalNotices(cfg config.Config, orgs *access.Hierarchy, logger *slog.Logger) (*notify.Notifier, func(string, approval.Call), error) {
	hooks := []access.Webhook{cfg.Safety.ApprovalWebhook}
	keys := []string{"safety.approval_webhook"}
	for name, o := range cfg.Orgs {
		hooks, keys = append(hooks, o.ApprovalWebhook), append(keys, "orgs."+name+".approval_webhook")
	}
	secrets := map[string][]byte{}
	for i, h := range hooks {
		if h.URL == "" {
			continue
		}
		v := os.Getenv(h.SecretEnv)
		if v == "" {
			return nil, nil, fmt.Errorf("%s.secret_env: the environment variable %s is empty; it must hold the webhook's signing secret", keys[i], h.SecretEnv)
		}
		secrets[h.SecretEnv] = []byte(v)
	}
	if len(secrets) == 0 {
		return nil, nil, nil
	}
	n := notify.New(notify.Options{Log: logger})
	return n, func(key string, c approval.Call) {
		id, _ := access.ParseIdentity(c.Identity) // as the router wrote it
		h := orgs.Webhook(id, cfg.Safety.ApprovalWebhook)
		if h.URL == "" {
			return
		}
		link := ""
		if h.ConsoleURL != "" {
			link = strings.TrimRight(h.ConsoleURL, "/") + "/ui/#/approvals/" + key
		}
		n.Notify(notify.Hook{URL: h.URL, Secret: secrets[h.SecretEnv]}, notify.Notice{ID: key, RequestID: c.RequestID, Org: id.Org,
			Identity: c.Identity, Server: c.Server, Tool: c.Tool, Reason: c.Reason, ExpiresAt: c.ExpiresAt, URL: link})
	}, nil
}
