package services

import (
	"errors"
	"os"
	"testing"
)

// Postgres starts PostgreSQL for tb and stops it when tb ends. Where it is not installed tb is
// skipped, except under CI=true (.ci/run installs it), where that fails tb.
func Postgres(tb testing.TB) *Server {
	tb.Helper()
	pg, err := StartPostgres(tb.Context())
	if errors.Is(err, ErrMissing) && os.Getenv("CI") != "true" {
		tb.Skipf("skipping: PostgreSQL %v (.ci/run installs it)", err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pg.Stop)
	return pg
}
