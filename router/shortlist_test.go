package router_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/ollama/ollama/api"

	"toolrouter/access"
	"toolrouter/config"
	"toolrouter/internal/bfcltools"
	"toolrouter/internal/fakeollama"
	"toolrouter/inventory"
	"toolrouter/retrieve"
	"toolrouter/router"
)

// shortlistEnv is a router over the built-in calculator and a server of n real tools, ranking
// with BM25F. available is how many tools the inventory offers.
func shortlistEnv(t *testing.T, n int, set router.Settings, model *fakeollama.Server) (rt *router.Router, tools []bfcltools.Function, available int) {
	t.Helper()
	big, tools := bfcltools.Server(t, n)
	servers := map[string]config.Server{"calculator": builtinServer("calculator"), "big": builtinServer("big")}
	inv := inventory.New(servers, inventory.Options{Logger: quiet, InProcess: map[string]*server.MCPServer{"big": big}})
	inv.Start(context.Background())
	t.Cleanup(inv.Close)
	available = len(inv.Snapshot().Available())
	if available <= n {
		t.Fatalf("got %d tools in the inventory, want %d and the calculator's", available, n)
	}
	ret, err := retrieve.NewRetriever(retrieve.NewIndex(), nil, retrieve.DenseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	set.Model = "fake"
	set.Ranker = retrieve.NewCatalog(ret, nil, quiet)
	return router.New(model.Client(), inv, inv, set, quiet), tools, available
}

// chooser is a fake model that picks want when phase 1 offers it (else no tool), searches for
// search once when given, and writes empty arguments.
func chooser(want, search string) func(api.ChatRequest) fakeollama.Reply {
	searched := false
	return func(req api.ChatRequest) fakeollama.Reply {
		if !strings.Contains(string(req.Format), `"use_tool"`) {
			return args(`{}`)
		}
		if enum, _ := selectionEnum(req.Format); slices.Contains(enum, want) {
			return sel(want, true)
		}
		if search != "" && !searched {
			searched = true
			b, _ := json.Marshal(map[string]any{"reasoning": "not shown", "use_tool": false, "calls": []any{},
				"search": search, "needs_more": false, "direct": false})
			return fakeollama.Reply{Content: string(b)}
		}
		return sel("none", false)
	}
}

// TestShortlistKeepsPhase1UnderTheWindow: with 5,000 real tools, phase 1 sees a shortlist within
// its budget, its enum holds exactly the shortlisted names, and the right tool is on it.
func TestShortlistKeepsPhase1UnderTheWindow(t *testing.T) {
	var want bfcltools.Function
	model := fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply { return chooser("big."+want.Name, "")(req) })
	rt, tools, available := shortlistEnv(t, 5000, router.Settings{Options: map[string]any{"num_ctx": 8192}}, model)
	want = tools[0] // calculate_triangle_area: "Find the area of a triangle with a base of 10 …"
	out, err := rt.Route(context.Background(), router.Request{Query: want.Question})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Shortlists) != 1 {
		t.Fatalf("got %d shortlists, want 1", len(out.Shortlists))
	}
	sl := out.Shortlists[0]
	if sl.Used > sl.Budget || sl.Budget > 8192-1024 || sl.Available != available || sl.LeftOut != sl.Available-len(sl.Tools) {
		t.Errorf("got shortlist of %d tools using %d of %d tokens, %d available, %d left out; want within budget and counts adding up",
			len(sl.Tools), sl.Used, sl.Budget, sl.Available, sl.LeftOut)
	}
	reqs := model.Requests()
	t.Logf("shortlist: %d of %d tools, %d of %d budget tokens; phase-1 system prompt %d bytes",
		len(sl.Tools), sl.Available, sl.Used, sl.Budget, len(reqs[0].Messages[0].Content))
	enum := formatEnum(t, reqs[0].Format)
	var names []string
	for _, tool := range sl.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	got := slices.Clone(enum[:len(enum)-1])
	slices.Sort(got)
	if !slices.Equal(got, names) || enum[len(enum)-1] != "none" {
		t.Errorf("phase-1 enum %v is not the shortlist %v and none", enum, names)
	}
	if est := out.Trace[1].EstimatedTokens; est <= 0 || est > 8192-1024 {
		t.Errorf("phase-1 prompt estimated at %d tokens, want within the window", est)
	}
	if size := len(reqs[0].Messages[0].Content); size > 64<<10 {
		t.Errorf("phase-1 system prompt is %d bytes, want a shortlist's size", size)
	}
	if !out.UseTool || out.Tool != want.Name {
		t.Errorf("got tool %q (use_tool %v), want %s from the shortlist", out.Tool, out.UseTool, want.Name)
	}
}

// TestSearchEscapeFindsALowRankedTool: a tool the shortlist leaves out is found when the model
// searches for it; the search counts against the call budget and shows in the trace.
func TestSearchEscapeFindsALowRankedTool(t *testing.T) {
	target := "big.calculate_triangle_area_v3"
	model := fakeollama.NewFunc(t, chooser(target, "calculate triangle area v3"))
	rt, _, _ := shortlistEnv(t, 2000, router.Settings{Options: map[string]any{"num_ctx": 4096}, MaxSearches: 1}, model)
	out, err := rt.Route(context.Background(), router.Request{Query: "how far is the moon from the earth"})
	if err != nil {
		t.Fatal(err)
	}
	reqs := model.Requests()
	if first := formatEnum(t, reqs[0].Format); slices.Contains(first, target) {
		t.Fatalf("the first shortlist already holds %s; the test needs it ranked low", target)
	}
	if out.Searches != 1 || len(out.Shortlists) != 2 || !hasStep(out, router.StepSearch) {
		t.Fatalf("got %d searches, %d shortlists, want 1 search with its step and 2 shortlists", out.Searches, len(out.Shortlists))
	}
	if second := formatEnum(t, reqs[1].Format); !slices.Contains(second, target) {
		t.Errorf("the shortlist after the search lacks %s: %v", target, second)
	}
	if !out.UseTool || qualifiedOf(out) != target {
		t.Errorf("got %s (use_tool %v), want %s", qualifiedOf(out), out.UseTool, target)
	}
}

func qualifiedOf(out *router.Outcome) string { return out.Server + "." + out.Tool }

// TestAccessDeniedToolNeverShortlisted: a tool the caller may not use is never ranked or shown,
// even when the query names it.
func TestAccessDeniedToolNeverShortlisted(t *testing.T) {
	denied := "big.calculate_triangle_area"
	model := fakeollama.NewFunc(t, chooser(denied, ""))
	h, err := access.New(access.Orgs{"acme": {Deny: []string{denied}}})
	if err != nil {
		t.Fatal(err)
	}
	rt, tools, available := shortlistEnv(t, 5000, router.Settings{Options: map[string]any{"num_ctx": 8192}, Access: h}, model)
	out, err := rt.Route(context.Background(), router.Request{Query: tools[0].Question + " with calculate_triangle_area", Identity: access.Identity{Org: "acme"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, sl := range out.Shortlists {
		for _, tool := range sl.Tools {
			if tool.Name == denied {
				t.Fatalf("the shortlist shows the denied %s", denied)
			}
		}
		if sl.Available != available-1 {
			t.Errorf("got %d available, want every tool but the denied one", sl.Available)
		}
	}
	if enum := formatEnum(t, model.Requests()[0].Format); slices.Contains(enum, denied) {
		t.Errorf("the phase-1 enum offers the denied %s", denied)
	}
	if out.UseTool {
		t.Errorf("got a call of %s.%s, want none", out.Server, out.Tool)
	}
}

// TestSmallInventoryIsShownWhole: when every tool fits the budget there is no shortlist, and the
// phase-1 prompt is the same for every query (the model server's prefix cache reuses it).
func TestSmallInventoryIsShownWhole(t *testing.T) {
	model := fakeollama.NewFunc(t, chooser("none", ""))
	rt, _, available := shortlistEnv(t, 10, router.Settings{}, model)
	for _, q := range []string{"first question", "a different one"} {
		out, err := rt.Route(context.Background(), router.Request{Query: q})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Shortlists) != 0 {
			t.Errorf("got a shortlist of %d tools for 10 tools, want the whole inventory", len(out.Shortlists[0].Tools))
		}
	}
	reqs := model.Requests()
	if a, b := reqs[0].Messages[0].Content, reqs[1].Messages[0].Content; a != b {
		t.Errorf("the system prompts of two queries differ; want one static prompt")
	}
	if n := len(formatEnum(t, reqs[0].Format)); n != available+1 {
		t.Errorf("got an enum of %d, want every tool and none", n)
	}
}

// TestLearnedExamplesSurviveRestart: a query whose call ran without error becomes an example of
// the tool, kept on disk, and a new process ranks with it.
func TestLearnedExamplesSurviveRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "examples.jsonl")
	ex, err := retrieve.OpenExamples(path, 10)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, router.Settings{Learner: ex}, sel("calculator.add", true), args(`{"a": 2, "b": 40}`))
	query := "sum my two grocery receipts"
	out, err := e.router.Route(context.Background(), router.Request{Query: query})
	if err != nil || out.Result == nil || out.Result.Text != "42" {
		t.Fatalf("got %+v, %v; want 42", out.Result, err)
	}
	if err := ex.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := retrieve.OpenExamples(path, 10)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got := again.For("calculator.add"); !slices.Contains(got, query) {
		t.Errorf("after a restart calculator.add has examples %q, want %q among them", got, query)
	}
}

// TestDegradedRouteLearnsNothing: a degraded answer teaches no example.
func TestDegradedRouteLearnsNothing(t *testing.T) {
	ex, err := retrieve.OpenExamples(filepath.Join(t.TempDir(), "examples.jsonl"), 10)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	e := newEnv(t, router.Settings{Learner: ex}, sel("calculator.add", true), fakeollama.Reply{Status: 500, Error: "boom"})
	if _, err := e.router.Route(context.Background(), router.Request{Query: "add these"}); err != nil {
		t.Fatal(err)
	}
	if got := ex.For("calculator.add"); len(got) != 0 {
		t.Errorf("got examples %q after a degraded route, want none", got)
	}
}

// BenchmarkShortlist measures building phase 1's view for real queries at three pool sizes:
// ranking, fitting the budget and rendering the shortlist prompt (the sidecar's whole share of
// phase 1 before the model call).
func BenchmarkShortlist(b *testing.B) {
	for _, n := range []int{200, 2000, 20000} {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			big, tools := bfcltools.Server(b, n)
			inv := inventory.New(map[string]config.Server{"big": builtinServer("big")},
				inventory.Options{Logger: quiet, InProcess: map[string]*server.MCPServer{"big": big}})
			inv.Start(context.Background())
			defer inv.Close()
			ret, err := retrieve.NewRetriever(retrieve.NewIndex(), nil, retrieve.DenseOptions{})
			if err != nil {
				b.Fatal(err)
			}
			rt := router.New(nil, inv, inv, router.Settings{Model: "fake", Ranker: retrieve.NewCatalog(ret, nil, quiet)}, quiet)
			ctx := context.Background()
			if _, _, err := rt.Phase1Prompt(ctx, tools[0].Question); err != nil { // index built, costs cached
				b.Fatal(err)
			}
			lat := make([]time.Duration, 0, b.N)
			var bytes, shown int
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				by, sh, err := rt.Phase1Prompt(ctx, tools[i%len(tools)].Question)
				lat = append(lat, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
				bytes, shown = max(bytes, by), max(shown, sh)
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			b.ReportMetric(float64(bytes), "max-prompt-bytes")
			b.ReportMetric(float64(shown), "max-tools-shown")
		})
	}
}
