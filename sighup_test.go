package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"toolrouter/internal/fakeollama"
)

// binary is the real command line, running: its log lines arrive on logs.
type binary struct {
	cmd    *exec.Cmd
	base   string
	logs   chan map[string]any
	exited chan struct{}
}

// runBinary runs bin with args until the test ends and waits until it serves.
func runBinary(t *testing.T, bin string, args ...string) *binary {
	t.Helper()
	b := &binary{cmd: exec.Command(bin, args...), logs: make(chan map[string]any, 4096), exited: make(chan struct{})}
	stderr, err := b.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) == nil {
				select {
				case b.logs <- line:
				default: // the test reads what it waits for; the rest may be dropped
				}
			}
			t.Logf("toolrouter: %s", sc.Bytes())
		}
	}()
	go func() {
		<-logged // Wait closes the pipe: read it whole first
		_ = b.cmd.Wait()
		close(b.exited)
	}()
	t.Cleanup(func() {
		_ = b.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-b.exited:
		case <-time.After(30 * time.Second):
			_ = b.cmd.Process.Kill()
			<-b.exited
		}
	})
	line := b.waitLog(t, "serving", func(l map[string]any) bool { return l["msg"] == "serving" })
	b.base = "http://" + fmt.Sprint(line["listen"])
	return b
}

// waitLog returns the next log line that match accepts, within 60 s.
func (b *binary) waitLog(t *testing.T, what string, match func(map[string]any) bool) map[string]any {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case l := <-b.logs:
			if match(l) {
				return l
			}
		case <-b.exited:
			t.Fatalf("toolrouter exited while the test waited for %s", what)
		case <-timeout:
			t.Fatalf("no log line %s within 60s", what)
		}
	}
}

// servers returns /readyz's servers by name (status), from the process's view.
func (b *binary) servers(t *testing.T) map[string]string {
	t.Helper()
	_, ready := get(t, b.base+"/readyz")
	out := map[string]string{}
	list, _ := ready["servers"].([]any)
	for _, s := range list {
		m, _ := s.(map[string]any)
		out[fmt.Sprint(m["name"])] = fmt.Sprint(m["status"])
	}
	return out
}

// waitServers polls /readyz until cond holds for its servers, within 60 s.
func (b *binary) waitServers(t *testing.T, what string, cond func(map[string]string) bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s := b.servers(t)
		if cond(s) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("servers not %s within 60s: %v", what, s)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition under a deadline
	}
}

// stdioServer is a stdio server running the binary's built-in name that writes its pid to file
// first (exec keeps the pid).
func stdioServer(bin, name, pidFile string) map[string]any {
	return map[string]any{"transport": "stdio", "command": "sh",
		"args": []string{"-c", fmt.Sprintf("echo $$ > %q; exec %q mcp-builtin %s", pidFile, bin, name)}, "connect_timeout": "30s"}
}

func readPID(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestSIGHUPReload runs the real binary, rewrites its configuration file (a server left alone, one
// changed, one added) and sends SIGHUP: the process goes on, the unchanged server keeps its
// process, the changed one has a new one, the added one is up. Then an invalid file: the process
// keeps its configuration and logs every problem.
func TestSIGHUPReload(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to start the stdio servers: ", err)
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	model := fakeollama.New(t)
	keepPID, changePID := filepath.Join(dir, "keep.pid"), filepath.Join(dir, "change.pid")
	cfg := map[string]any{
		"listen": "127.0.0.1:0",
		"ollama": map[string]any{"host": model.URL, "model": "fake"},
		"servers": map[string]any{
			"calculator": map[string]any{"enabled": false},
			"clock":      map[string]any{"enabled": false},
			"keep":       stdioServer(bin, "calculator", keepPID),
			"change":     stdioServer(bin, "clock", changePID),
		},
	}
	path := filepath.Join(dir, "config.json")
	write := func(v any) {
		b, _ := json.Marshal(v)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(cfg)
	b := runBinary(t, bin, "-config", path)
	b.waitServers(t, "keep and change up", func(s map[string]string) bool { return s["keep"] == "up" && s["change"] == "up" })
	keep0, change0 := readPID(t, keepPID), readPID(t, changePID)

	servers := cfg["servers"].(map[string]any)
	changed := stdioServer(bin, "clock", changePID)
	changed["call_timeout"] = "7s"
	servers["change"] = changed
	servers["added"] = map[string]any{"transport": "builtin", "builtin": "calculator"}
	cfg["http"] = map[string]any{"body_limit": 4096}
	write(cfg)
	if err := b.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	restart := b.waitLog(t, "needs a restart", func(l map[string]any) bool { return strings.Contains(fmt.Sprint(l["msg"]), "needs a restart") })
	if restart["key"] != "http.body_limit" {
		t.Errorf("got %v, want http.body_limit logged as needing a restart", restart)
	}
	done := b.waitLog(t, "configuration reloaded", func(l map[string]any) bool { return l["msg"] == "configuration reloaded" })
	if fmt.Sprint(done["added"], done["reconnected"], done["unchanged"]) != "[added] [change] [keep]" {
		t.Errorf("got reload %v, want added [added], reconnected [change], unchanged [keep]", done)
	}
	b.waitServers(t, "added, keep and change up", func(s map[string]string) bool {
		return s["added"] == "up" && s["keep"] == "up" && s["change"] == "up"
	})
	if got := readPID(t, keepPID); got != keep0 {
		t.Errorf("unchanged server: pid %s, want %s (its session kept)", got, keep0)
	}
	if got := readPID(t, changePID); got == change0 {
		t.Errorf("changed server: pid still %s, want a new process", got)
	}
	select {
	case <-b.exited:
		t.Fatal("toolrouter exited on SIGHUP")
	default:
	}

	// An invalid file: nothing changes, each problem is logged.
	write(map[string]any{"listen": "nope", "ollama": map[string]any{"timeout": "-1s"}, "servers": map[string]any{}})
	if err := b.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	problems := map[string]bool{}
	for range 2 {
		l := b.waitLog(t, "reload refused", func(l map[string]any) bool { return strings.HasPrefix(fmt.Sprint(l["msg"]), "reload refused") })
		problems[strings.SplitN(fmt.Sprint(l["problem"]), ":", 2)[0]] = true
	}
	if !problems["listen"] || !problems["ollama.timeout"] {
		t.Errorf("got problems logged for %v, want listen and ollama.timeout each on its own line", problems)
	}
	if s := b.servers(t); len(s) != 3 || s["keep"] != "up" || s["change"] != "up" || s["added"] != "up" {
		t.Errorf("after an invalid reload got servers %v, want keep, change and added still up", s)
	}
	if got := readPID(t, keepPID); got != keep0 {
		t.Errorf("after an invalid reload the unchanged server's pid is %s, want %s", got, keep0)
	}
	if status, _ := get(t, b.base+"/healthz"); status != http.StatusOK {
		t.Errorf("got /healthz %d after the reloads, want 200", status)
	}
}
