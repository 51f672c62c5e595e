package router_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"toolrouter/config"
	"toolrouter/internal/fakeollama"
	"toolrouter/inventory"
	"toolrouter/redact"
	"toolrouter/router"
)

// TestProgressReachesTheStream: a slow tool's progress notifications reach the route's observer
// as tool_progress events while the call runs, between its tool_call_start and its tool_result.
func TestProgressReachesTheStream(t *testing.T) {
	heard := make(chan struct{}) // closed once the observer has the first tool_progress
	srv := server.NewMCPServer("slow", "1.0.0")
	srv.AddTool(mcp.NewTool("build", mcp.WithDescription("builds slowly")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
				return mcp.NewToolResultError("no progress token"), nil
			}
			_ = srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress),
				map[string]any{"progressToken": req.Params.Meta.ProgressToken, "progress": 1.0, "total": 2.0, "message": "half way"})
			select { // the result waits until the report has reached the observer
			case <-heard:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return mcp.NewToolResultText("built"), nil
		})
	model := fakeollama.New(t, choose(false, false, "slow.build"), callArgs(map[string]any{}))
	inv := inventory.New(map[string]config.Server{"slow": builtinServer("slow")},
		inventory.Options{Logger: quiet, InProcess: map[string]*server.MCPServer{"slow": srv}})
	inv.Start(context.Background())
	t.Cleanup(inv.Close)
	rt := router.New(model.Client(), inv, inv, router.Settings{Model: "fake", CallTimeout: 10 * time.Second}, quiet)

	var (
		mu     sync.Mutex
		events []router.Event
		once   sync.Once
	)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := rt.Route(ctx, router.Request{Query: "build it", OnEvent: func(ev router.Event) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
		if ev.Type == router.EventToolProgress {
			once.Do(func() { close(heard) })
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Calls) != 1 || out.Calls[0].Result == nil || out.Calls[0].Result.Text != "built" {
		t.Fatalf("got %+v, want the build's result", out.Calls)
	}
	mu.Lock()
	defer mu.Unlock()
	var order []router.EventType
	for _, ev := range events {
		switch ev.Type {
		case router.EventToolCallStart, router.EventToolProgress, router.EventToolResult:
			order = append(order, ev.Type)
		}
		if ev.Type == router.EventToolProgress {
			if ev.Progress == nil || ev.Progress.Message != "half way" || ev.Progress.Progress != 1 || ev.Call == nil || ev.Call.Tool != "build" {
				t.Errorf("got %+v (call %+v), want the half-way report of build", ev.Progress, ev.Call)
			}
		}
	}
	want := []router.EventType{router.EventToolCallStart, router.EventToolProgress, router.EventToolResult}
	if len(order) != len(want) || order[0] != want[0] || order[1] != want[1] || order[2] != want[2] {
		t.Errorf("got events %v, want %v", order, want)
	}
}

// TestProgressMessageMaskedAndBounded: a progress report's message is the server's text, as an
// error's is: a credential of the server's in it is masked and a long one is shortened before it
// reaches the stream, as results and errors are.
func TestProgressMessageMaskedAndBounded(t *testing.T) {
	const cred = "sk-progress-secret-0123456789"
	long := cred + " " + strings.Repeat("x", 64<<10)
	heard := make(chan struct{})
	srv := server.NewMCPServer("slow", "1.0.0")
	srv.AddTool(mcp.NewTool("build", mcp.WithDescription("builds slowly")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
				return mcp.NewToolResultError("no progress token"), nil
			}
			_ = srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress),
				map[string]any{"progressToken": req.Params.Meta.ProgressToken, "progress": 1.0, "message": long})
			select {
			case <-heard:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return mcp.NewToolResultText("built"), nil
		})
	model := fakeollama.New(t, choose(false, false, "slow.build"), callArgs(map[string]any{}))
	inv := inventory.New(map[string]config.Server{"slow": builtinServer("slow")},
		inventory.Options{Logger: quiet, InProcess: map[string]*server.MCPServer{"slow": srv}})
	inv.Start(context.Background())
	t.Cleanup(inv.Close)
	rt := router.New(model.Client(), inv, inv, router.Settings{Model: "fake", CallTimeout: 10 * time.Second,
		Redactor: redact.New(cred)}, quiet)
	var (
		mu   sync.Mutex
		got  []string
		once sync.Once
	)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := rt.Route(ctx, router.Request{Query: "build it", OnEvent: func(ev router.Event) {
		if ev.Type == router.EventToolProgress && ev.Progress != nil {
			mu.Lock()
			got = append(got, ev.Progress.Message)
			mu.Unlock()
			once.Do(func() { close(heard) })
		}
	}}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 {
		t.Fatal("no tool_progress event")
	}
	for _, m := range got {
		if strings.Contains(m, cred) || len(m) > 2000 {
			t.Errorf("got a progress message of %d bytes (credential shown: %v), want it masked and shortened to about 1000 bytes",
				len(m), strings.Contains(m, cred))
		}
	}
}
