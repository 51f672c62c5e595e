// Package services starts the real Redis and PostgreSQL servers that tests and benchmarks use, on
// loopback in a temporary directory, and stops them. Each Start returns ErrMissing when the
// server's binary is not installed (.ci/run installs the Debian packages redis-server and
// postgresql).
package services

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// ErrMissing says a server's binary is not installed.
var ErrMissing = errors.New("not installed")

// Server is one started server.
type Server struct {
	// Addr is host:port on 127.0.0.1; URL is how a client connects (redis://… or postgres://…).
	Addr string
	URL  string
	cmd  *exec.Cmd
	dir  string
	done chan struct{}
}

// Kill stops the server at once (SIGKILL), as a crash would; the directory stays for a restart.
func (s *Server) Kill() {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

// Stop stops the server and removes its directory.
func (s *Server) Stop() {
	s.Kill()
	_ = os.RemoveAll(s.dir)
}

// StartRedis starts redis-server on a free loopback port, without persistence.
func StartRedis(ctx context.Context) (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server: %w", ErrMissing)
	}
	dir, err := os.MkdirTemp("", "toolrouter-redis-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir}
	s.URL = "redis://" + s.Addr
	if err := s.RestartRedis(ctx, bin); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// RestartRedis starts redis-server again on the same port (after Kill); bin "" finds it.
func (s *Server) RestartRedis(ctx context.Context, bin string) error {
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("redis-server"); err != nil {
			return fmt.Errorf("redis-server: %w", ErrMissing)
		}
	}
	_, port, _ := net.SplitHostPort(s.Addr)
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", s.dir, "--protected-mode", "yes")
	return s.start(ctx, cmd)
}

// StartPostgres initialises a database cluster in a temporary directory and starts PostgreSQL on
// a free loopback port, as an unprivileged user when run as root (PostgreSQL refuses root). URL
// names the database "postgres" as user "postgres", with trust authentication on loopback.
func StartPostgres(ctx context.Context) (*Server, error) {
	initdb, postgres, err := postgresBinaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "toolrouter-pg-")
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Server, error) {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	cred, err := unprivileged(dir)
	if err != nil {
		return fail(err)
	}
	data := filepath.Join(dir, "data")
	init := exec.CommandContext(ctx, initdb, "-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8")
	init.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	init.Env = append(os.Environ(), "LC_ALL=C")
	if out, err := init.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("initdb: %w\n%s", err, out))
	}
	port, err := freePort()
	if err != nil {
		return fail(err)
	}
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir}
	s.URL = fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", s.Addr)
	cmd := exec.Command(postgres, "-D", data, "-p", strconv.Itoa(port), "-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories="+dir, "-c", "fsync=off", "-c", "max_connections=100")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if err := s.start(ctx, cmd); err != nil {
		return fail(err)
	}
	return s, nil
}

// start runs cmd and waits until its port accepts connections, up to 30 s or ctx's end.
func (s *Server) start(ctx context.Context, cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL // never outlive the test or benchmark
	out, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	tail := make(chan string, 1)
	go func() {
		var last string
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			last = sc.Text()
		}
		_ = cmd.Wait()
		tail <- last
		close(s.done)
	}()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", s.Addr)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("%s exited before serving: %s", filepath.Base(cmd.Path), <-tail)
		case <-ctx.Done():
			s.Kill()
			return fmt.Errorf("%s did not serve on %s within 30 s", filepath.Base(cmd.Path), s.Addr)
		case <-tick.C:
		}
	}
}

// postgresBinaries finds initdb and postgres: on PATH, else in Debian's /usr/lib/postgresql/N/bin.
func postgresBinaries() (initdb, postgres string, err error) {
	initdb, err1 := exec.LookPath("initdb")
	postgres, err2 := exec.LookPath("postgres")
	if err1 == nil && err2 == nil {
		return initdb, postgres, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- {
		in, pg := filepath.Join(dirs[i], "initdb"), filepath.Join(dirs[i], "postgres")
		if _, err := os.Stat(in); err == nil {
			if _, err := os.Stat(pg); err == nil {
				return in, pg, nil
			}
		}
	}
	return "", "", fmt.Errorf("postgresql (initdb, postgres): %w", ErrMissing)
}

// unprivileged is the credential PostgreSQL runs under: nil when not root; the user postgres (or
// nobody) when root, with dir handed over to it.
func unprivileged(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		if u, err = user.Lookup("nobody"); err != nil {
			return nil, fmt.Errorf("no unprivileged user to run postgres as: %w", err)
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
