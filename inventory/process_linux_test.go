package inventory_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"toolrouter/config"
	"toolrouter/internal/testmcp"
	"toolrouter/inventory"
)

// sysPidfdOpen is pidfd_open(2)'s number, the same on every Linux architecture.
const sysPidfdOpen = 434

// exited waits up to d for process pid (any process, not only a child) to exit, through a pidfd:
// no polling. A zombie has exited.
func exited(t *testing.T, pid int, d time.Duration) bool {
	t.Helper()
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno == syscall.ESRCH {
		return true // already reaped
	}
	if errno != 0 {
		t.Fatalf("pidfd_open(%d): %v", pid, errno)
	}
	defer syscall.Close(int(fd))
	deadline := time.Now().Add(d)
	for {
		var set syscall.FdSet
		set.Bits[fd/64] |= 1 << (fd % 64)
		tv := syscall.NsecToTimeval(time.Until(deadline).Nanoseconds())
		n, err := syscall.Select(int(fd)+1, &set, nil, nil, &tv)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			t.Fatalf("select on pidfd: %v", err)
		}
		return n == 1
	}
}

// fifo makes a named pipe a test reads the pids its server's script writes: opening it for reading
// blocks until the script has started, so the test waits on the script, not on a clock.
func fifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "pids")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func readPIDs(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path) // blocks until the writer has written and closed
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		var pid int
		if _, err := fmt.Sscan(f, &pid); err != nil {
			t.Fatalf("pid %q: %v", f, err)
		}
		pids = append(pids, pid)
	}
	return pids
}

// TestCloseEndsProcessGroup: a stdio server that forks left its children running after Close.
// Each server runs in its own process group, and Close ends the group within its bound, whatever
// the server does.
func TestCloseEndsProcessGroup(t *testing.T) {
	exe, _ := os.Executable()
	tests := []struct {
		name   string
		script string // gets the fifo's path as $1
		env    map[string]string
		up     bool
	}{
		{"serves after forking a child", `sleep 1000 & echo $$ $! > "$1"; exec "$0" -test.run='^$'`,
			map[string]string{testmcp.EnvServe: "1"}, true},
		{"ignores its input and SIGTERM and never answers", `trap "" TERM; sleep 1000 & echo $$ $! > "$1"; while :; do wait; done`,
			nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pidPipe := fifo(t)
			cfg := timeouts(config.Server{Transport: config.TransportStdio, Command: "sh",
				Args: []string{"-c", tc.script, exe, pidPipe}, Env: tc.env})
			const grace = 200 * time.Millisecond
			m := inventory.New(map[string]config.Server{"forks": cfg}, inventory.Options{Logger: quiet, StopGrace: grace})
			started := make(chan struct{})
			go func() { m.Start(context.Background()); close(started) }()
			pids := readPIDs(t, pidPipe)
			if tc.up {
				<-started
				if st := server_(m.Snapshot(), "forks"); st.Status != inventory.StateUp {
					t.Fatalf("got %s (%s), want up", st.Status, st.Error)
				}
			}
			begin := time.Now()
			m.Close()
			if d := time.Since(begin); d > 3*grace+2*time.Second {
				t.Errorf("got Close in %v, want within about 3 × the stop grace (%v)", d, grace)
			}
			<-started // Start returns once Close has stopped the first attempt
			for _, pid := range pids {
				if !exited(t, pid, 10*time.Second) {
					t.Errorf("got process %d (of %v) still running after Close, want the whole group ended", pid, pids)
				}
			}
		})
	}
}

// TestStdoutWithoutNewline: a stdio server writing without a newline was buffered without bound
// (1.21 GB seen). The session fails past max_message_bytes, the server is stopped and reported
// down with the reason, and retried with backoff.
func TestStdoutWithoutNewline(t *testing.T) {
	pidPipe := fifo(t)
	cfg := timeouts(config.Server{Transport: config.TransportStdio, Command: "sh",
		Args: []string{"-c", `echo $$ > "$1"; exec cat /dev/zero`, "sh", pidPipe}})
	cfg.MaxMessageBytes = 64 << 10
	m := inventory.New(map[string]config.Server{"zero": cfg}, inventory.Options{Logger: quiet, StopGrace: 100 * time.Millisecond,
		Backoff: func(int) time.Duration { return time.Hour }})
	started := make(chan struct{})
	go func() { m.Start(context.Background()); close(started) }()
	t.Cleanup(m.Close)
	pids := readPIDs(t, pidPipe)
	<-started
	sv := server_(m.Snapshot(), "zero")
	if sv.Status != inventory.StateDown || !strings.Contains(sv.Error, "servers.zero.max_message_bytes") {
		t.Errorf("got %s %q, want down naming servers.zero.max_message_bytes", sv.Status, sv.Error)
	}
	if !exited(t, pids[0], 10*time.Second) {
		t.Errorf("got the server (pid %d) still running, want it stopped", pids[0])
	}
}

// TestStdoutFloodMidSessionRestarts: a live stdio server that floods its output is restarted (a
// new process) and the reason stays in last_error.
func TestStdoutFloodMidSessionRestarts(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	cfg := selfStdio(map[string]string{testmcp.EnvServeHostile: "1", envPIDFile: pidFile})
	cfg.MaxMessageBytes = 64 << 10
	m := start(t, map[string]config.Server{"hostile": cfg}, inventory.Options{StopGrace: 100 * time.Millisecond})
	if st := server_(m.Snapshot(), "hostile"); st.Status != inventory.StateUp {
		t.Fatalf("got %s (%s), want up", st.Status, st.Error)
	}
	var first int
	b, _ := os.ReadFile(pidFile)
	fmt.Sscan(string(b), &first)
	_, err := m.CallTool(context.Background(), "hostile", "spew", map[string]any{"bytes": 1 << 20})
	if !errors.Is(err, inventory.ErrMessageTooLarge) {
		t.Errorf("got %v, want ErrMessageTooLarge", err)
	}
	s := wait(t, m, "the restart", func(s *inventory.Snapshot) bool {
		sv := server_(s, "hostile")
		return sv.Status == inventory.StateUp && sv.Restarts >= 1
	})
	if sv := server_(s, "hostile"); !strings.Contains(sv.LastError, "servers.hostile.max_message_bytes") {
		t.Errorf("got last_error %q, want it naming servers.hostile.max_message_bytes", sv.LastError)
	}
	if !exited(t, first, 10*time.Second) {
		t.Errorf("got the first server (pid %d) still running, want it stopped", first)
	}
	if got := call(t, m, "hostile", "echo", map[string]any{"message": "back"}); got != "back" {
		t.Errorf("echo after restart = %q, want back", got)
	}
}

// TestShutdownOutOfTimeKillsTheGroup: when the shutdown's time runs out before a server that
// ignores its input and SIGTERM has stopped, its whole group is killed at once and Shutdown
// returns; nothing is left running.
func TestShutdownOutOfTimeKillsTheGroup(t *testing.T) {
	pidPipe := fifo(t)
	cfg := timeouts(config.Server{Transport: config.TransportStdio, Command: "sh",
		Args: []string{"-c", `trap "" TERM; sleep 1000 & echo $$ $! > "$1"; while :; do wait; done`, "sh", pidPipe}})
	// A long stop grace: the normal stop would take 3 × 5 s.
	m := inventory.New(map[string]config.Server{"stubborn": cfg}, inventory.Options{Logger: quiet, StopGrace: 5 * time.Second})
	started := make(chan struct{})
	go func() { m.Start(context.Background()); close(started) }()
	pids := readPIDs(t, pidPipe)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	begin := time.Now()
	m.Shutdown(ctx)
	if d := time.Since(begin); d > 2*time.Second {
		t.Errorf("got Shutdown in %v, want it to end soon after its 300 ms", d)
	}
	for _, pid := range pids {
		if !exited(t, pid, 5*time.Second) {
			t.Errorf("got process %d (of %v) still running after Shutdown, want the group killed", pid, pids)
		}
	}
	<-started
}
