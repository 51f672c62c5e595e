// Package server is toolrouter's HTTP API (fiber): it translates each request into a call of
// package answer (which checks its fields, routes, answers and classifies its errors) and the
// result into JSON, OpenAI's or Ollama's shapes, Server-Sent Events or NDJSON, and reports the
// inventory and readiness. Every door is one row of the route table (doors.go). It holds no routing logic and no request checks beyond HTTP's own (methods, content
// types, Host and Origin, credentials, rate limits).
package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/ollama/ollama/api"

	"toolrouter/access"
	"toolrouter/answer"
	"toolrouter/auth"
	"toolrouter/config"
	"toolrouter/inventory"
	"toolrouter/observe"
	"toolrouter/redact"
	"toolrouter/router"
	"toolrouter/trajectory"
)

// Router routes one request.
type Router interface {
	Route(ctx context.Context, req router.Request) (*router.Outcome, error)
}

// Inventory gives the current tools.
type Inventory interface {
	Snapshot() *inventory.Snapshot
}

// ModelProbe tells whether the model server is up and which models it has; *api.Client satisfies it.
type ModelProbe interface {
	List(ctx context.Context) (*api.ListResponse, error)
}

// Options configure the API.
type Options struct {
	Model           string
	ModelHost       string
	BodyLimit       int           // bytes; default config.Default's http.body_limit
	MaxQueryBytes   int           // default config.Default's router.max_query_bytes
	MaxHistory      int           // default config.Default's router.max_history
	RequestTimeout  time.Duration // a whole request, streams included; default config.Default's http.request_timeout
	ReadTimeout     time.Duration
	WriteTimeout    time.Duration
	ProbeTimeout    time.Duration // /readyz model probe; default 2 s
	StreamHeartbeat time.Duration // keep-alive comment interval on streams; default 2 s
	Logger          *slog.Logger
	// RequestLog is the level of the line logged per request (log.requests); default
	// config.Default's.
	RequestLog      config.RequestLog
	DisableRecovery bool // tests of the recover middleware keep it on; nothing else sets this

	// ShutdownTimeout bounds Serve's shutdown; default config.Default's http.shutdown_timeout.
	ShutdownTimeout time.Duration
	// MaxDeadline is the largest deadline_ms a request may ask for (router.deadline); default
	// config.Default's.
	MaxDeadline time.Duration
	// AllowedOrigins are the browser origins served (http.allowed_origins); a request with
	// another Origin is refused.
	AllowedOrigins []string
	// Listen is the configured listen address; with AllowedHosts (http.allowed_hosts) it makes
	// the Host header values served (see hostSet). Serve adds the listener's own address; New
	// with neither checks no Host.
	Listen       string
	AllowedHosts []string
	// Redactor masks credentials in every error message and in /readyz: those the configuration
	// holds or names, and any URL's. Nil masks URLs' only.
	Redactor *redact.Redactor
	// AdminReadyz shows /readyz's details (model, servers, trajectory) only to identities with
	// admin scope; others get {"ready": bool}. Set it when callers authenticate (auth.keys or
	// auth.jwt): the details name servers, tools and errors.
	AdminReadyz bool
	// Models are the configured models GET /v1/models lists (the router's, the council's), named
	// as a chat completion takes them; RouterProvider owns the models the router's provider lists.
	Models         []ModelInfo
	RouterProvider string
	// MaxEvidenceBytes bounds each tool result a chat completion's model is shown; default
	// config.Default's council.max_evidence_bytes; negative shows results whole.
	MaxEvidenceBytes int
	// Deliberation is what a streamed council completion shows of stages 1 and 2 as reasoning;
	// nil: config.Default's council.stream_deliberation and council.reasoning_names.
	Deliberation *answer.Deliberation
	// AdminMetrics serves GET /metrics only to identities with admin scope (others get 403). Set
	// it when callers authenticate: the metrics name servers, tools and models.
	AdminMetrics bool
}

// Deps are the parts the handlers use.
type Deps struct {
	Router    Router
	Inventory Inventory
	Model     ModelProbe
	// Council, if not nil, answers /v1/answer queries the tools do not answer directly.
	Council Councillor
	// Trajectory, if not nil, is the trajectory log whose counts /readyz reports.
	Trajectory TrajectoryStats
	// Estimates, if not nil, counts the prompts whose real size was over their estimate, for
	// /readyz; *tokens.Estimator satisfies it.
	Estimates interface{ Exceeded() int64 }
	// Auth establishes each request's identity from its credential; nil serves every request as
	// auth.Anonymous(), as when no key is configured on a loopback listen.
	Auth Authenticator
	// Access is the org/team/agent hierarchy (the router's too): a request's caller may only
	// narrow its identity within it, and GET /v1/inventory shows what the identity may use. Nil
	// has no orgs: every identity may use every tool.
	Access *access.Hierarchy
	// Search, if not nil, answers GET /v1/inventory/search: what retrieval offers for a query.
	Search Searcher
	// Observer, if not nil, is told what each request did once it is answered (observe.Report).
	Observer observe.Observer
	// Reload, if not nil, serves POST /v1/admin/reload.
	Reload Reloader
	// Approver, if not nil, serves POST /v1/admin/tools/approve.
	Approver Approver
	// Calls, if not nil, runs held calls for POST /v1/approve (nil: no call is ever held, and
	// every token is unknown).
	Calls CallApprover
	// Queue, if not nil, serves the console's approvals (GET /ui/api/approvals, POST
	// /ui/api/approvals/{id}/approve and …/decline); nil: they answer 404 approvals_off.
	Queue Queue
	// Completer, if not nil, makes the model calls of POST /v1/chat/completions.
	Completer answer.Completer
	// Metrics, if not nil, serves GET /metrics (the Prometheus exposition).
	Metrics http.Handler
	// Limiter, if not nil, admits each request of the work doors (doors.go) against its
	// identity's rate limits (see limits.go).
	Limiter Limiter
	// MCP, if not nil, serves /mcp: the MCP server's streamable HTTP transport (mcpserver), run
	// for each request with its identity in the request's context (access.IdentityFrom).
	MCP http.Handler
	// Usage, if not nil, answers GET /v1/usage from the usage records; nil: usage is off (404).
	Usage UsageReader
	// Console, if not nil, serves the operator console at /ui (see console.go).
	Console *Console
}

// Searcher shows what retrieval would offer an identity for a query; *router.Router satisfies it.
type Searcher interface {
	Search(ctx context.Context, query string, id access.Identity, k int) (*router.Offer, error)
}

// TrajectoryStats reports the trajectory log's counts; *trajectory.Writer satisfies it.
type TrajectoryStats interface {
	Stats() trajectory.Stats
}

// New returns the fiber app serving the API; Serve serves it on a listener and shuts it down.
func New(d Deps, o Options) *fiber.App {
	app, _ := build(d, o, "")
	return app
}

// build returns the fiber app serving the API and its handlers; listening, if not "", is the
// address it is served on, whose Host is served beside o.Listen's.
func build(d Deps, o Options, listening string) (*fiber.App, *handlers) {
	o = o.withDefaults()
	var listen []string
	for _, a := range []string{o.Listen, listening} {
		if a != "" {
			listen = append(listen, a)
		}
	}
	h := &handlers{d: d, o: o, life: newLifecycle(), hosts: newHostSet(listen, o.AllowedHosts),
		ans:    &answer.Service{Router: d.Router},
		limits: answer.Limits{MaxQueryBytes: o.MaxQueryBytes, MaxHistory: o.MaxHistory, MaxDeadline: o.MaxDeadline}}
	if d.Council != nil {
		h.ans.Council = d.Council
	}
	h.chat = &answer.Chat{Router: d.Router, Answers: h.ans, MaxEvidenceBytes: o.MaxEvidenceBytes, CheckTimeout: o.ProbeTimeout,
		Deliberation: *o.Deliberation}
	if d.Completer != nil {
		h.chat.Completer = d.Completer
	}
	app := fiber.New(fiber.Config{
		AppName:               "toolrouter",
		BodyLimit:             o.BodyLimit,
		ReadTimeout:           o.ReadTimeout,
		WriteTimeout:          o.WriteTimeout,
		DisableStartupMessage: true,
		ErrorHandler:          h.errorHandler,
		// No handler reads a form: a multipart body is refused (415) without being parsed.
		DisablePreParseMultipartForm: true,
	})
	app.Use(h.accessLog) // outermost: it sees the 500 that recover makes of a panic
	app.Use(recover.New(recover.Config{EnableStackTrace: true, StackTraceHandler: func(c *fiber.Ctx, e any) {
		o.Logger.Error("panic in handler", "path", c.Path(), "panic", e)
	}}))
	app.Use(h.life.admit) // while shutting down, nothing else runs
	app.Use(h.guard)
	h.consoleFiles(app) // the page and its files: no credential, no observers
	app.Use(h.authenticate)
	app.Use(h.accepts) // 404, 405, then 415: before the rate limits
	h.mount(app, h.doors())
	h.routes = routeTable(app)
	// accepts answers 404 and 405 before any handler runs; this catches what fiber's routing
	// alone finds unrouted.
	app.Use(func(c *fiber.Ctx) error {
		if err := h.unrouted(c); err != nil {
			return err
		}
		return &answer.Problem{Status: fiber.StatusNotFound, Code: "not_found", Message: "no route " + c.Method() + " " + c.Path()}
	})
	return app, h
}

// route is one served path and its methods, each once, in the order fiber lists them.
type route struct {
	path    string
	prefix  bool // the path ends in a wildcard ("/v1/models/*"): it serves every path below it
	methods []string
}

// routeTable lists the app's paths and their methods, HEAD aside (fiber serves it with GET).
func routeTable(app *fiber.App) []route {
	var table []route
	at := map[string]int{}
	for _, r := range app.GetRoutes(true) {
		if r.Method == fiber.MethodHead {
			continue
		}
		i, ok := at[r.Path]
		if !ok {
			i = len(table)
			at[r.Path] = i
			p, prefix := strings.CutSuffix(r.Path, "*")
			table = append(table, route{path: strings.ToLower(p), prefix: prefix})
		}
		if !slices.Contains(table[i].methods, r.Method) {
			table[i].methods = append(table[i].methods, r.Method)
		}
	}
	return table
}

// unrouted is the answer to a request no route takes: 405 method_not_allowed, with Allow listing
// each method of the path once, for a served path and another method (HEAD is served with GET);
// 404 not_found for a path not served; nil when a route takes it. Paths compare as fiber routes
// them: in any case, with or without a trailing slash.
func (h *handlers) unrouted(c *fiber.Ctx) error {
	path := strings.ToLower(c.Path())
	if len(path) > 1 {
		path = strings.TrimSuffix(path, "/")
	}
	method := c.Method()
	if method == fiber.MethodHead {
		method = fiber.MethodGet
	}
	for _, r := range h.routes {
		if !(path == r.path || r.prefix && strings.HasPrefix(path, r.path) && len(path) > len(r.path)) {
			continue
		}
		if slices.Contains(r.methods, method) {
			return nil
		}
		allow := strings.Join(r.methods, ", ")
		c.Set(fiber.HeaderAllow, allow)
		return &answer.Problem{Status: fiber.StatusMethodNotAllowed, Code: "method_not_allowed", Message: c.Method() + " is not allowed on " + c.Path() + "; use " + allow}
	}
	return &answer.Problem{Status: fiber.StatusNotFound, Code: "not_found", Message: "no route " + c.Method() + " " + c.Path()}
}

// withDefaults fills o's zero fields from config.Default (and the fixed defaults of the fields
// that have no configuration key).
func (o Options) withDefaults() Options {
	def := config.Default()
	if o.BodyLimit <= 0 {
		o.BodyLimit = def.HTTP.BodyLimit
	}
	if o.MaxQueryBytes <= 0 {
		o.MaxQueryBytes = def.Router.MaxQueryBytes
	}
	if o.MaxHistory <= 0 {
		o.MaxHistory = def.Router.MaxHistory
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = def.HTTP.RequestTimeout.D()
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = def.HTTP.ShutdownTimeout.D()
	}
	if o.MaxDeadline <= 0 {
		o.MaxDeadline = def.Router.Deadline.D()
	}
	if o.MaxEvidenceBytes == 0 {
		o.MaxEvidenceBytes = def.Council.MaxEvidenceBytes
	}
	if o.Deliberation == nil {
		o.Deliberation = &answer.Deliberation{Show: def.Council.StreamDeliberation, Names: def.Council.ReasoningNames}
	}
	if o.StreamHeartbeat <= 0 {
		o.StreamHeartbeat = 2 * time.Second
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.RequestLog == "" {
		o.RequestLog = def.Log.Requests
	}
	return o
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

type handlers struct {
	d      Deps
	o      Options
	ans    *answer.Service
	chat   *answer.Chat
	limits answer.Limits // of every request's routing fields
	life   *lifecycle
	hosts  *hostSet  // nil: any Host
	routes []route   // the paths served and their methods (unrouted)
	table  []door    // the route table mounted (doors)
	bodies sync.Pool // of *bodyWriter (sendJSON)
}

// inventory answers GET /v1/inventory?caller=NAME: the tools the request's identity, narrowed by
// caller, may use. Only an admin (h.admin, as for /readyz) sees how each server is run and why it
// failed; anyone else gets publicInventory.
func (h *handlers) inventory(c *fiber.Ctx) error {
	id, err := h.actingAs(c, c.Query("caller"))
	if err != nil {
		return err
	}
	snap := h.d.Inventory.Snapshot()
	var export inventory.Export
	if name, permits := h.d.Access.Policy(id); name == access.AllName {
		export = snap.Export()
	} else {
		export = snap.ExportFor(permits)
	}
	if h.admin(c) {
		return c.JSON(export)
	}
	return c.JSON(publicView(export))
}

// publicInventory is GET /v1/inventory for an identity without admin scope: each server's name,
// purpose and status, and the tools the identity may use. It leaves out what is for admins, as
// /readyz does: how a server is run (transport, command, URL), its errors (a stdio server's are
// the end of its stderr), restarts, refresh counts and the tools left out.
type publicInventory struct {
	Version uint64         `json:"version"`
	Servers []publicServer `json:"servers"`
}

type publicServer struct {
	Name        string           `json:"name"`
	DisplayName string           `json:"display_name"`
	Purpose     string           `json:"purpose,omitempty"`
	Status      inventory.State  `json:"status"`
	Tools       []inventory.Tool `json:"tools"`
}

func publicView(e inventory.Export) publicInventory {
	out := publicInventory{Version: e.Version, Servers: make([]publicServer, len(e.Servers))}
	for i, s := range e.Servers {
		tools := s.Tools
		if tools == nil {
			tools = []inventory.Tool{}
		}
		out.Servers[i] = publicServer{Name: s.Name, DisplayName: s.DisplayName, Purpose: s.Purpose, Status: s.Status, Tools: tools}
	}
	return out
}

// maxSearchK bounds k of GET /v1/inventory/search.
const maxSearchK = 1000

// search answers GET /v1/inventory/search?q=QUERY&k=N&caller=NAME.
func (h *handlers) search(c *fiber.Ctx) error {
	if h.d.Search == nil {
		return router.ErrNoRanker
	}
	q := strings.TrimSpace(c.Query("q"))
	switch {
	case q == "":
		return answer.BadRequest("bad_query", "q is required: the query to rank tools for")
	case len(q) > h.o.MaxQueryBytes:
		return answer.BadRequest("query_too_large", fmt.Sprintf("q is %d bytes, over the limit of %d", len(q), h.o.MaxQueryBytes))
	case !utf8.ValidString(q):
		return answer.BadRequest("bad_query", "q is not valid UTF-8")
	}
	id, err := h.actingAs(c, c.Query("caller"))
	if err != nil {
		return err
	}
	k := 10
	if s := c.Query("k"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxSearchK {
			return answer.BadRequest("bad_k", fmt.Sprintf("k must be a whole number from 1 to %d, got %q", maxSearchK, s))
		}
		k = n
	}
	ctx, end, err := h.request(c.UserContext(), c.Context().Conn())
	if err != nil {
		return err
	}
	defer end()
	offer, err := h.d.Search.Search(ctx, strings.Clone(q), id, k)
	if cause := answer.Interrupted(ctx); cause != nil {
		return cause
	}
	if err != nil {
		return err
	}
	return c.JSON(offer)
}

type readiness struct {
	Ready   bool          `json:"ready"`
	Model   modelState    `json:"model"`
	Servers []serverState `json:"servers"`
	// Trajectory shows the log's written and dropped records, when the log is on.
	Trajectory *trajectory.Stats `json:"trajectory,omitempty"`
	// Limits shows where the rate limits' counters are, when rate limiting is on.
	Limits *limitsState `json:"limits,omitempty"`
	// Quarantined counts the tools held back by safety.pin and safety.scan, every server's.
	Quarantined int `json:"quarantined_tools"`
}

type modelState struct {
	Host      string `json:"host"`
	Name      string `json:"name"`
	Reachable bool   `json:"reachable"`
	Pulled    bool   `json:"pulled"`
	Error     string `json:"error,omitempty"`
	// EstimateExceeded counts the model calls whose real prompt size was over the router's
	// estimate (each raised the estimate at once).
	EstimateExceeded int64 `json:"estimate_exceeded"`
}

type serverState struct {
	Name string `json:"name"`
	// DisplayName is the server's name as configured ("GitHub" for the server "github").
	DisplayName string          `json:"display_name"`
	Status      inventory.State `json:"status"`
	Error       string          `json:"error,omitempty"`
	// LastError is why the server was last down; it stays once the server is up again.
	LastError string `json:"last_error,omitempty"`
	Tools     int    `json:"tools"`
	// Excluded are the server's tools left out of the inventory, with why.
	Excluded []inventory.Excluded `json:"excluded_tools,omitempty"`
	// ListChanged counts the server's list_changed notifications, Refreshes the listings they made.
	ListChanged uint64 `json:"list_changed"`
	Refreshes   uint64 `json:"refreshes"`
	// Quarantined, PinChanged and Findings count the server's tools held back, changed from their
	// pins, and what the scan found in them (GET /v1/inventory lists them).
	Quarantined int `json:"quarantined_tools"`
	PinChanged  int `json:"pin_changed"`
	Findings    int `json:"findings"`
}

// readyz reports 200 when the model server is reachable and has the model, 503 otherwise; the
// servers' states are listed either way (a down server degrades its own tools, not readiness).
// With Options.AdminReadyz, only an admin sees more than {"ready": bool}. No URL in it shows its
// credentials.
func (h *handlers) readyz(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), h.o.ProbeTimeout)
	defer cancel()
	r := readiness{Model: modelState{Host: h.o.Redactor.String(redact.URL(h.o.ModelHost)), Name: h.o.Model}}
	if h.d.Estimates != nil {
		r.Model.EstimateExceeded = h.d.Estimates.Exceeded()
	}
	list, err := h.d.Model.List(ctx)
	if err != nil {
		r.Model.Error = h.o.Redactor.String(err.Error())
	} else {
		r.Model.Reachable = true
		r.Model.Pulled = hasModel(list, h.o.Model)
		if !r.Model.Pulled {
			r.Model.Error = "model " + h.o.Model + " is not pulled: run `ollama pull " + h.o.Model + "`"
		}
	}
	for _, s := range h.d.Inventory.Snapshot().Servers {
		r.Servers = append(r.Servers, serverState{Name: s.Name, DisplayName: s.DisplayName, Status: s.Status, Error: s.Error, LastError: s.LastError,
			Tools: len(s.Tools), Excluded: s.Excluded, ListChanged: s.ListChanged, Refreshes: s.Refreshes,
			Quarantined: len(s.Quarantined), PinChanged: len(s.PinChanged), Findings: len(s.Findings)})
		r.Quarantined += len(s.Quarantined)
	}
	if h.d.Trajectory != nil {
		st := h.d.Trajectory.Stats()
		r.Trajectory = &st
	}
	if h.d.Limiter != nil {
		r.Limits = &limitsState{Backend: h.d.Limiter.Backend(), DroppedCharges: h.d.Limiter.DroppedCharges()}
	}
	r.Ready = r.Model.Reachable && r.Model.Pulled
	status := fiber.StatusOK
	if !r.Ready {
		status = fiber.StatusServiceUnavailable
	}
	if !h.admin(c) {
		return c.Status(status).JSON(fiber.Map{"ready": r.Ready})
	}
	return c.Status(status).JSON(r)
}

// pathMetrics serves the Prometheus metrics (Deps.Metrics).
const pathMetrics = "/metrics"

// metrics serves GET /metrics through serve; with Options.AdminMetrics, only to an admin.
func (h *handlers) metrics(serve fiber.Handler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if id, ok := identity(c); h.o.AdminMetrics && !(ok && h.d.Auth != nil && h.d.Auth.IsAdmin(id)) {
			return fmt.Errorf("%w: %s is served to admin identities only (auth.admins)", auth.ErrForbidden, pathMetrics)
		}
		return serve(c)
	}
}

// hasModel matches "name" against listed models, treating a missing tag as ":latest".
func hasModel(list *api.ListResponse, name string) bool {
	want := withTag(name)
	for _, m := range list.Models {
		if withTag(m.Name) == want || withTag(m.Model) == want {
			return true
		}
	}
	return false
}

func withTag(name string) string {
	for i := len(name) - 1; i >= 0 && name[i] != '/'; i-- {
		if name[i] == ':' {
			return name
		}
	}
	return name + ":latest"
}
