// Package redistest runs a real redis-server for tests (internal/services): on a free loopback
// port, persisting nothing, stopped by the test's cleanup. A test on a machine without
// redis-server is skipped, saying why, unless CI is "true" (.ci/run installs it), where it fails.
package redistest

import (
	"context"
	"errors"
	"os"
	"testing"

	"toolrouter/internal/services"
)

// Server is one redis-server process.
type Server struct {
	t testing.TB
	s *services.Server
}

// Start starts redis-server and waits until it serves.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := services.StartRedis(context.Background())
	if errors.Is(err, services.ErrMissing) {
		const why = "redis-server not found: the Redis tests need it (apt-get install -y redis-server; .ci/run installs it)"
		if os.Getenv("CI") == "true" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return &Server{t: t, s: s}
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.s.Addr }

// URL is the server's redis:// URL.
func (s *Server) URL() string { return s.s.URL + "/0" }

// Kill stops the server at once (SIGKILL), as a crash would.
func (s *Server) Kill() { s.s.Kill() }

// Restart starts the server again on the same port, empty, and waits until it serves.
func (s *Server) Restart() {
	s.t.Helper()
	if err := s.s.RestartRedis(context.Background(), ""); err != nil {
		s.t.Fatal(err)
	}
}
