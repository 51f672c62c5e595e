package main

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildBinary builds the command into a temporary directory and returns its path.
func buildBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "toolrouter")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// process is the binary, serving.
type process struct {
	Base   string // the API's URL
	cmd    *exec.Cmd
	mu     sync.Mutex // guards stderr
	stderr []string
	exited chan struct{}
	err    error // Wait's, once exited is closed
}

// startBinary runs bin with args (which should listen on port 0) and returns once the API
// serves, at the address its "serving" log line names. The process is killed when the test
// ends, unless stop ended it first.
func startBinary(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, args...), exited: make(chan struct{})}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.stderr = append(p.stderr, line)
			p.mu.Unlock()
			var rec struct{ Msg, Listen string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "serving" {
				addr <- rec.Listen
			}
		}
	}()
	go func() {
		<-read // Wait closes the pipe: read it whole first
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("toolrouter's stderr:\n%s", strings.Join(p.lines(), "\n"))
		}
	})
	select {
	case a := <-addr:
		p.Base = "http://" + a
	case <-p.exited:
		t.Fatalf("toolrouter exited before serving: %v\n%s", p.err, strings.Join(p.lines(), "\n"))
	case <-time.After(60 * time.Second):
		t.Fatal("toolrouter did not start serving within 60s")
	}
	return p
}

// lines returns what the process has written to stderr so far, one entry a line.
func (p *process) lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.stderr...)
}

// stop sends SIGTERM and waits for the process to exit successfully; it returns all of stderr.
func (p *process) stop(t *testing.T) []string {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
		if p.err != nil {
			t.Errorf("toolrouter exited with %v, want success", p.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("toolrouter still running 30s after SIGTERM")
	}
	return p.lines()
}
