package inventory_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
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
)

func pidOf(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file %s: %v", path, err)
	}
	return pid
}

// TestReload reloads a running inventory: the unchanged stdio server keeps its process, the
// changed one gets a new one, the removed one is shut down once the call in flight on it has
// finished, the added one connects, and snapshots taken before stay as they were.
func TestReload(t *testing.T) {
	dir := t.TempDir()
	keepPID, changePID := filepath.Join(dir, "keep"), filepath.Join(dir, "change")
	faults := testmcp.NewFaults()
	old := map[string]config.Server{
		"keep":   selfStdio(map[string]string{testmcp.EnvServe: "1", envPIDFile: keepPID}),
		"change": selfStdio(map[string]string{testmcp.EnvServe: "1", envPIDFile: changePID}),
		"drop":   inProcess("drop"),
	}
	m := start(t, old, inventory.Options{InProcess: map[string]*server.MCPServer{"drop": faults.MCPServer}})
	before := m.Snapshot()
	for _, name := range []string{"keep", "change", "drop"} {
		if st := server_(before, name); st.Status != inventory.StateUp {
			t.Fatalf("%s is %s (%s), want up", name, st.Status, st.Error)
		}
	}
	keep0, change0 := pidOf(t, keepPID), pidOf(t, changePID)

	// A call in flight on the server the reload removes: a barrier that a second party releases.
	inFlight := make(chan error, 1)
	go func() {
		res, err := m.CallTool(context.Background(), "drop", "barrier", map[string]any{"parties": 2})
		if err == nil && (res.IsError || len(res.Content) == 0) {
			err = errors.New("barrier answered an error")
		}
		inFlight <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for len(faults.Calls()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the barrier call did not reach the server within 30s")
		}
		time.Sleep(time.Millisecond) // polling a condition under a deadline
	}

	next := map[string]config.Server{
		"keep":   old["keep"],
		"change": old["change"],
		"added":  inProcess("calculator"),
	}
	changed := next["change"]
	changed.CallTimeout = config.Duration(15 * time.Second)
	next["change"] = changed
	ch, err := m.Reload(context.Background(), next)
	if err != nil {
		t.Fatal(err)
	}
	want := inventory.Change{Added: []string{"added"}, Removed: []string{"drop"}, Reconnected: []string{"change"}, Unchanged: []string{"keep"}}
	if !reflect.DeepEqual(ch, want) {
		t.Errorf("got change %+v, want %+v", ch, want)
	}

	after := m.Snapshot()
	for _, name := range []string{"keep", "change", "added"} {
		if st := server_(after, name); st.Status != inventory.StateUp {
			t.Errorf("after reload %s is %q (%s), want up", name, st.Status, st.Error)
		}
	}
	if st := server_(after, "drop"); st.Name != "" {
		t.Errorf("after reload drop is still listed: %+v", st)
	}
	if st := server_(before, "drop"); st.Status != inventory.StateUp {
		t.Errorf("the snapshot taken before the reload changed: drop is %q", st.Status)
	}
	if _, ok := after.Tool("added.add"); !ok {
		t.Error("after reload the added server's tools are missing")
	}

	if got := pidOf(t, keepPID); got != keep0 {
		t.Errorf("unchanged server: pid %d, want %d (its session kept)", got, keep0)
	}
	if err := syscall.Kill(keep0, 0); err != nil {
		t.Errorf("unchanged server's process %d: %v, want it running", keep0, err)
	}
	if got := pidOf(t, changePID); got == change0 {
		t.Errorf("changed server: pid still %d, want a new process", got)
	}
	if !exited(t, change0, 20*time.Second) {
		t.Errorf("changed server's old process %d still runs 20s after the reload", change0)
	}
	if got := call(t, m, "change", "echo", map[string]any{"message": "new session"}); got != "new session" {
		t.Errorf("echo on the reconnected server = %q", got)
	}

	if _, err := m.CallTool(context.Background(), "drop", "echo", map[string]any{"message": "x"}); !errors.Is(err, inventory.ErrUnknownServer) {
		t.Errorf("a new call on the removed server: got %v, want ErrUnknownServer", err)
	}
	// The second party releases the barrier: the call in flight finishes on the old session.
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
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "barrier", map[string]any{"parties": 2}
	if _, err := c.CallTool(ctx, req); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-inFlight:
		if err != nil {
			t.Errorf("the call in flight on the removed server: %v, want its answer", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call in flight on the removed server did not return within 30s")
	}

	// The same configuration again changes nothing.
	ch, err = m.Reload(context.Background(), next)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"added", "change", "keep"}; !reflect.DeepEqual(ch, inventory.Change{Added: []string{}, Removed: []string{}, Reconnected: []string{}, Unchanged: want}) {
		t.Errorf("reloading the same configuration: got %+v, want %v unchanged", ch, want)
	}
}

// TestReloadAfterClose: a closed inventory refuses a reload and starts nothing.
func TestReloadAfterClose(t *testing.T) {
	m := inventory.New(map[string]config.Server{"calculator": inProcess("calculator")}, inventory.Options{Logger: quiet})
	m.Start(context.Background())
	m.Close()
	_, err := m.Reload(context.Background(), map[string]config.Server{"clock": inProcess("clock")})
	if !errors.Is(err, inventory.ErrClosed) {
		t.Fatalf("got %v, want ErrClosed", err)
	}
	if st := server_(m.Snapshot(), "clock"); st.Name != "" {
		t.Errorf("a closed inventory listed a reloaded server: %+v", st)
	}
}
