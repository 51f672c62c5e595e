package inventory

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// process is a running stdio server. It runs in its own process group, so that stopping it also
// stops whatever it started (an npx wrapper's node, a shell script's children): nothing it leaves
// behind outlives the session.
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File      // our end of the server's standard input
	stdout *os.File      // our end of the server's standard output
	exited chan struct{} // closed once Wait has returned and onExit has run
}

// startProcess starts sc's command with stderr copied to stderr, and keeps it in set while it
// runs. onExit is called with Wait's result when the server exits, before exited is closed.
func startProcess(sc ServerConfig, stderr io.Writer, set *procSet, onExit func(error)) (*process, error) {
	cmd := exec.Command(sc.Command, sc.Args...)
	cmd.Env = append(os.Environ(), envList(sc.Env)...)
	cmd.Dir = sc.Cwd
	// exec copies stderr and Wait waits for the copy; WaitDelay bounds that wait when something
	// outside the group keeps the pipe open.
	cmd.Stderr = stderr
	cmd.WaitDelay = time.Second
	ownGroup(cmd)
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("creating stdout pipe: %w", err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = cmd.Start()
	// The child has its own copies of its ends; ours would keep the pipes open after it exits.
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("starting %s: %w", sc.Command, err)
	}
	p := &process{cmd: cmd, stdin: inW, stdout: outR, exited: make(chan struct{})}
	set.add(p)
	go func() {
		err := cmd.Wait()
		set.remove(p)
		onExit(err)
		close(p.exited)
	}()
	return p, nil
}

// stop ends the server within about 3 × grace whatever it does: its standard input is closed (the
// MCP way to ask a stdio server to exit) and it gets grace to exit; then its group gets SIGTERM
// and another grace; then the group gets SIGKILL, which also ends anything the server left
// running after it exited.
func (p *process) stop(grace time.Duration) {
	_ = p.stdin.Close()
	if !p.waitExit(grace) {
		signalGroup(p.cmd, sigTerm)
		p.waitExit(grace)
	}
	signalGroup(p.cmd, sigKill)
	p.waitExit(grace)
	// Unblocks a read that something outside the group still holds open.
	_ = p.stdout.Close()
}

func (p *process) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// procSet is the stdio servers running now, so that a shutdown out of time can kill them all.
type procSet struct {
	mu    sync.Mutex // guards procs
	procs map[*process]struct{}
}

func (s *procSet) add(p *process) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.procs == nil {
		s.procs = map[*process]struct{}{}
	}
	s.procs[p] = struct{}{}
}

func (s *procSet) remove(p *process) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.procs, p)
}

// kill sends SIGKILL to every running server's process group.
func (s *procSet) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := range s.procs {
		signalGroup(p.cmd, sigKill)
	}
}
