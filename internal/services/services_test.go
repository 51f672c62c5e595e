package services

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// need skips when the server is not installed, unless under CI, where .ci/run installs it.
func need(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, ErrMissing) && os.Getenv("CI") != "true" {
		t.Skipf("skipping: %v (.ci/run installs it)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestRedis: the server answers PING, goes away on Kill and comes back on the same address.
func TestRedis(t *testing.T) {
	ctx := context.Background()
	s, err := StartRedis(ctx)
	need(t, err)
	defer s.Stop()
	ping := func() error {
		c, err := net.DialTimeout("tcp", s.Addr, time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("PING\r\n")); err != nil {
			return err
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return err
		}
		if strings.TrimSpace(line) != "+PONG" {
			return errors.New("got " + line)
		}
		return nil
	}
	if err := ping(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	s.Kill()
	if err := ping(); err == nil {
		t.Fatal("PING answered after Kill")
	}
	if err := s.RestartRedis(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if err := ping(); err != nil {
		t.Fatalf("PING after restart: %v", err)
	}
}

// TestPostgres: the server accepts connections on loopback (the driver-level checks are the usage
// store's tests).
func TestPostgres(t *testing.T) {
	s, err := StartPostgres(context.Background())
	need(t, err)
	defer s.Stop()
	c, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", s.Addr, err)
	}
	c.Close()
	if !strings.HasPrefix(s.URL, "postgres://postgres@127.0.0.1:") {
		t.Errorf("got URL %q, want postgres://postgres@127.0.0.1:PORT/…", s.URL)
	}
}
