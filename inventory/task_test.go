package inventory_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"toolrouter/config"
	"toolrouter/internal/npmservers"
	"toolrouter/inventory"
)

// taskServer is a server whose "build" tool runs as a task: each value the test sends on steps
// is one unit of work, reported as a progress notification; closing steps finishes the build.
// cancelled is closed when the task's context ends before the build finished. Its "sleep" tool
// runs as a task for the milliseconds asked, on the real clock.
type taskServer struct {
	srv       *server.MCPServer
	steps     chan float64
	cancelled chan struct{}
}

func newTaskServer() *taskServer {
	ts := &taskServer{steps: make(chan float64), cancelled: make(chan struct{})}
	// mcp-go v1.2.1 runs a task under the context of the request that created it, which ends as
	// soon as the task is created; the tools below therefore learn of a cancellation from
	// tasks/cancel itself.
	hooks := &server.Hooks{}
	hooks.AddBeforeCancelTask(func(context.Context, any, *mcp.CancelTaskRequest) { close(ts.cancelled) })
	ts.srv = server.NewMCPServer("tasks", "1.0.0", server.WithTaskCapabilities(true, true, true), server.WithHooks(hooks))
	ts.srv.AddTool(mcp.NewTool("build", mcp.WithTaskSupport(mcp.TaskSupportOptional)),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var token mcp.ProgressToken
			if req.Params.Meta != nil {
				token = req.Params.Meta.ProgressToken
			}
			for {
				select {
				case <-ts.cancelled:
					return nil, context.Canceled
				case n, ok := <-ts.steps:
					if !ok {
						return mcp.NewToolResultText("built"), nil
					}
					if token != nil {
						_ = ts.srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress),
							map[string]any{"progressToken": token, "progress": n, "total": 3.0, "message": "step"})
					}
				}
			}
		})
	ts.srv.AddTool(mcp.NewTool("sleep", mcp.WithTaskSupport(mcp.TaskSupportRequired), mcp.WithNumber("ms")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// The task's own context is done already (see above): the wait is the real clock's.
			<-time.After(time.Duration(min(req.GetFloat("ms", 0), 5000)) * time.Millisecond)
			return mcp.NewToolResultStructured(map[string]any{"slept": true}, "slept"), nil
		})
	return ts
}

// TestLongRunningTools: a tool that runs as a task is polled until it ends, its progress
// reaching the caller as it happens; when the caller's deadline passes first the call ends with
// the deadline and the server's task is cancelled.
func TestLongRunningTools(t *testing.T) {
	ts := newTaskServer()
	// Tasks as 2025-11-25 has them: the client asks for one (the tool's taskSupport) and fetches
	// the result with tasks/result.
	sc := timeouts(config.Server{Transport: config.TransportStreamableHTTP, URL: eraServer(t, ts.srv, mcp.ProtocolVersion20251125)})
	m := start(t, map[string]config.Server{"tasks": sc}, inventory.Options{})
	snap := wait(t, m, "tasks up", func(s *inventory.Snapshot) bool { return s.Servers[0].Status == inventory.StateUp })
	if tool, _ := snap.Tool("tasks.build"); tool == nil || tool.TaskSupport != "optional" {
		t.Fatalf("got %+v, want build listed with task_support optional", tool)
	}

	t.Run("progress then result", func(t *testing.T) {
		reports := make(chan inventory.Progress, 64)
		ctx := inventory.WithProgress(context.Background(), func(p inventory.Progress) { reports <- p })
		type answer struct {
			res *mcp.CallToolResult
			err error
		}
		done := make(chan answer, 1)
		go func() {
			res, err := m.CallTool(ctx, "tasks", "build", nil)
			done <- answer{res, err}
		}()
		timeout := time.After(20 * time.Second)
		next := func() inventory.Progress {
			select {
			case p := <-reports:
				return p
			case <-timeout:
				t.Fatal("no progress report")
			}
			return inventory.Progress{}
		}
		if p := next(); p.Status != "working" || p.TaskID == "" {
			t.Fatalf("got %+v, want the task working first", p)
		}
		for i := 1.0; i <= 3; i++ {
			select {
			case ts.steps <- i:
			case a := <-done:
				t.Fatalf("the call ended at step %v: %+v, %v", i, a.res, a.err)
			case <-timeout:
				t.Fatal("the build did not take a step")
			}
			// The report of step i arrives before step i+1 is sent: progress streams as it happens.
			for p := next(); p.Status != "" || p.Progress != i; p = next() {
				if p.Status != "working" {
					t.Fatalf("got %+v while waiting for step %v", p, i)
				}
			}
		}
		close(ts.steps)
		var a answer
		select {
		case a = <-done:
		case <-timeout:
			t.Fatal("the call did not end")
		}
		if a.err != nil || len(a.res.Content) != 1 || a.res.Content[0].(mcp.TextContent).Text != "built" {
			t.Fatalf("got %+v, %v; want built", a.res, a.err)
		}
		last := inventory.Progress{}
		for len(reports) > 0 {
			last = <-reports
		}
		if last.Status != "completed" {
			t.Errorf("got last report %+v, want completed", last)
		}
	})

	t.Run("deadline cancels the task", func(t *testing.T) {
		ts.steps = make(chan float64) // never fed: the build runs until cancelled
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := m.CallTool(ctx, "tasks", "build", nil)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want the deadline", err)
		}
		select {
		case <-ts.cancelled:
		case <-time.After(10 * time.Second):
			t.Fatal("the server's task was not cancelled")
		}
	})

	t.Run("a task of a second on the real clock", func(t *testing.T) {
		t0 := time.Now()
		res, err := m.CallTool(context.Background(), "tasks", "sleep", map[string]any{"ms": 1000})
		if err != nil || res.IsError || res.StructuredContent == nil {
			t.Fatalf("got %+v, %v; want the structured result", res, err)
		}
		if d := time.Since(t0); d < time.Second {
			t.Errorf("returned after %s, before the task's second was up", d)
		}
	})
}

// extTaskServer wraps a 2026-07-28 mcp-go server with the tasks extension (SEP-2663), which
// mcp-go v1.2.1 does not serve (it removes tasks/result on 2026-07-28 without putting the result
// in tasks/get): its "build" call is answered with a task whose status message moves with each
// value on steps, and that completes, its result inline, when steps closes. cancelled is closed
// by tasks/cancel.
type extTaskServer struct {
	steps     chan string
	cancelled chan struct{}

	mu   sync.Mutex // guards task
	task map[string]any
}

func (x *extTaskServer) serve(t *testing.T) string {
	srv := server.NewMCPServer("ext", "1.0.0", server.WithExtensions(map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}))
	srv.AddTool(mcp.NewTool("build"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("not as a task"), nil
	})
	h := server.NewStreamableHTTPServer(srv, server.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20260728))
	reply := func(w http.ResponseWriter, id any, result any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var msg struct {
			ID     any    `json:"id"`
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		switch {
		case msg.Method == "tools/call" && msg.Params.Name == "build":
			x.mu.Lock()
			x.task = map[string]any{"taskId": "t1", "status": "working", "createdAt": "2026-11-28T00:00:00Z",
				"lastUpdatedAt": "2026-11-28T00:00:00Z", "ttl": nil, "pollIntervalMs": 10}
			handle := maps.Clone(x.task)
			x.mu.Unlock()
			handle["resultType"] = "task"
			go x.run()
			reply(w, msg.ID, handle)
		case msg.Method == "tasks/get":
			x.mu.Lock()
			state := maps.Clone(x.task)
			x.mu.Unlock()
			state["resultType"] = "complete"
			reply(w, msg.ID, state)
		case msg.Method == "tasks/cancel":
			x.mu.Lock()
			x.task["status"] = "cancelled"
			state := maps.Clone(x.task)
			x.mu.Unlock()
			close(x.cancelled)
			reply(w, msg.ID, state)
		default:
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// run is the task's work: a status message per step, then the result.
func (x *extTaskServer) run() {
	for {
		select {
		case <-x.cancelled:
			return
		case msg, ok := <-x.steps:
			x.mu.Lock()
			if !ok {
				x.task["status"] = "completed"
				x.task["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": "built"}}}
			} else {
				x.task["statusMessage"] = msg
			}
			x.mu.Unlock()
			if !ok {
				return
			}
		}
	}
}

// TestTasksExtension: on 2026-07-28 a server answers a call with a task of the tasks extension;
// the inventory polls it, reporting each status message as it changes, takes the result from
// tasks/get, and cancels the task when the caller's deadline passes.
func TestTasksExtension(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deadline time.Duration // 0: the build completes
	}{
		{"completes", 0},
		{"deadline cancels", 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := &extTaskServer{steps: make(chan string), cancelled: make(chan struct{})}
			sc := timeouts(config.Server{Transport: config.TransportStreamableHTTP, URL: x.serve(t)})
			m := start(t, map[string]config.Server{"ext": sc}, inventory.Options{})
			snap := wait(t, m, "ext up", func(s *inventory.Snapshot) bool { return s.Servers[0].Status == inventory.StateUp })
			if v := snap.Servers[0].ProtocolVersion; v != mcp.ProtocolVersion20260728 {
				t.Fatalf("got %q, want 2026-07-28", v)
			}
			if tc.deadline > 0 {
				ctx, cancel := context.WithTimeout(context.Background(), tc.deadline)
				defer cancel()
				if _, err := m.CallTool(ctx, "ext", "build", nil); !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("got %v, want the deadline", err)
				}
				select {
				case <-x.cancelled:
				case <-time.After(10 * time.Second):
					t.Fatal("the task was not cancelled")
				}
				return
			}
			reports := make(chan inventory.Progress, 64)
			ctx := inventory.WithProgress(context.Background(), func(p inventory.Progress) { reports <- p })
			done := make(chan error, 1)
			var res *mcp.CallToolResult
			go func() {
				var err error
				res, err = m.CallTool(ctx, "ext", "build", nil)
				done <- err
			}()
			timeout := time.After(20 * time.Second)
			for _, step := range []string{"fetching", "compiling"} {
				x.steps <- step
				for {
					var p inventory.Progress
					select {
					case p = <-reports:
					case <-timeout:
						t.Fatalf("no report of %q", step)
					}
					if p.Message == step {
						break
					}
				}
			}
			close(x.steps)
			select {
			case err := <-done:
				if err != nil || len(res.Content) != 1 || res.Content[0].(mcp.TextContent).Text != "built" {
					t.Fatalf("got %+v, %v; want the task's result", res, err)
				}
			case <-timeout:
				t.Fatal("the call did not end")
			}
		})
	}
}

// TestTaskOnTheTypeScriptSDK: a server built on the official TypeScript SDK, over stdio, runs a
// task for two seconds; the call polls it and returns its result once it completes.
func TestTaskOnTheTypeScriptSDK(t *testing.T) {
	dir := npmservers.Dir(t)
	script, _ := filepath.Abs(filepath.Join("testdata", "ts-task-server.mjs"))
	sc := timeouts(config.Server{Transport: config.TransportStdio, Command: "node", Args: []string{script},
		Env: map[string]string{"TS_SDK_DIR": filepath.Join(dir, "node_modules")}})
	m := start(t, map[string]config.Server{"ts": sc}, inventory.Options{})
	snap := wait(t, m, "ts started", func(s *inventory.Snapshot) bool { return s.Servers[0].Status != inventory.StateStarting })
	if st := snap.Servers[0]; st.Status != inventory.StateUp {
		t.Fatalf("got %s: %s", st.Status, st.Error)
	}
	if tool, _ := snap.Tool("ts.delay"); tool == nil || tool.TaskSupport != "required" {
		t.Fatalf("got %+v, want delay with task_support required", tool)
	}
	var statuses []string
	ctx := inventory.WithProgress(context.Background(), func(p inventory.Progress) { statuses = append(statuses, p.Status) })
	t0 := time.Now()
	res, err := m.CallTool(ctx, "ts", "delay", map[string]any{"duration": 2000})
	if err != nil || len(res.Content) != 1 || res.Content[0].(mcp.TextContent).Text != "waited 2000 ms" {
		t.Fatalf("got %+v, %v; want the task's result (negotiated %s)", res, err, snap.Servers[0].ProtocolVersion)
	}
	if d := time.Since(t0); d < 2*time.Second {
		t.Errorf("returned after %s, before the task's two seconds", d)
	}
	if len(statuses) < 2 || statuses[0] != "working" || statuses[len(statuses)-1] != "completed" {
		t.Errorf("got statuses %v, want working then completed", statuses)
	}
}
