package usage

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"toolrouter/internal/services"
)

// TestPins: the first pin claimed for a tool is the one every store on the database reads back
// (two replicas on one SQLite file, or on one PostgreSQL database when it is installed), an
// approval replaces it and sets the approved pin, and both survive reopening the database.
func TestPins(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			open := b.open(t)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			a, c := open(), open() // two replicas
			claim := func(s *Store, tool, pin, wantPinned, wantApproved string) {
				t.Helper()
				pinned, approved, err := s.ClaimPin(ctx, "fs", tool, pin)
				if err != nil {
					t.Fatal(err)
				}
				if pinned != wantPinned || approved != wantApproved {
					t.Errorf("ClaimPin(%s, %s): got pinned %q approved %q, want %q and %q", tool, pin, pinned, approved, wantPinned, wantApproved)
				}
			}
			claim(a, "read", "p1", "p1", "")
			claim(c, "read", "p2", "p1", "") // the other replica saw another definition: the first stays
			claim(c, "write", "w1", "w1", "")
			if err := c.ApprovePin(ctx, "fs", "read", "p2"); err != nil {
				t.Fatal(err)
			}
			claim(a, "read", "p3", "p2", "p2")
			if err := a.ApprovePin(ctx, "fs", "new", "n1"); err != nil { // approving a tool never claimed
				t.Fatal(err)
			}
			for _, s := range []*Store{a, c} {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			s := open()
			defer s.Close()
			claim(s, "read", "p9", "p2", "p2")
			claim(s, "write", "w9", "w1", "")
			claim(s, "new", "n9", "n1", "n1")
		})
	}
}

// backend opens stores on one database: SQLite in a temporary file, or PostgreSQL when it is
// installed (always in CI); each store opened is a replica.
type backend struct {
	name string
	open func(t *testing.T) (open func() *Store)
}

func backends() []backend {
	return []backend{
		{"sqlite", func(t *testing.T) func() *Store {
			path := filepath.Join(t.TempDir(), "usage.db")
			return func() *Store { return openSQLite(t, path) }
		}},
		{"postgres", func(t *testing.T) func() *Store {
			pg := services.Postgres(t)
			return func() *Store {
				s, err := Open(t.Context(), "", pg.URL)
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
		}},
	}
}
