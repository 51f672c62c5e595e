// Package mcpserver serves toolrouter itself as an MCP server, so that one entry in an MCP client
// (Claude Desktop, Cursor, VS Code) fronts every configured server with routing, access lists
// and limits. It offers two tools, route (the routing decision, its calls and results) and answer
// (answer.Service's answer), and, with Options.ExposeInventory, the caller's inventory as one
// virtual server: each tool it may use under an MCP-safe name (see ToolName), called through
// router.Router.Call.
//
// Every tools/call acts for the identity in its context (access.IdentityFrom): the HTTP API puts
// the credential's there for /mcp, and ServeStdio the one it is given. Calls are admitted by the
// Limiter, reported to the Observer and their errors mapped by answer.Classify, as the HTTP API
// does. The package holds no routing or council logic and no transport of its own beyond
// mcp-go's: the HTTP API mounts Handler on its listener.
package mcpserver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpgo "github.com/mark3labs/mcp-go/server"

	"toolrouter/access"
	"toolrouter/answer"
	"toolrouter/approval"
	"toolrouter/config"
	"toolrouter/inventory"
	"toolrouter/observe"
	"toolrouter/redact"
	"toolrouter/router"
)

// Router routes a request and runs a caller's own tool call; *router.Router satisfies it.
type Router interface {
	Route(ctx context.Context, req router.Request) (*router.Outcome, error)
	Call(ctx context.Context, id access.Identity, qualified string, args map[string]any) (*router.Call, error)
	Approve(ctx context.Context, id access.Identity, token string) (*router.Call, approval.Call, error)
	Decline(ctx context.Context, id access.Identity, token string) error
}

// Inventory gives the current tools and tells when they change; *inventory.Manager satisfies it.
type Inventory interface {
	Snapshot() *inventory.Snapshot
	Changed() <-chan struct{}
}

// Access decides which tools an identity may use; *access.Hierarchy satisfies it.
type Access interface {
	Policy(id access.Identity) (name string, permits func(qualified string) bool)
}

// Limiter admits a call for an identity or refuses it; release ends the admission.
type Limiter interface {
	Admit(ctx context.Context, id access.Identity) (release func(), err error)
}

// Deps are the parts the tools use. Router and Inventory are required.
type Deps struct {
	Router    Router
	Inventory Inventory
	// Council, if not nil, writes the answer tool's answers that the tools do not give directly.
	Council answer.Councillor
	// Access, if not nil, limits the inventory tools each identity sees and calls (the router
	// applies it to routing too); nil: every identity may use every tool.
	Access Access
	// Limiter, if not nil, admits each tools/call.
	Limiter Limiter
	// Observer, if not nil, is told what each tools/call did.
	Observer observe.Observer
}

// Options tune the server; the zero value works.
type Options struct {
	// ExposeInventory lists the caller's inventory beside route and answer (mcp_server.expose_inventory).
	ExposeInventory bool
	// Limits of the route and answer tools' arguments, as the HTTP API's (server.Options'; zero:
	// config.Default's).
	MaxQueryBytes int
	MaxHistory    int
	MaxDeadline   time.Duration
	// Redactor masks credentials in error messages; nil masks URLs' only.
	Redactor *redact.Redactor
	Logger   *slog.Logger
	// Version is the server's version in the initialize answer.
	Version string
	// MaxMessageBytes bounds one line ServeStdio reads (zero: inventory.DefaultServerConfig's
	// max_message_bytes); a longer one is answered with an error and not read.
	MaxMessageBytes int
	// SessionIdleTTL ends an /mcp session idle this long (mcp_server.session_idle_ttl); MaxSessions
	// and MaxSessionsPerIdentity cap the sessions open at once (mcp_server.max_sessions,
	// mcp_server.max_sessions_per_identity). Zero: config.Default's.
	SessionIdleTTL         time.Duration
	MaxSessions            int
	MaxSessionsPerIdentity int
}

// Endpoints reported to the Observer, one per tool kind.
const (
	EndpointRoute  = "mcp:route"
	EndpointAnswer = "mcp:answer"
	EndpointCall   = "mcp:call"
)

// Names of the two tools that are always offered.
const (
	ToolRoute  = "route"
	ToolAnswer = "answer"
)

// Server is toolrouter as an MCP server. It is safe for concurrent use.
type Server struct {
	d      Deps
	o      Options
	ans    *answer.Service // routes with routeAsking
	limits answer.Limits   // of the route and answer tools' arguments
	mcp    *mcpgo.MCPServer

	exposed atomic.Pointer[exposed] // the inventory tools listed now
	parked  parking                 // requests waiting for their client's answers (input.go)
	syncMu  sync.Mutex              // serialises sync
}

// exposed is the inventory as listed: the MCP name of each tool and back.
type exposed struct {
	listed    bool // the tool set was set from it
	signature string
	qualified map[string]string // MCP name -> qualified name
}

// New builds the server with its route and answer tools and, with ExposeInventory, the current
// inventory; Watch keeps the inventory current.
func New(d Deps, o Options) *Server {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Version == "" {
		o.Version = "0.1.0"
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = inventory.DefaultServerConfig().MaxMessageBytes
	}
	def := config.Default().MCPServer
	if o.SessionIdleTTL <= 0 {
		o.SessionIdleTTL = def.SessionIdleTTL.D()
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = def.MaxSessions
	}
	if o.MaxSessionsPerIdentity <= 0 {
		o.MaxSessionsPerIdentity = def.MaxSessionsPerIdentity
	}
	r := config.Default().Router
	l := answer.Limits{MaxQueryBytes: cmp.Or(o.MaxQueryBytes, r.MaxQueryBytes), MaxHistory: cmp.Or(o.MaxHistory, r.MaxHistory),
		MaxDeadline: cmp.Or(o.MaxDeadline, r.Deadline.D())}
	s := &Server{d: d, o: o, limits: l}
	s.ans = &answer.Service{Router: routeFunc(s.routeAsking), Council: d.Council}
	s.exposed.Store(&exposed{qualified: map[string]string{}})
	s.mcp = mcpgo.NewMCPServer("toolrouter", o.Version,
		mcpgo.WithToolCapabilities(true),
		mcpgo.WithToolFilter(s.filter),
		mcpgo.WithRecovery(),
		mcpgo.WithInstructions("route finds and runs the right tool of the servers behind toolrouter for a query; answer also writes the answer."),
	)
	s.sync()
	return s
}

// Handler is the streamable HTTP transport, for the HTTP API's /mcp. Each request must carry
// its identity in its context (access.WithIdentity). The HTTP API checks Host and Origin, so
// mcp-go's own localhost check is off. Sessions are capped in number, end after
// Options.SessionIdleTTL without a request, and are used and ended only by the identity that
// opened them (sessionGate).
func (s *Server) Handler() http.Handler {
	ss := newSessions(s.o.MaxSessions, s.o.MaxSessionsPerIdentity)
	h := mcpgo.NewStreamableHTTPServer(s.mcp,
		mcpgo.WithDisableLocalhostProtection(true),
		mcpgo.WithStreamableHTTPLogger(s.o.Logger),
		mcpgo.WithSessionIdManagerResolver(ss),
		mcpgo.WithSessionIdleTTL(s.o.SessionIdleTTL))
	return &sessionGate{next: h, sessions: ss, srv: s}
}

// ServeStdio serves MCP on in and out (newline-delimited JSON-RPC) for id until ctx ends or in
// closes. Nothing but the protocol is written to out. A line over Options.MaxMessageBytes is
// answered with an error (-32600, id null), skipped without being buffered, and serving goes on.
func (s *Server) ServeStdio(ctx context.Context, id access.Identity, in io.Reader, out io.Writer) error {
	stdio := mcpgo.NewStdioServer(s.mcp)
	stdio.SetErrorLogger(slog.NewLogLogger(s.o.Logger.Handler(), slog.LevelError))
	stdio.SetContextFunc(func(ctx context.Context) context.Context {
		return access.WithIdentity(context.WithValue(ctx, stdioKey{}, true), id)
	})
	w := &syncWriter{w: out}
	lines := newBoundedLines(in, s.o.MaxMessageBytes, func() error {
		s.o.Logger.Warn("mcp: a message over max_message_bytes was skipped", "max_message_bytes", s.o.MaxMessageBytes)
		_, err := w.Write(tooLongAnswer(s.o.MaxMessageBytes))
		return err
	})
	err := stdio.Listen(ctx, lines, w)
	if err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, io.EOF)) {
		return nil
	}
	return err
}

// Watch keeps the listed inventory current until ctx ends: each new inventory snapshot that
// changes what is listed replaces the tool set, and mcp-go tells connected sessions
// (notifications/tools/list_changed). Without ExposeInventory it returns at once.
func (s *Server) Watch(ctx context.Context) {
	if !s.o.ExposeInventory {
		return
	}
	for {
		changed := s.d.Inventory.Changed()
		s.sync()
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// sync lists the inventory's available tools, when they differ from those listed.
func (s *Server) sync() {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	var tools []*inventory.Tool
	snap := s.d.Inventory.Snapshot()
	if s.o.ExposeInventory {
		tools = snap.Available()
	}
	sig := signature(tools)
	if cur := s.exposed.Load(); cur.listed && cur.signature == sig {
		return
	}
	names := ToolNames(tools)
	next := &exposed{listed: true, signature: sig, qualified: make(map[string]string, len(tools))}
	list := []mcpgo.ServerTool{
		{Tool: routeTool(), Handler: s.route},
		{Tool: answerTool(), Handler: s.answer},
	}
	for _, t := range tools {
		name := names[t.Qualified]
		next.qualified[name] = t.Qualified
		desc := t.Description
		if t.Title != "" && desc == "" {
			desc = t.Title
		}
		desc = strings.TrimSpace(strings.TrimSpace(desc) + " (" + t.Qualified + ")")
		tool := mcp.NewToolWithRawSchema(name, desc, t.InputSchema)
		if t.Title != "" {
			tool.Title = t.Title
		}
		tool.Annotations = hints(t.Annotations)
		if len(t.OutputSchema) > 0 {
			// The result is checked against it before it is returned (invalid_result otherwise).
			tool.RawOutputSchema = t.OutputSchema
		}
		list = append(list, mcpgo.ServerTool{Tool: tool, Handler: s.call})
	}
	s.exposed.Store(next)
	s.mcp.SetTools(list...)
}

// hints are a tool's annotations as the inventory resolved them (configuration over the server's,
// MCP's defaults for the rest), so that a client asks its user before what toolrouter would hold.
func hints(a inventory.Annotations) mcp.ToolAnnotation {
	return mcp.ToolAnnotation{ReadOnlyHint: &a.ReadOnlyHint, DestructiveHint: &a.DestructiveHint,
		IdempotentHint: &a.IdempotentHint, OpenWorldHint: &a.OpenWorldHint}
}

// signature identifies what is listed of tools: names, descriptions, input and output schemas and
// annotations.
func signature(tools []*inventory.Tool) string {
	var b strings.Builder
	for _, t := range tools {
		b.WriteString(t.Qualified)
		b.WriteByte(0)
		b.WriteString(t.Title)
		b.WriteByte(0)
		b.WriteString(t.Description)
		b.WriteByte(0)
		b.Write(t.InputSchema)
		b.WriteByte(0)
		b.Write(t.OutputSchema)
		b.WriteByte(0)
		fmt.Fprintf(&b, "%v%c", t.Annotations, 0)
	}
	return b.String()
}

// filter is the tool list each caller sees (and may call: mcp-go applies it to tools/call too):
// route and answer, and the inventory tools its identity may use. A request without an identity
// sees nothing.
func (s *Server) filter(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	id, ok := access.IdentityFrom(ctx)
	if !ok {
		return nil
	}
	permits := func(string) bool { return true }
	if s.d.Access != nil {
		_, permits = s.d.Access.Policy(id)
	}
	qualified := s.exposed.Load().qualified
	kept := tools[:0:0]
	for _, t := range tools {
		q, inv := qualified[t.Name]
		if !inv && (t.Name == ToolRoute || t.Name == ToolAnswer) || inv && permits(q) {
			kept = append(kept, t)
		}
	}
	return kept
}

// call is the handler of an inventory tool: router.Router.Call for the caller.
func (s *Server) call(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	rep, id, release, res := s.begin(ctx, EndpointCall, req)
	if res != nil {
		return res, nil
	}
	defer release()
	qualified, ok := s.exposed.Load().qualified[req.Params.Name]
	if !ok {
		return s.fail(rep, fmt.Errorf("%w %q", router.ErrUnknownTool, req.Params.Name)), nil
	}
	args, ok := req.Params.Arguments.(map[string]any)
	if !ok && req.Params.Arguments != nil {
		return s.finish(rep, http.StatusBadRequest, router.CodeInvalidArguments, "the arguments must be a JSON object"), nil
	}
	ctx, res = s.beginRound(ctx, rep, id, req)
	if res != nil {
		return res, nil
	}
	var c *router.Call
	if r := roundOf(ctx); r.resumed != nil {
		c = s.answered(ctx, id, r, r.resumed.call)
		rep.Outcome = decidedOutcome(id, r)
	} else {
		var err error
		if c, err = s.d.Router.Call(ctx, id, qualified, args); err != nil {
			return s.fail(rep, err), nil
		}
		if c.Pending != nil {
			if ask := s.askInput(ctx, id, []router.Pending{*c.Pending}, &parked{call: c}); ask != nil {
				s.report(rep, http.StatusOK, "")
				return ask, nil
			}
			c = s.elicitOne(ctx, id, c)
		}
		rep.Outcome = callOutcome(id, c)
	}
	if c.Pending != nil {
		// Not a failure: the call waits for a person, and the result says how to approve it.
		s.report(rep, http.StatusOK, "")
		return mcp.NewToolResultStructured(c, pendingText(ctx, c.Pending)), nil
	}
	if c.Error != nil {
		return s.finish(rep, callStatus(c.Error.Code), c.Error.Code, c.Error.Message), nil
	}
	s.report(rep, http.StatusOK, "")
	res = &mcp.CallToolResult{IsError: c.Result.IsError, StructuredContent: c.Result.Structured}
	if c.Result.Text != "" || c.Result.Structured == nil {
		res.Content = []mcp.Content{mcp.NewTextContent(c.Result.Text)}
	}
	return res, nil
}

// callOutcome is the report's routing of a direct call: the one call, no model.
func callOutcome(id access.Identity, c *router.Call) *router.Outcome {
	return &router.Outcome{Identity: id.String(), UseTool: true, Server: c.Server, Tool: c.Tool,
		Arguments: c.Arguments, Result: c.Result, Error: c.Error, Calls: []router.Call{*c}, Stopped: router.StopDone,
		Trace: []router.Step{}}
}

// callStatus is the status a failed direct call is reported with, as the HTTP API would answer.
func callStatus(code string) int {
	switch code {
	case router.CodeInvalidArguments:
		return http.StatusBadRequest
	case router.CodeToolTimeout, router.CodeDeadline:
		return http.StatusGatewayTimeout
	case router.CodeToolUnavailable:
		return http.StatusServiceUnavailable
	case CodeDeclined:
		return http.StatusForbidden
	}
	return http.StatusBadGateway
}

// route is the route tool's handler.
func (s *Server) route(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	rep, id, release, res := s.begin(ctx, EndpointRoute, req)
	if res != nil {
		return res, nil
	}
	defer release()
	rr, _, err := answer.DecodeTool(rawArguments(req), false, s.limits)
	if err != nil {
		return s.fail(rep, err), nil
	}
	rr.Identity = id
	if ctx, res = s.beginRound(ctx, rep, id, req); res != nil {
		return res, nil
	}
	out, err := s.routeAsking(ctx, rr)
	if out != nil {
		rep.Outcome = out
	}
	if r := roundOf(ctx); r.resumed != nil {
		rep.Outcome = decidedOutcome(id, r)
	}
	if cause := answer.Interrupted(ctx); cause != nil {
		err = cause // not the partial outcome made of cancelled calls
	}
	if ask := (*errInput)(nil); errors.As(err, &ask) {
		s.report(rep, http.StatusOK, "")
		return ask.res, nil
	}
	if err != nil {
		return s.fail(rep, err), nil
	}
	s.report(rep, http.StatusOK, "")
	return mcp.NewToolResultStructured(out, Summary(ctx, out)), nil
}

// answer is the answer tool's handler.
func (s *Server) answer(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	rep, id, release, res := s.begin(ctx, EndpointAnswer, req)
	if res != nil {
		return res, nil
	}
	defer release()
	rr, mode, err := answer.DecodeTool(rawArguments(req), true, s.limits)
	if err != nil {
		return s.fail(rep, err), nil
	}
	rr.Identity = id
	if ctx, res = s.beginRound(ctx, rep, id, req); res != nil {
		return res, nil
	}
	out, err := s.ans.Run(ctx, rr, mode, nil)
	if out != nil {
		rep.Outcome, rep.Council = out.Routing, out.Council
	}
	if r := roundOf(ctx); r.resumed != nil {
		rep.Outcome = decidedOutcome(id, r)
	}
	if cause := answer.Interrupted(ctx); cause != nil {
		err = cause
	}
	if ask := (*errInput)(nil); errors.As(err, &ask) {
		rep.Outcome = ask.outcome
		s.report(rep, http.StatusOK, "")
		return ask.res, nil
	}
	if err != nil {
		return s.fail(rep, err), nil
	}
	s.report(rep, http.StatusOK, "")
	final := out.Final
	if final == "" {
		final = Summary(ctx, out.Routing) // nothing answered: say what the routing did
	}
	return mcp.NewToolResultStructured(out, final), nil
}

// rawArguments is a call's arguments as JSON; none is an empty object.
func rawArguments(req mcp.CallToolRequest) []byte {
	if req.Params.Arguments == nil {
		return []byte("{}")
	}
	b, err := json.Marshal(req.Params.Arguments)
	if err != nil {
		return []byte("null")
	}
	return b
}

// begin starts a tools/call's report and admits it. A call without an identity, or that the
// Limiter refuses, gets its isError result (res) at once.
func (s *Server) begin(ctx context.Context, endpoint string, req mcp.CallToolRequest) (rep *observe.Report, id access.Identity, release func(), res *mcp.CallToolResult) {
	rep = &observe.Report{Start: time.Now(), Endpoint: endpoint, Header: traceHeaders(req.Header)}
	id, ok := access.IdentityFrom(ctx)
	if !ok {
		return rep, id, nil, s.finish(rep, http.StatusForbidden, "forbidden", "the call has no identity")
	}
	rep.Identity, rep.Authenticated = id, true
	release = func() {}
	if s.d.Limiter != nil {
		r, err := s.d.Limiter.Admit(ctx, id)
		if err != nil {
			return rep, id, nil, s.fail(rep, err)
		}
		if r != nil {
			release = r
		}
	}
	return rep, id, release, nil
}

// traceHeaders copies the trace context headers of a call that came over HTTP (nil over stdio).
func traceHeaders(h http.Header) func(string) string {
	var kept map[string]string
	for _, name := range []string{"traceparent", "tracestate", "baggage"} {
		if v := h.Get(name); v != "" {
			if kept == nil {
				kept = map[string]string{}
			}
			kept[name] = v
		}
	}
	if kept == nil {
		return nil
	}
	return func(name string) string { return kept[name] }
}

// fail reports a call that failed with err and returns its isError result: the code and message
// the HTTP API would answer with (answer.Classify).
func (s *Server) fail(rep *observe.Report, err error) *mcp.CallToolResult {
	p := answer.Classify(err, s.o.Redactor, s.o.Logger)
	return s.finish(rep, p.Status, p.Code, p.Message)
}

// finish reports a failed call and returns its isError result.
func (s *Server) finish(rep *observe.Report, status int, code, msg string) *mcp.CallToolResult {
	s.report(rep, status, code)
	res := mcp.NewToolResultError(code + ": " + msg)
	res.StructuredContent = map[string]any{"error": map[string]any{"code": code, "message": msg, "status": status}}
	return res
}

// report hands a finished call's report to the Observer.
func (s *Server) report(rep *observe.Report, status int, code string) {
	rep.Status, rep.ErrorCode, rep.Duration = status, code, time.Since(rep.Start)
	if s.d.Observer != nil {
		s.d.Observer.Observe(context.Background(), rep)
	}
}
