package router_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/ollama/ollama/api"

	"toolrouter/config"
	"toolrouter/internal/fakeollama"
	"toolrouter/internal/testmcp"
	"toolrouter/inventory"
	"toolrouter/provider"
	"toolrouter/router"
)

// env is a router wired to a fake model and real MCP servers: the built-in calculator and the
// in-process fault server.
type env struct {
	router *router.Router
	model  *fakeollama.Server
	faults *testmcp.Faults
	inv    *inventory.Manager
}

func newEnv(t *testing.T, set router.Settings, replies ...fakeollama.Reply) *env {
	t.Helper()
	model := fakeollama.New(t, replies...)
	return newEnvWith(t, set, model)
}

func builtinServer(name string) config.Server {
	return config.Server{Transport: config.TransportBuiltin, Builtin: name, Purpose: name + " tools",
		ConnectTimeout: config.Duration(60 * time.Second), CallTimeout: config.Duration(10 * time.Second)}
}

// newEnvWith wires the router to model, the calculator, the fault server and any extra servers.
func newEnvWith(t testing.TB, set router.Settings, model *fakeollama.Server, extra ...map[string]config.Server) *env {
	t.Helper()
	faults := testmcp.NewFaults()
	servers := map[string]config.Server{"calculator": builtinServer("calculator"), "faults": builtinServer("faults")}
	for _, m := range extra {
		for k, v := range m {
			servers[k] = v
		}
	}
	inv := inventory.New(servers, inventory.Options{Logger: quiet, InProcess: map[string]*server.MCPServer{"faults": faults.MCPServer}})
	inv.Start(context.Background())
	t.Cleanup(inv.Close)
	if set.Model == "" {
		set.Model = "fake"
	}
	if set.CallTimeout == 0 {
		set.CallTimeout = 10 * time.Second
	}
	return &env{router: router.New(model.Client(), inv, inv, set, quiet), model: model, faults: faults, inv: inv}
}

var quiet = slog.New(slog.DiscardHandler)

// sel is a phase-1 answer choosing tool (or "none") with nothing more needed after it.
func sel(tool string, direct bool) fakeollama.Reply {
	if tool == "none" {
		return choose(false, direct)
	}
	return choose(false, direct, tool)
}

// choose is a phase-1 answer choosing tools to run in parallel; needsMore asks for another round.
func choose(needsMore, direct bool, tools ...string) fakeollama.Reply {
	calls := []map[string]string{}
	for _, t := range tools {
		calls = append(calls, map[string]string{"tool": t, "task": "use " + t})
	}
	b, _ := json.Marshal(map[string]any{"reasoning": "because", "use_tool": len(tools) > 0, "calls": calls,
		"needs_more": needsMore, "direct": direct})
	return fakeollama.Reply{Content: string(b), PromptTokens: 100, CompletionTokens: 10}
}

func args(s string) fakeollama.Reply {
	return fakeollama.Reply{Content: s, PromptTokens: 50, CompletionTokens: 5}
}

func TestRouteHappyPath(t *testing.T) {
	e := newEnv(t, router.Settings{RepairAttempts: 2}, sel("calculator.add", true), args(`{"a": 2, "b": 40}`))
	out, err := e.router.Route(context.Background(), router.Request{Query: "what is 2 plus 40?"})
	if err != nil {
		t.Fatalf("Route: %v", err)
	}
	if !out.UseTool || out.Server != "calculator" || out.Tool != "add" {
		t.Fatalf("got use_tool=%v %s.%s, want calculator.add", out.UseTool, out.Server, out.Tool)
	}
	if out.Result == nil || out.Result.Text != "42" || out.Result.IsError {
		t.Fatalf("got result %+v, want text 42", out.Result)
	}
	if !out.Direct || out.Error != nil || out.Degraded != "" {
		t.Errorf("got direct=%v error=%v degraded=%q, want direct and no error", out.Direct, out.Error, out.Degraded)
	}
	// The fake reports no cached count: every prompt token counts as uncached.
	want := router.Usage{LLMCalls: 2, PromptTokens: 150, CompletionTokens: 15, Breakdown: provider.Breakdown{UncachedTokens: 150}}
	if out.Usage != want {
		t.Errorf("got usage %+v, want %+v", out.Usage, want)
	}
	if out.Timings.Total <= 0 || out.Timings.Total < out.Timings.Select || out.Timings.Arguments <= 0 {
		t.Errorf("got timings %+v, want arguments > 0 and total > 0 and ≥ select", out.Timings)
	}

	reqs := e.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("got %d model requests, want 2", len(reqs))
	}
	// Phase 1: static inventory in the system message, the query last, no tools with format.
	p1 := reqs[0]
	if p1.Stream == nil || *p1.Stream {
		t.Errorf("phase 1 stream = %v, want false", p1.Stream)
	}
	if len(p1.Tools) != 0 {
		t.Errorf("phase 1 sent %d tools alongside format, want 0", len(p1.Tools))
	}
	if p1.Messages[0].Role != "system" || !strings.Contains(p1.Messages[0].Content, "calculator.add") ||
		!strings.Contains(p1.Messages[0].Content, "faults.echo") {
		t.Errorf("phase 1 system prompt lacks the inventory:\n%s", p1.Messages[0].Content)
	}
	if last := p1.Messages[len(p1.Messages)-1]; last.Role != "user" || last.Content != "what is 2 plus 40?" {
		t.Errorf("phase 1 last message = %+v, want the query", last)
	}
	enum := formatEnum(t, p1.Format)
	for _, name := range []string{"calculator.add", "calculator.evaluate", "faults.echo", "none"} {
		if !contains(enum, name) {
			t.Errorf("phase 1 format enum %v lacks %q", enum, name)
		}
	}
	// Phase 2: the chosen tool's parameters, constrained by its derived schema.
	p2 := reqs[1]
	if !strings.Contains(p2.Messages[0].Content, "Tool: calculator.add") || !strings.Contains(p2.Messages[0].Content, "what is 2 plus 40?") {
		t.Errorf("phase 2 prompt lacks tool or query:\n%s", p2.Messages[0].Content)
	}
	var format map[string]any
	if err := json.Unmarshal(p2.Format, &format); err != nil || format["type"] != "object" {
		t.Errorf("phase 2 format = %s, want an object schema", p2.Format)
	}
}

func formatEnum(t *testing.T, format json.RawMessage) []string {
	t.Helper()
	enum, err := selectionEnum(format)
	if err != nil {
		t.Fatalf("format %s: %v", format, err)
	}
	return enum
}

// selectionEnum is the tool enum of a phase-1 format schema: the calls' items are the tool names
// (reasoning "none" and "brief") or objects naming them ("full").
func selectionEnum(format json.RawMessage) ([]string, error) {
	var f struct {
		Properties struct {
			Calls struct {
				Items struct {
					Enum       []string `json:"enum"`
					Properties struct {
						Tool struct {
							Enum []string `json:"enum"`
						} `json:"tool"`
					} `json:"properties"`
				} `json:"items"`
			} `json:"calls"`
		} `json:"properties"`
	}
	err := json.Unmarshal(format, &f)
	if it := f.Properties.Calls.Items; it.Enum != nil {
		return it.Enum, err
	}
	return f.Properties.Calls.Items.Properties.Tool.Enum, err
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestRouteNoToolCostsOneCall(t *testing.T) {
	e := newEnv(t, router.Settings{}, sel("none", false))
	out, err := e.router.Route(context.Background(), router.Request{Query: "What is the capital of France?"})
	if err != nil {
		t.Fatal(err)
	}
	if out.UseTool || out.Result != nil || out.Degraded != "" {
		t.Errorf("got %+v, want no tool and no degradation", out)
	}
	if out.Usage.LLMCalls != 1 {
		t.Errorf("got %d model calls, want 1", out.Usage.LLMCalls)
	}
}

func TestRouteDegradesOnModelTrouble(t *testing.T) {
	tests := []struct {
		name  string
		reply fakeollama.Reply
		want  string // in the degraded reason
	}{
		{"invalid JSON", fakeollama.Reply{Content: "I think you should use the calculator"}, "not the selection JSON"},
		{"unknown tool", sel("weather.forecast", false), `"weather.forecast"`},
		{"server error", fakeollama.Reply{Status: http.StatusInternalServerError, Error: "out of memory"}, "out of memory"},
		{"model not found", fakeollama.Reply{Status: http.StatusNotFound, Error: `model "fake" not found, try pulling it first`}, "not found"},
		{"stream ends early", fakeollama.Reply{NoDone: true}, "ended before it was done"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, router.Settings{}, tc.reply)
			out, err := e.router.Route(context.Background(), router.Request{Query: "add 1 and 2"})
			if err != nil {
				t.Fatalf("Route: %v, want a degraded outcome", err)
			}
			if out.UseTool || !strings.Contains(out.Degraded, tc.want) {
				t.Errorf("got use_tool=%v degraded=%q, want no tool and degraded containing %q", out.UseTool, out.Degraded, tc.want)
			}
			if len(e.faults.Calls()) != 0 {
				t.Errorf("got %d tool calls, want 0", len(e.faults.Calls()))
			}
		})
	}
}

func TestRouteModelDown(t *testing.T) {
	model := fakeollama.New(t)
	model.Close() // nothing listens at its URL any more
	for _, mode := range []router.FailureMode{router.NoTool, router.Fail} {
		t.Run(string(mode), func(t *testing.T) {
			e := newEnvWith(t, router.Settings{OnModelFailure: mode}, model)
			out, err := e.router.Route(context.Background(), router.Request{Query: "add 1 and 2"})
			switch mode {
			case router.NoTool:
				if err != nil || out.UseTool || !strings.Contains(out.Degraded, "selecting tool") {
					t.Errorf("got err=%v outcome=%+v, want a degraded no-tool outcome", err, out)
				}
			case router.Fail:
				if !errors.Is(err, router.ErrModel) {
					t.Errorf("got err=%v, want ErrModel", err)
				}
			}
		})
	}
}

func TestRouteModelHangsIsBounded(t *testing.T) {
	e := newEnv(t, router.Settings{SelectTimeout: 50 * time.Millisecond}, fakeollama.Reply{Hang: true})
	start := time.Now()
	out, err := e.router.Route(context.Background(), router.Request{Query: "add 1 and 2"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.Degraded, "deadline exceeded") {
		t.Errorf("got degraded=%q, want a deadline", out.Degraded)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Route took %v with a 50ms select timeout", d)
	}
}

func TestRouteRepairsArguments(t *testing.T) {
	e := newEnv(t, router.Settings{RepairAttempts: 2},
		sel("faults.count", true), args(`{"n": "seven"}`), args(`{"n": 7}`))
	out, err := e.router.Route(context.Background(), router.Request{Query: "count to seven"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Result == nil || out.Result.Text != "n=7" {
		t.Fatalf("got result %+v error %+v, want n=7", out.Result, out.Error)
	}
	if len(out.Attempts) != 1 || !strings.Contains(out.Attempts[0].Feedback, "at /n") {
		t.Errorf("got attempts %+v, want one with feedback at /n", out.Attempts)
	}
	reqs := e.model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("got %d model calls, want 3", len(reqs))
	}
	repair := reqs[2].Messages
	if len(repair) != 3 || repair[1].Role != "assistant" || repair[1].Content != `{"n": "seven"}` {
		t.Fatalf("repair turn messages = %+v, want [prompt, bad answer, feedback]", repair)
	}
	if fb := repair[2].Content; !strings.Contains(fb, "at /n") || !strings.Contains(fb, "expected number") {
		t.Errorf("repair feedback %q lacks the validator's message", fb)
	}
}

func TestRouteArgumentsInvalidOnEveryAttempt(t *testing.T) {
	e := newEnv(t, router.Settings{RepairAttempts: 2},
		sel("faults.count", true), args(`{}`), args(`{"n": "x"}`), args(`not json`), sel("none", false))
	out, err := e.router.Route(context.Background(), router.Request{Query: "count"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Error == nil || out.Error.Code != router.CodeInvalidArguments {
		t.Fatalf("got error %+v, want invalid_arguments", out.Error)
	}
	if !out.UseTool || out.Result != nil || out.Direct {
		t.Errorf("got use_tool=%v result=%+v direct=%v, want the tool named but not called", out.UseTool, out.Result, out.Direct)
	}
	if n := len(e.faults.Calls()); n != 0 {
		t.Errorf("tool was called %d times, want 0", n)
	}
	// 1 selection + 3 argument attempts, then a second selection that sees the failure and stops.
	if out.Usage.LLMCalls != 5 || len(out.Attempts) != 3 || out.Rounds != 2 || out.Stopped != router.StopDone {
		t.Errorf("got %d model calls, %d attempts, %d rounds, stopped %q; want 5, 3, 2, done",
			out.Usage.LLMCalls, len(out.Attempts), out.Rounds, out.Stopped)
	}
	if last := e.model.Requests()[4].Messages; !strings.Contains(last[len(last)-1].Content, ">>>\narguments still invalid") {
		t.Errorf("second selection does not show the failure: %q", last[len(last)-1].Content)
	}
}

func TestRouteToolOutcomes(t *testing.T) {
	tests := []struct {
		name      string
		tool      string
		args      string
		exec      time.Duration
		wantCode  string
		wantIsErr bool
		wantText  string
	}{
		{name: "isError is a result", tool: "faults.fail", args: `{}`, wantIsErr: true, wantText: "failed on purpose"},
		{name: "hang past deadline", tool: "faults.hang", args: `{}`, exec: 50 * time.Millisecond, wantCode: router.CodeToolTimeout},
		{name: "strict raw schema", tool: "faults.strict", args: `{"name":"ada"}`, wantText: `{"name":"ada"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, router.Settings{ExecuteTimeout: tc.exec}, sel(tc.tool, true), args(tc.args))
			out, err := e.router.Route(context.Background(), router.Request{Query: "q"})
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantCode != "" {
				if out.Error == nil || out.Error.Code != tc.wantCode {
					t.Fatalf("got error %+v, want code %s", out.Error, tc.wantCode)
				}
				return
			}
			if out.Error != nil || out.Result == nil {
				t.Fatalf("got error %+v result %+v, want a result", out.Error, out.Result)
			}
			if out.Result.IsError != tc.wantIsErr || !strings.Contains(out.Result.Text, tc.wantText) {
				t.Errorf("got result %+v, want is_error=%v text containing %q", out.Result, tc.wantIsErr, tc.wantText)
			}
			if tc.wantIsErr && out.Direct {
				t.Errorf("an isError result must not be direct")
			}
		})
	}
}

func TestRouteStrictSchemaRejectsWhatStructDrops(t *testing.T) {
	// {} satisfies the properties mcp-go's Tool struct keeps, but not the raw schema's
	// anyOf/minProperties: only validation against the raw schema catches it.
	e := newEnv(t, router.Settings{RepairAttempts: 0}, sel("faults.strict", true), args(`{}`))
	out, err := e.router.Route(context.Background(), router.Request{Query: "look up a record"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Error == nil || out.Error.Code != router.CodeInvalidArguments {
		t.Fatalf("got error %+v, want invalid_arguments", out.Error)
	}
}

func TestRouteHistoryPrecedesQuery(t *testing.T) {
	e := newEnv(t, router.Settings{}, sel("none", false))
	hist := []router.Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "hello"}}
	if _, err := e.router.Route(context.Background(), router.Request{Query: "and now?", History: hist}); err != nil {
		t.Fatal(err)
	}
	msgs := e.model.Requests()[0].Messages
	got := []api.Message{msgs[1], msgs[2], msgs[3]}
	if got[0].Content != "hi" || got[1].Content != "hello" || got[2].Content != "and now?" {
		t.Errorf("got messages %+v, want history then query", got)
	}
}
