package mcpserver_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/ollama/ollama/api"

	"toolrouter/access"
	"toolrouter/auth"
	"toolrouter/internal/fakeollama"
	"toolrouter/internal/testmcp"
	"toolrouter/inventory"
	"toolrouter/mcpserver"
	"toolrouter/observe"
	"toolrouter/router"
	"toolrouter/server"
)

var quiet = slog.New(slog.DiscardHandler)

// Two orgs: acme may use only the calculator, beta every tool.
var (
	acme = access.Identity{Org: "acme", Name: "acme-key"}
	beta = access.Identity{Org: "beta", Name: "beta-key"}
)

// selectTool is a phase-1 answer choosing one tool whose output answers directly.
func selectTool(tool string) fakeollama.Reply {
	b, _ := json.Marshal(map[string]any{"reasoning": "because", "use_tool": true,
		"calls": []map[string]string{{"tool": tool, "task": "use " + tool}}, "needs_more": false, "direct": true})
	return fakeollama.Reply{Content: string(b), PromptTokens: 100, CompletionTokens: 10}
}

// recorder keeps the reports it is given.
type recorder struct {
	mu      sync.Mutex
	reports []observe.Report
}

func (r *recorder) Observe(_ context.Context, rep *observe.Report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reports = append(r.reports, *rep)
}

func (r *recorder) all() []observe.Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reports)
}

// env is toolrouter's MCP server over a real router, a fake model and real MCP servers: the
// built-in calculator and the in-process fault server, whose tool list a test may change.
type env struct {
	srv    *mcpserver.Server
	rt     *router.Router
	inv    *inventory.Manager
	faults *testmcp.Faults
	orgs   *access.Hierarchy
	obs    *recorder
}

func newEnv(t *testing.T, model *fakeollama.Server, expose bool) *env {
	t.Helper()
	return newEnvWith(t, model, mcpserver.Options{ExposeInventory: expose, Logger: quiet})
}

// newEnvWith is newEnv with the server's options o.
func newEnvWith(t *testing.T, model *fakeollama.Server, o mcpserver.Options) *env {
	t.Helper()
	faults := testmcp.NewFaults()
	inv := testmcp.Inventory(t, faults, inventory.Options{Logger: quiet, RefreshInterval: time.Millisecond})
	orgs, err := access.New(access.Orgs{"acme": {Allow: []string{"calculator"}}, "beta": {}})
	if err != nil {
		t.Fatal(err)
	}
	rt := router.New(model.Client(), inv, inv, router.Settings{Model: "fake", CallTimeout: 10 * time.Second, Access: orgs}, quiet)
	obs := &recorder{}
	srv := mcpserver.New(mcpserver.Deps{Router: rt, Inventory: inv, Access: orgs, Observer: obs}, o)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go srv.Watch(ctx)
	return &env{srv: srv, rt: rt, inv: inv, faults: faults, orgs: orgs, obs: obs}
}

// inProcess is an initialised in-process client; each call's context must carry its identity.
func (e *env) inProcess(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.NewInProcessClient(e.srv.MCPServer())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	initialize(t, c)
	return c
}

func initialize(t *testing.T, c *client.Client) {
	t.Helper()
	if err := c.Start(t.Context()); err != nil {
		t.Fatalf("starting the client: %v", err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
}

func toolNames(t *testing.T, ctx context.Context, c *client.Client) []string {
	t.Helper()
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

func callTool(ctx context.Context, c *client.Client, name string, args any) (*mcp.CallToolResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	return c.CallTool(ctx, req)
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// structured decodes a result's structured content into v.
func structured(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
}

// TestToolListPerIdentity: every caller sees route and answer; with the inventory exposed each
// also sees the tools its org may use, under their MCP names, with their schemas.
func TestToolListPerIdentity(t *testing.T) {
	for _, expose := range []bool{false, true} {
		e := newEnv(t, fakeollama.New(t), expose)
		c := e.inProcess(t)
		for _, tc := range []struct {
			id   access.Identity
			want func([]string) bool
		}{
			{acme, func(got []string) bool {
				if !expose {
					return slices.Equal(got, []string{"answer", "route"})
				}
				return slices.Contains(got, "calculator__add") && !slices.ContainsFunc(got, func(n string) bool { return strings.HasPrefix(n, "faults__") })
			}},
			{beta, func(got []string) bool {
				if !expose {
					return slices.Equal(got, []string{"answer", "route"})
				}
				return slices.Contains(got, "calculator__add") && slices.Contains(got, "faults__echo")
			}},
		} {
			got := toolNames(t, access.WithIdentity(t.Context(), tc.id), c)
			if !slices.Contains(got, "route") || !slices.Contains(got, "answer") || !tc.want(got) {
				t.Errorf("expose=%v %s: got tools %v", expose, tc.id, got)
			}
		}
		if got := toolNames(t, t.Context(), c); len(got) != 0 {
			t.Errorf("expose=%v: a request without an identity got tools %v, want none", expose, got)
		}
	}
	// An exposed tool keeps its description (with its qualified name) and input schema.
	e := newEnv(t, fakeollama.New(t), true)
	res, err := e.inProcess(t).ListTools(access.WithIdentity(t.Context(), beta), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(res.Tools, func(tool mcp.Tool) bool { return tool.Name == "faults__echo" })
	if i < 0 {
		t.Fatalf("faults__echo not listed")
	}
	echo := res.Tools[i]
	schema, _ := json.Marshal(echo.RawInputSchema)
	if len(echo.RawInputSchema) == 0 {
		schema, _ = json.Marshal(echo.InputSchema)
	}
	if !strings.Contains(echo.Description, "Echoes a message back.") || !strings.Contains(echo.Description, "faults.echo") || !strings.Contains(string(schema), `"message"`) {
		t.Errorf("got faults__echo %q with schema %s, want its description, qualified name and schema", echo.Description, schema)
	}
	// An exposed tool with an output schema keeps it, so a client may check the results it gets.
	i = slices.IndexFunc(res.Tools, func(tool mcp.Tool) bool { return tool.Name == "calculator__add" })
	add, ok := e.inv.Snapshot().Tool("calculator.add")
	if i < 0 || !ok || len(add.OutputSchema) == 0 {
		t.Fatalf("calculator__add listed at %d, in the inventory with output schema %v", i, add)
	}
	got, _ := json.Marshal(res.Tools[i].OutputSchema)
	if len(res.Tools[i].RawOutputSchema) > 0 {
		got = res.Tools[i].RawOutputSchema
	}
	var gotV, wantV any
	if json.Unmarshal(got, &gotV) != nil || json.Unmarshal(add.OutputSchema, &wantV) != nil || !reflect.DeepEqual(gotV, wantV) {
		t.Errorf("calculator__add listed with output schema %s, want the inventory's %s", got, add.OutputSchema)
	}
}

// TestRouteTool: tools/call route routes the query for the caller and returns the outcome as
// structured content and a summary as text; the call is reported to the observer.
func TestRouteTool(t *testing.T) {
	model := fakeollama.New(t, selectTool("calculator.add"), fakeollama.Reply{Content: `{"a": 2, "b": 40}`})
	e := newEnv(t, model, false)
	c := e.inProcess(t)
	res, err := callTool(access.WithIdentity(t.Context(), acme), c, "route", map[string]any{"query": "what is 2 plus 40?"})
	if err != nil {
		t.Fatalf("tools/call route: %v", err)
	}
	if res.IsError {
		t.Fatalf("got isError: %s", text(res))
	}
	var out router.Outcome
	structured(t, res, &out)
	if !out.UseTool || out.Server != "calculator" || out.Tool != "add" || out.Result == nil || out.Result.Text != "42" {
		t.Fatalf("got outcome use_tool=%v %s.%s result=%+v, want calculator.add answering 42", out.UseTool, out.Server, out.Tool, out.Result)
	}
	if out.Identity != "acme" {
		t.Errorf("got identity %q, want acme", out.Identity)
	}
	if s := text(res); !strings.Contains(s, "calculator.add") || !strings.Contains(s, "42") {
		t.Errorf("got summary %q, want the call and its result", s)
	}
	reps := e.obs.all()
	if len(reps) != 1 || reps[0].Endpoint != mcpserver.EndpointRoute || reps[0].Status != http.StatusOK || reps[0].Identity != acme || reps[0].Outcome == nil {
		t.Errorf("got reports %+v, want one mcp:route 200 for acme with its outcome", reps)
	}
}

// TestToolErrors: bad input and failures are isError results with the HTTP API's code and
// message, never a crash; a tool the caller may not use reads exactly as one that does not exist.
func TestToolErrors(t *testing.T) {
	e := newEnv(t, fakeollama.New(t), true)
	c := e.inProcess(t)
	ctx := access.WithIdentity(t.Context(), acme)
	for _, tc := range []struct {
		name, tool string
		args       any
		want       []string // in the isError text
	}{
		{"route without a query", "route", map[string]any{}, []string{"missing_query", "query is required"}},
		{"route with a caller", "route", map[string]any{"query": "x", "caller": "acme"}, []string{"unknown_field", "caller"}},
		{"route with a bad deadline", "route", map[string]any{"query": "x", "deadline_ms": 0}, []string{"bad_deadline"}},
		{"answer with a bad synthesize", "answer", map[string]any{"query": "x", "synthesize": "maybe"}, []string{"bad_synthesize"}},
		{"answer always without a council", "answer", map[string]any{"query": "x", "synthesize": "always"}, []string{"no_council"}},
		{"inventory tool with a wrong type", "calculator__add", map[string]any{"a": "two", "b": 40}, []string{"invalid_arguments", "/a", "input schema"}},
		{"inventory tool missing an argument", "calculator__add", map[string]any{"a": 2}, []string{"invalid_arguments", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := callTool(ctx, c, tc.tool, tc.args)
			if err != nil {
				t.Fatalf("got error %v, want an isError result", err)
			}
			got := text(res)
			if !res.IsError {
				t.Fatalf("got a result %q, want isError", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("got %q, want it to name %q", got, w)
				}
			}
		})
	}

	t.Run("hidden tool is unknown", func(t *testing.T) {
		_, hidden := callTool(ctx, c, "faults__echo", map[string]any{"message": "hi"})
		_, missing := callTool(ctx, c, "faults__nope", map[string]any{"message": "hi"})
		if hidden == nil || missing == nil {
			t.Fatalf("got errors %v and %v, want both refused", hidden, missing)
		}
		if h, m := strings.ReplaceAll(hidden.Error(), "faults__echo", "X"), strings.ReplaceAll(missing.Error(), "faults__nope", "X"); h != m {
			t.Errorf("a hidden tool reads %q, a missing one %q: want the same words", h, m)
		}
		res, err := callTool(access.WithIdentity(t.Context(), beta), c, "faults__echo", map[string]any{"message": "hi"})
		if err != nil || res.IsError || text(res) != "hi" {
			t.Errorf("beta calling faults__echo: got %v, %v; want hi", res, err)
		}
	})
}

// TestRouterCallHidden: Router.Call itself refuses a tool outside the identity's policy as
// unknown, whatever lists the tools.
func TestRouterCallHidden(t *testing.T) {
	e := newEnv(t, fakeollama.New(t), true)
	_, hidden := e.rt.Call(t.Context(), acme, "faults.echo", map[string]any{"message": "hi"})
	_, missing := e.rt.Call(t.Context(), acme, "faults.nope", map[string]any{"message": "hi"})
	if !errors.Is(hidden, router.ErrUnknownTool) || !errors.Is(missing, router.ErrUnknownTool) {
		t.Fatalf("got %v and %v, want both ErrUnknownTool", hidden, missing)
	}
	c, err := e.rt.Call(t.Context(), beta, "faults.echo", map[string]any{"message": "hi"})
	if err != nil || c.Error != nil || c.Result == nil || c.Result.Text != "hi" {
		t.Fatalf("got %+v, %v; want hi", c, err)
	}
}

// keyed is the HTTP API with two API keys, acme's and beta's, serving /mcp on a loopback listener.
type keyed struct {
	*env
	url              string
	acmeKey, betaKey string
	// stop shuts the server down and returns Serve's error; the test's end calls it too.
	stop func() error
}

func sha(k string) string {
	s := sha256.Sum256([]byte(k))
	return hex.EncodeToString(s[:])
}

func newKeyed(t *testing.T, model *fakeollama.Server) *keyed {
	t.Helper()
	return newKeyedWith(t, model, mcpserver.Options{ExposeInventory: true, Logger: quiet})
}

// newKeyedWith is newKeyed with the MCP server's options o.
func newKeyedWith(t *testing.T, model *fakeollama.Server, o mcpserver.Options) *keyed {
	t.Helper()
	e := newEnvWith(t, model, o)
	k := &keyed{env: e, acmeKey: "tr_acme_0123456789abcdef0123456789", betaKey: "tr_beta_0123456789abcdef0123456789"}
	authn, err := auth.New(t.Context(), auth.Config{Keys: []auth.Key{
		{Name: "acme-key", SHA256: sha(k.acmeKey), Org: "acme"},
		{Name: "beta-key", SHA256: sha(k.betaKey), Org: "beta"},
	}}, auth.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- server.Serve(ctx, ln, server.Deps{Router: e.rt, Inventory: e.inv, Model: model.Client(), Auth: authn,
			Access: e.orgs, MCP: e.srv.Handler()}, server.Options{Logger: quiet, ShutdownTimeout: 2 * time.Second})
	}()
	var once sync.Once
	var serveErr error
	k.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case serveErr = <-served:
			case <-time.After(5 * time.Second):
				serveErr = errors.New("Serve did not return within 5 s of its context's end")
			}
		})
		return serveErr
	}
	t.Cleanup(func() {
		if err := k.stop(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	k.url = "http://" + ln.Addr().String() + "/mcp"
	return k
}

func (k *keyed) client(t *testing.T, key string, opts ...transport.StreamableHTTPCOption) *client.Client {
	t.Helper()
	opts = append(opts, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + key}))
	c, err := client.NewStreamableHttpClient(k.url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	initialize(t, c)
	return c
}

// TestStreamableHTTP: /mcp on the API's listener: each key sees its org's tools, route answers
// through it, and a request without a credential is a 401.
func TestStreamableHTTP(t *testing.T) {
	model := fakeollama.New(t, selectTool("calculator.add"), fakeollama.Reply{Content: `{"a": 2, "b": 40}`})
	k := newKeyed(t, model)
	acmeTools := toolNames(t, t.Context(), k.client(t, k.acmeKey))
	betaTools := toolNames(t, t.Context(), k.client(t, k.betaKey))
	if slices.Contains(acmeTools, "faults__echo") || !slices.Contains(acmeTools, "calculator__add") || !slices.Contains(acmeTools, "route") {
		t.Errorf("acme's key sees %v, want route, answer and the calculator only", acmeTools)
	}
	if !slices.Contains(betaTools, "faults__echo") || !slices.Contains(betaTools, "calculator__add") {
		t.Errorf("beta's key sees %v, want every tool", betaTools)
	}

	c := k.client(t, k.acmeKey)
	res, err := callTool(t.Context(), c, "route", map[string]any{"query": "what is 2 plus 40?"})
	if err != nil || res.IsError {
		t.Fatalf("tools/call route: %v %v", err, res)
	}
	var out router.Outcome
	structured(t, res, &out)
	if out.Result == nil || out.Result.Text != "42" || out.Identity != "acme" {
		t.Errorf("got outcome result=%+v identity=%q, want 42 for acme", out.Result, out.Identity)
	}
	res, err = callTool(t.Context(), c, "calculator__add", map[string]any{"a": "x", "b": 1})
	if err != nil || !res.IsError || !strings.Contains(text(res), "invalid_arguments") {
		t.Errorf("invalid arguments over HTTP: got %v, %v; want isError invalid_arguments", res, err)
	}

	// The call's report carries the request's trace context, for tracing observers.
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	traced, err := client.NewStreamableHttpClient(k.url, transport.WithHTTPHeaders(map[string]string{
		"Authorization": "Bearer " + k.acmeKey, "traceparent": parent}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = traced.Close() })
	initialize(t, traced)
	if res, err := callTool(t.Context(), traced, "calculator__add", map[string]any{"a": 1, "b": 2}); err != nil || res.IsError {
		t.Fatalf("calculator__add: %v %v", res, err)
	}
	reps := k.obs.all()
	if last := reps[len(reps)-1]; last.Header == nil || last.Header("traceparent") != parent || last.Identity != acme {
		t.Errorf("the call's report has no traceparent %q (or not acme's identity): %+v", parent, last)
	}

	for _, method := range []string{http.MethodPost, http.MethodGet} {
		req, _ := http.NewRequestWithContext(t.Context(), method, k.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "missing_credential") || resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s without a credential: got %d %s, want 401 missing_credential with WWW-Authenticate", method, resp.StatusCode, body)
		}
	}
}

// TestListChanged: a tool added to, then removed from, a backing server reaches a connected
// session as notifications/tools/list_changed, and tools/list follows: on the GET stream of the
// protocol versions before 2026-07-28 (what most MCP clients speak) and on a subscriptions/listen
// stream after.
func TestListChanged(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modern bool
	}{{"get stream", false}, {"subscriptions/listen", true}} {
		t.Run(tc.name, func(t *testing.T) {
			k := newKeyed(t, fakeollama.New(t))
			notes := make(chan note, 64)
			var c *client.Client
			if tc.modern {
				c = k.client(t, k.betaKey)
			} else {
				//lint:ignore SA1019 the legacy GET stream is what MCP clients speak today
				c = k.client(t, k.betaKey, transport.WithContinuousListening())
			}
			c.OnNotification(func(n mcp.JSONRPCNotification) {
				_, probe := n.Params.AdditionalFields["probe"]
				select {
				case notes <- note{n.Method, probe}:
				default:
				}
			})
			if tc.modern {
				stop, err := c.ListenAsync(t.Context(), mcp.SubscriptionFilter{ToolsListChanged: true}, func(err error) { t.Errorf("listen: %v", err) })
				if err != nil {
					t.Fatalf("subscriptions/listen: %v", err)
				}
				t.Cleanup(stop)
			}
			if got := toolNames(t, t.Context(), c); slices.Contains(got, "faults__added") {
				t.Fatalf("got %v before the tool was added", got)
			}
			waitNote := func(method, what string) {
				t.Helper()
				deadline := time.After(10 * time.Second)
				for {
					select {
					case n := <-notes:
						if n.method == method && !n.probe {
							return
						}
					case <-deadline:
						t.Fatalf("no %s within 10 s of %s", method, what)
					}
				}
			}
			// The stream opens in the background: a probe (a list_changed the test marks) is sent
			// until one arrives, so that the inventory changes once the stream is there.
			listening := time.After(10 * time.Second)
			for ready := false; !ready; {
				k.srv.MCPServer().SendNotificationToAllClients(string(mcp.MethodNotificationToolsListChanged), map[string]any{"probe": true})
				select {
				case <-notes:
					ready = true
				case <-time.After(20 * time.Millisecond):
				case <-listening:
					t.Fatal("the stream did not open within 10 s")
				}
			}
			changed := string(mcp.MethodNotificationToolsListChanged)
			k.faults.AddTool(mcp.NewTool("added", mcp.WithDescription("added later")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText("new"), nil
			})
			waitNote(changed, "adding a tool")
			waitTools(t, c, func(got []string) bool { return slices.Contains(got, "faults__added") }, "faults__added listed")
			k.faults.DeleteTools("added")
			waitNote(changed, "removing a tool")
			waitTools(t, c, func(got []string) bool { return !slices.Contains(got, "faults__added") }, "faults__added gone")
		})
	}
}

// note is a notification a client received; probe marks the test's own.
type note struct {
	method string
	probe  bool
}

// waitTools polls tools/list until cond holds, for 10 s.
func waitTools(t *testing.T, c *client.Client, cond func([]string) bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := toolNames(t, t.Context(), c)
		if cond(got) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s; tools are %v", what, got)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
}

// limiter admits calls, or refuses them with refuse, counting admissions and releases.
type limiter struct {
	refuse             error
	mu                 sync.Mutex
	admitted, released int
}

func (l *limiter) Admit(context.Context, access.Identity) (func(), error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.refuse != nil {
		return nil, l.refuse
	}
	l.admitted++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.released++
	}, nil
}

// TestLimiterAndReports: each tools/call is admitted by the limiter and released once answered;
// a refused call runs nothing and is an isError result with the HTTP API's code. Every call is
// reported with its endpoint, status and error code.
func TestLimiterAndReports(t *testing.T) {
	model := fakeollama.New(t, selectTool("calculator.add"), fakeollama.Reply{Content: `{"a": 2, "b": 40}`})
	e := newEnv(t, model, true)
	for _, tc := range []struct {
		name       string
		lim        *limiter
		tool       string
		args       map[string]any
		wantStatus int
		wantCode   string
		endpoint   string
	}{
		{"refused", &limiter{refuse: fmt.Errorf("%w: over the limit", auth.ErrForbidden)}, "route", map[string]any{"query": "2+40"}, http.StatusForbidden, "forbidden", mcpserver.EndpointRoute},
		{"admitted route", &limiter{}, "route", map[string]any{"query": "2+40"}, http.StatusOK, "", mcpserver.EndpointRoute},
		{"admitted answer, bad input", &limiter{}, "answer", map[string]any{"query": ""}, http.StatusBadRequest, "empty_query", mcpserver.EndpointAnswer},
		{"admitted call, bad arguments", &limiter{}, "calculator__add", map[string]any{"a": 1}, http.StatusBadRequest, "invalid_arguments", mcpserver.EndpointCall},
		{"admitted call", &limiter{}, "calculator__add", map[string]any{"a": 1, "b": 2}, http.StatusOK, "", mcpserver.EndpointCall},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := &recorder{}
			srv := mcpserver.New(mcpserver.Deps{Router: e.rt, Inventory: e.inv, Access: e.orgs, Limiter: tc.lim, Observer: obs},
				mcpserver.Options{ExposeInventory: true, Logger: quiet})
			c, err := client.NewInProcessClient(srv.MCPServer())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			initialize(t, c)
			before := len(model.Requests())
			res, err := callTool(access.WithIdentity(t.Context(), acme), c, tc.tool, tc.args)
			if err != nil {
				t.Fatalf("tools/call: %v", err)
			}
			if res.IsError != (tc.wantCode != "") || (tc.wantCode != "" && !strings.HasPrefix(text(res), tc.wantCode+": ")) {
				t.Errorf("got isError=%v %q, want code %q", res.IsError, text(res), tc.wantCode)
			}
			if tc.lim.refuse != nil && len(model.Requests()) != before {
				t.Errorf("a refused call reached the model")
			}
			if tc.lim.admitted != tc.lim.released || (tc.lim.refuse == nil && tc.lim.admitted != 1) {
				t.Errorf("got %d admitted, %d released; want one each (none when refused)", tc.lim.admitted, tc.lim.released)
			}
			reps := obs.all()
			if len(reps) != 1 {
				t.Fatalf("got %d reports, want 1", len(reps))
			}
			r := reps[0]
			if r.Endpoint != tc.endpoint || r.Status != tc.wantStatus || r.ErrorCode != tc.wantCode || r.Identity != acme || !r.Authenticated {
				t.Errorf("got report %s %d %q for %s, want %s %d %q for acme", r.Endpoint, r.Status, r.ErrorCode, r.Identity, tc.endpoint, tc.wantStatus, tc.wantCode)
			}
			if tc.endpoint == mcpserver.EndpointCall && tc.wantCode == "" && (r.Outcome == nil || len(r.Outcome.Calls) != 1) {
				t.Errorf("a direct call's report has outcome %+v, want its one call", r.Outcome)
			}
		})
	}
}

// TestShutdownDuringCall: a route call in flight when the server shuts down gets the HTTP API's
// 503 shutting_down (mcp-go writes nothing for a request whose context ended), is reported so,
// and the shutdown ends within http.shutdown_timeout.
func TestShutdownDuringCall(t *testing.T) {
	started := make(chan struct{}, 1)
	model := fakeollama.NewFunc(t, func(api.ChatRequest) fakeollama.Reply {
		select {
		case started <- struct{}{}:
		default:
		}
		return fakeollama.Reply{Hang: true}
	})
	k := newKeyed(t, model)
	c := k.client(t, k.acmeKey)
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		res, err := callTool(context.Background(), c, "route", map[string]any{"query": "what is 2 plus 40?"})
		answered <- answer{res, err}
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the route call did not reach the model within 10 s")
	}
	start := time.Now()
	if err := k.stop(); err != nil {
		t.Errorf("Serve: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the shutdown took %s, want it within http.shutdown_timeout (2 s)", d)
	}
	select {
	case a := <-answered:
		if a.err == nil || !strings.Contains(a.err.Error(), "503") || !strings.Contains(a.err.Error(), "shutting_down") {
			t.Errorf("got %v, %v; want the API's 503 shutting_down", a.res, a.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call had no answer within 5 s of the shutdown")
	}
	reps := k.obs.all()
	if len(reps) == 0 || reps[len(reps)-1].ErrorCode != "shutting_down" || reps[len(reps)-1].Status != http.StatusServiceUnavailable {
		t.Errorf("got reports %+v, want the call reported 503 shutting_down", reps)
	}
}
