package inventory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"toolrouter/config"
	"toolrouter/internal/testmcp"
	"toolrouter/inventory"
	"toolrouter/inventory/builtin"
	"toolrouter/schema"
)

const envServeBuiltin = "TOOLROUTER_TEST_SERVE_BUILTIN"
const envPIDFile = "TOOLROUTER_TEST_PID_FILE"

func TestMain(m *testing.M) {
	if f := os.Getenv(envPIDFile); f != "" {
		_ = os.WriteFile(f, []byte(fmt.Sprint(os.Getpid())), 0o600)
	}
	testmcp.ServeIfAsked()
	if name := os.Getenv(envServeBuiltin); name != "" {
		if err := builtin.ServeStdio(context.Background(), name, nil); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var quiet = slog.New(slog.DiscardHandler)

func fastBackoff(int) time.Duration { return 10 * time.Millisecond }

func timeouts(s config.Server) config.Server {
	s.ConnectTimeout = config.Duration(20 * time.Second)
	s.CallTimeout = config.Duration(20 * time.Second)
	return s
}

// selfStdio is a server served over stdio by this test binary, re-executed.
func selfStdio(env map[string]string) config.Server {
	exe, _ := os.Executable()
	return timeouts(config.Server{Transport: config.TransportStdio, Command: exe, Args: []string{"-test.run=^$"}, Env: env})
}

func inProcess(name string) config.Server {
	return timeouts(config.Server{Transport: config.TransportBuiltin, Builtin: name})
}

func start(t *testing.T, servers map[string]config.Server, opts inventory.Options) *inventory.Manager {
	t.Helper()
	opts.Logger = quiet
	if opts.Backoff == nil {
		opts.Backoff = fastBackoff
	}
	m := inventory.New(servers, opts)
	m.Start(context.Background())
	t.Cleanup(m.Close)
	return m
}

func wait(t *testing.T, m *inventory.Manager, what string, cond func(*inventory.Snapshot) bool) *inventory.Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := m.Wait(ctx, cond)
	if err != nil {
		b, _ := json.MarshalIndent(s.Export(), "", " ")
		t.Fatalf("waiting for %s: %v; inventory:\n%s", what, err, b)
	}
	return s
}

func server_(s *inventory.Snapshot, name string) inventory.Server {
	for _, sv := range s.Servers {
		if sv.Name == name {
			return sv
		}
	}
	return inventory.Server{}
}

func up(name string) func(*inventory.Snapshot) bool {
	return func(s *inventory.Snapshot) bool { return server_(s, name).Status == inventory.StateUp }
}

func call(t *testing.T, m *inventory.Manager, srv, tool string, args map[string]any) string {
	t.Helper()
	res, err := m.CallTool(context.Background(), srv, tool, args)
	if err != nil {
		t.Fatalf("CallTool %s.%s: %v", srv, tool, err)
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// TestTransports lists and calls the built-in calculator in-process, over stdio, over streamable
// HTTP and over SSE.
func TestTransports(t *testing.T) {
	httpSrv := httptest.NewServer(must(builtin.Handler("calculator")))
	t.Cleanup(httpSrv.Close)
	calc := must(builtin.New("calculator", nil))
	sseSrv := httptest.NewUnstartedServer(nil)
	sseSrv.Config.Handler = server.NewSSEServer(calc, server.WithBaseURL("http://"+sseSrv.Listener.Addr().String()))
	sseSrv.Start()
	t.Cleanup(sseSrv.Close)
	tests := []struct {
		name string
		cfg  config.Server
	}{
		{"in-process", inProcess("calculator")},
		{"stdio", selfStdio(map[string]string{envServeBuiltin: "calculator"})},
		{"streamable-http", timeouts(config.Server{Transport: config.TransportStreamableHTTP, URL: httpSrv.URL})},
		{"sse", timeouts(config.Server{Transport: config.TransportSSE, URL: sseSrv.URL + "/sse"})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := start(t, map[string]config.Server{"calc": tc.cfg}, inventory.Options{})
			s := m.Snapshot()
			if sv := server_(s, "calc"); sv.Status != inventory.StateUp {
				t.Fatalf("got status %s (%s), want up", sv.Status, sv.Error)
			}
			tool, ok := s.Tool("calc.add")
			if !ok || !tool.Available || tool.Schema == nil || len(tool.Format) == 0 {
				t.Fatalf("got calc.add %+v, want an available compiled tool", tool)
			}
			if got := call(t, m, "calc", "add", map[string]any{"a": 2, "b": 3}); got != "5" {
				t.Errorf("add(2,3) = %q, want 5", got)
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestRawSchemaKept shows mcp-go's client-side Tool struct drops schema keywords, and that the
// inventory keeps the schema exactly as the server sent it.
func TestRawSchemaKept(t *testing.T) {
	faults := testmcp.NewFaults()
	// What mcp-go's own client sees.
	c, err := client.NewInProcessClient(faults.MCPServer)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	listed, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range listed.Tools {
		if tool.Name != "strict" {
			continue
		}
		b, _ := json.Marshal(tool.InputSchema)
		if strings.Contains(string(b), "anyOf") || strings.Contains(string(b), "minProperties") {
			t.Fatalf("mcp-go's Tool kept the keywords (%s): the inventory's own listing may no longer be needed", b)
		}
	}

	m := start(t, map[string]config.Server{"faults": inProcess("faults")},
		inventory.Options{InProcess: map[string]*server.MCPServer{"faults": faults.MCPServer}})
	tool, ok := m.Snapshot().Tool("faults.strict")
	if !ok {
		t.Fatal("faults.strict not listed")
	}
	var got, want any
	_ = json.Unmarshal(tool.InputSchema, &got)
	_ = json.Unmarshal([]byte(testmcp.RawSchema), &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got schema %s, want %s", tool.InputSchema, testmcp.RawSchema)
	}
	if _, err := tool.Schema.Validate([]byte(`{}`)); err == nil {
		t.Error("compiled schema accepted {}, want minProperties/anyOf enforced")
	}
}

func TestParametersInProposalFormat(t *testing.T) {
	faults := testmcp.NewFaults()
	m := start(t, map[string]config.Server{"faults": inProcess("faults")},
		inventory.Options{InProcess: map[string]*server.MCPServer{"faults": faults.MCPServer}})
	tool, _ := m.Snapshot().Tool("faults.strict")
	want := []inventory.Param{
		{Name: "id", Type: "integer", Description: "Record id"},
		{Name: "name", Type: "string", Description: "Record name"},
	}
	if !reflect.DeepEqual(tool.Parameters, want) {
		t.Errorf("got parameters %+v, want %+v", tool.Parameters, want)
	}
	b, _ := json.Marshal(m.Snapshot().Export())
	for _, s := range []string{`"name":"faults.strict"`, `"input_schema":`, `"status":"up"`, `"parameters":[`} {
		if !strings.Contains(string(b), s) {
			t.Errorf("export lacks %s: %s", s, b)
		}
	}
}

// TestParameterFormats: a parameter's schema format (its own, or its anyOf alternatives') is in
// the proposal's format, as the ranker reads it to tell what kinds of values a tool takes.
func TestParameterFormats(t *testing.T) {
	tool, err := inventory.ClientTool("fetch", "Fetch a page.", json.RawMessage(`{"type":"object","properties":{
		"url":{"type":"string","format":"uri"},
		"since":{"anyOf":[{"type":"string","format":"date"},{"type":"string","format":"date-time"},{"type":"null"}]},
		"query":{"type":"string"}}}`), schema.Bounds{MaxBytes: 1 << 16, MaxDepth: 32})
	if err != nil {
		t.Fatal(err)
	}
	want := []inventory.Param{
		{Name: "url", Type: "string", Format: "uri"},
		{Name: "since", Type: "string|string|null", Format: "date|date-time"},
		{Name: "query", Type: "string"},
	}
	if !reflect.DeepEqual(tool.Parameters, want) {
		t.Errorf("got parameters %+v, want %+v", tool.Parameters, want)
	}
	b, _ := json.Marshal(tool.Parameters)
	if !strings.Contains(string(b), `"format":"uri"`) || strings.Count(string(b), `"format"`) != 2 {
		t.Errorf("parameters as JSON: %s, want a format where the schema gives one and none elsewhere", b)
	}
}

func TestPaginationAndFilters(t *testing.T) {
	srv := server.NewMCPServer("many", "1", server.WithToolCapabilities(true), server.WithPaginationLimit(2))
	for i := range 7 {
		srv.AddTool(mcp.NewTool(fmt.Sprintf("t%d", i), mcp.WithDescription("tool")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		})
	}
	tests := []struct {
		name   string
		filter config.ToolFilter
		want   int
	}{
		{"all pages", config.ToolFilter{}, 7},
		{"allow", config.ToolFilter{Allow: []string{"t1", "t2"}}, 2},
		{"deny glob", config.ToolFilter{Deny: []string{"t[0-3]"}}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := inProcess("many")
			cfg.Tools = tc.filter
			m := start(t, map[string]config.Server{"many": cfg}, inventory.Options{InProcess: map[string]*server.MCPServer{"many": srv}})
			if got := len(m.Snapshot().Available()); got != tc.want {
				t.Errorf("got %d tools, want %d", got, tc.want)
			}
		})
	}
}

func TestBadSchemaMakesOneToolUnavailable(t *testing.T) {
	srv := server.NewMCPServer("mixed", "1", server.WithToolCapabilities(true))
	ok := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	}
	srv.AddTool(mcp.NewToolWithRawSchema("remote", "refs a remote schema",
		json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"http://example.invalid/a.json"}}}`)), ok)
	srv.AddTool(mcp.NewTool("fine", mcp.WithDescription("fine")), ok)
	m := start(t, map[string]config.Server{"mixed": inProcess("mixed")}, inventory.Options{InProcess: map[string]*server.MCPServer{"mixed": srv}})
	s := m.Snapshot()
	if st := server_(s, "mixed").Status; st != inventory.StateUp {
		t.Fatalf("got server %s, want up", st)
	}
	bad, _ := s.Tool("mixed.remote")
	if bad.Available || bad.Unavailable == "" {
		t.Errorf("got remote available=%v reason=%q, want unavailable with a reason", bad.Available, bad.Unavailable)
	}
	if got := s.Available(); len(got) != 1 || got[0].Qualified != "mixed.fine" {
		t.Errorf("got available %v, want only mixed.fine", got)
	}
}

func TestListChangedRefreshes(t *testing.T) {
	faults := testmcp.NewFaults()
	m := start(t, map[string]config.Server{"faults": inProcess("faults")},
		inventory.Options{InProcess: map[string]*server.MCPServer{"faults": faults.MCPServer}})
	before := m.Snapshot().Version
	faults.AddTool(mcp.NewTool("added", mcp.WithDescription("added later")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("new"), nil
	})
	s := wait(t, m, "the added tool", func(s *inventory.Snapshot) bool { _, ok := s.Tool("faults.added"); return ok })
	if s.Version <= before {
		t.Errorf("got version %d, want > %d", s.Version, before)
	}
	faults.DeleteTools("added")
	wait(t, m, "the deleted tool to go", func(s *inventory.Snapshot) bool { _, ok := s.Tool("faults.added"); return !ok })
}

func TestDownServerIsolatedAndRetried(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "started-once")
	exe, _ := os.Executable()
	// Fails on its first start, serves on the next.
	script := fmt.Sprintf(`if [ ! -e %q ]; then touch %q; echo "boom: first start fails" >&2; exit 1; fi; exec %q -test.run='^$'`, marker, marker, exe)
	flaky := timeouts(config.Server{Transport: config.TransportStdio, Command: "sh", Args: []string{"-c", script},
		Env: map[string]string{testmcp.EnvServe: "1"}})
	missing := timeouts(config.Server{Transport: config.TransportStdio, Command: filepath.Join(dir, "no-such-server")})
	m := start(t, map[string]config.Server{"flaky": flaky, "missing": missing, "calc": inProcess("calculator")}, inventory.Options{})

	s := m.Snapshot()
	if st := server_(s, "calc").Status; st != inventory.StateUp {
		t.Errorf("calc is %s, want up despite the others", st)
	}
	miss := server_(s, "missing")
	if miss.Status != inventory.StateDown || !strings.Contains(miss.Error, "no-such-server") {
		t.Errorf("got missing %s %q, want down naming the command", miss.Status, miss.Error)
	}
	wait(t, m, "flaky to come up on retry", up("flaky"))
	if got := call(t, m, "flaky", "echo", map[string]any{"message": "hi"}); got != "hi" {
		t.Errorf("echo = %q, want hi", got)
	}
	if _, err := m.CallTool(context.Background(), "missing", "x", nil); !errors.Is(err, inventory.ErrServerDown) {
		t.Errorf("got %v, want ErrServerDown", err)
	}
	if _, err := m.CallTool(context.Background(), "nope", "x", nil); !errors.Is(err, inventory.ErrUnknownServer) {
		t.Errorf("got %v, want ErrUnknownServer", err)
	}
}

func TestFirstFailureShowsStderr(t *testing.T) {
	cfg := timeouts(config.Server{Transport: config.TransportStdio, Command: "sh", Args: []string{"-c", `echo "cannot open database" >&2; echo "at db.js:1" >&2; exit 2`}})
	m := start(t, map[string]config.Server{"bad": cfg}, inventory.Options{Backoff: func(int) time.Duration { return time.Hour }})
	if e := server_(m.Snapshot(), "bad").Error; !strings.Contains(e, "cannot open database; at db.js:1") || strings.ContainsAny(e, "\r\n") {
		t.Errorf("got error %q, want the server's stderr in it, on one line", e)
	}
}

func TestCrashMidCallRestarts(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	m := start(t, map[string]config.Server{"faults": selfStdio(map[string]string{testmcp.EnvServe: "1", envPIDFile: pidFile})}, inventory.Options{})
	if st := server_(m.Snapshot(), "faults"); st.Status != inventory.StateUp {
		t.Fatalf("faults is %s (%s), want up", st.Status, st.Error)
	}
	firstPID, _ := os.ReadFile(pidFile)
	_, err := m.CallTool(context.Background(), "faults", "crash", nil)
	if err == nil {
		t.Fatal("crash call succeeded, want a transport error")
	}
	s := wait(t, m, "restart", func(s *inventory.Snapshot) bool {
		sv := server_(s, "faults")
		return sv.Status == inventory.StateUp && sv.Restarts >= 1
	})
	if got := call(t, m, "faults", "echo", map[string]any{"message": "back"}); got != "back" {
		t.Errorf("echo after restart = %q, want back", got)
	}
	secondPID, _ := os.ReadFile(pidFile)
	if string(firstPID) == string(secondPID) {
		t.Errorf("pid unchanged (%s): not restarted", firstPID)
	}
	_ = s
}

func TestHungCallHitsDeadline(t *testing.T) {
	cfg := selfStdio(map[string]string{testmcp.EnvServe: "1"})
	cfg.CallTimeout = config.Duration(100 * time.Millisecond)
	m := start(t, map[string]config.Server{"faults": cfg}, inventory.Options{})
	_, err := m.CallTool(context.Background(), "faults", "hang", nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want a deadline error", err)
	}
	// The session survives a timed-out call.
	if got := call(t, m, "faults", "echo", map[string]any{"message": "still here"}); got != "still here" {
		t.Errorf("echo = %q", got)
	}
}

func TestCloseStopsSubprocess(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	m := inventory.New(map[string]config.Server{"faults": selfStdio(map[string]string{testmcp.EnvServe: "1", envPIDFile: pidFile})},
		inventory.Options{Logger: quiet})
	m.Start(context.Background())
	var pid int
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Sscan(string(b), &pid)
	m.Close()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process %d still exists after Close (kill 0: %v)", pid, err)
	}
}

// TestDisplayName: a server is listed under its id with the name its configuration gives it, or
// its id when the configuration gives none other.
func TestDisplayName(t *testing.T) {
	m := inventory.New(map[string]config.Server{
		"my_clock":   {Transport: config.TransportBuiltin, Builtin: "clock", DisplayName: "My Clock"},
		"calculator": {Transport: config.TransportBuiltin},
	}, inventory.Options{})
	got := map[string]string{}
	for _, s := range m.Snapshot().Export().Servers {
		got[s.Name] = s.DisplayName
	}
	if want := map[string]string{"my_clock": "My Clock", "calculator": "calculator"}; !reflect.DeepEqual(got, want) {
		t.Errorf("display names: got %v, want %v", got, want)
	}
}
