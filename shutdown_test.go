package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/internal/fakeollama"
)

// TestSIGTERMDuringHungModelCall builds and runs the real binary, holds a request and a stream in
// a model call that never ends, and sends SIGTERM: the process must exit, successfully, within
// http.shutdown_timeout, and both clients must have had a final answer (503 shutting_down, and
// an error event shutting_down) rather than a dropped connection.
func TestSIGTERMDuringHungModelCall(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	started := make(chan struct{}, 2)
	model := fakeollama.NewFunc(t, func(api.ChatRequest) fakeollama.Reply {
		started <- struct{}{}
		return fakeollama.Reply{Hang: true}
	})
	const timeout = 2 * time.Second
	cfg := map[string]any{
		"listen": "127.0.0.1:0",
		"ollama": map[string]any{"host": model.URL, "model": "fake", "timeout": "30s"},
		"http":   map[string]any{"shutdown_timeout": timeout.String()},
	}
	path := filepath.Join(dir, "config.json")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-config", path)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The log's "serving" line names the address; the rest of the log goes to the test's.
	addr := make(chan string, 1)
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var line struct{ Msg, Listen string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving" {
				addr <- line.Listen
			}
			t.Logf("toolrouter: %s", sc.Bytes())
		}
	}()
	exited := make(chan struct{})
	var exitErr error
	go func() {
		<-logged // Wait closes the pipe: read it whole first
		exitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case <-exited:
		t.Fatalf("toolrouter exited before serving: %v", exitErr)
	case <-time.After(60 * time.Second):
		t.Fatal("toolrouter did not start serving within 60s")
	}

	type answer struct {
		status int
		body   string
		err    error
	}
	plain, stream := make(chan answer, 1), make(chan answer, 1)
	post := func(path string, out chan<- answer) {
		resp, err := http.Post(base+path, "application/json", strings.NewReader(`{"query":"add 2 and 3"}`))
		if err != nil {
			out <- answer{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		out <- answer{resp.StatusCode, string(b), err}
	}
	go post("/v1/route", plain)
	go post("/v1/route/stream", stream)
	for range 2 {
		select {
		case <-started:
		case <-time.After(30 * time.Second):
			t.Fatal("the model calls did not start within 30s")
		}
	}

	signalled := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if d := time.Since(signalled); d > timeout {
			t.Errorf("toolrouter exited %s after SIGTERM, want within http.shutdown_timeout (%s)", d, timeout)
		}
		if exitErr != nil {
			t.Errorf("toolrouter exited with %v, want success: every request had its answer", exitErr)
		}
	case <-time.After(3 * timeout):
		t.Fatalf("toolrouter still running %s after SIGTERM (http.shutdown_timeout %s)", 3*timeout, timeout)
	}
	if a := <-plain; a.err != nil || a.status != http.StatusServiceUnavailable || !strings.Contains(a.body, `"code":"shutting_down"`) {
		t.Errorf("request in flight: got %d %q (%v), want 503 shutting_down", a.status, a.body, a.err)
	}
	a := <-stream
	if i := strings.LastIndex(a.body, "event: "); a.err != nil || i < 0 || !strings.HasPrefix(a.body[i:], "event: error\n") || !strings.Contains(a.body[i:], `"code":"shutting_down"`) {
		t.Errorf("stream in flight: got %q (%v), want a last event error shutting_down", a.body, a.err)
	}
	// Both requests' usage records were written before the process exited (usage.path's default,
	// beside the config file).
	if got := usageRequests(t, path, "default"); got != 2 {
		t.Errorf("got %d usage records of org default after SIGTERM, want 2", got)
	}
}
