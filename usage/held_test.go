package usage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"toolrouter/approval"
)

// TestHeldCalls: a call held through one replica is honoured by another on the same database
// (SQLite file or PostgreSQL), once: for its identity only, not used up by a refusing check,
// refused when replayed, and of two replicas taking one token at once exactly one gets it. An
// expired token is refused as expired.
var errChanged = errors.New("the tool changed")

func TestHeldCalls(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			open := b.open(t)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			a, c := open(), open()
			defer a.Close()
			defer c.Close()
			ka, kc := approval.NewKeeper(a, time.Hour), approval.NewKeeper(c, time.Hour)
			held := approval.Call{Identity: "acme/ops", Server: "fs", Tool: "delete", Arguments: map[string]any{"path": "/tmp/x"}, Pin: "p1", Reason: "destructive"}
			token, expires, err := ka.Hold(ctx, held)
			if err != nil {
				t.Fatal(err)
			}
			if until := time.Until(expires); until < 59*time.Minute || until > time.Hour {
				t.Errorf("expires in %s, want an hour", until)
			}
			if _, err := kc.Take(ctx, token, "acme/other", nil); !errors.Is(err, approval.ErrOtherIdentity) {
				t.Errorf("another identity: got %v, want ErrOtherIdentity", err)
			}
			if _, err := kc.Take(ctx, token, "acme/ops", func(approval.Call) error { return errChanged }); !errors.Is(err, errChanged) {
				t.Errorf("a refusing check: got %v", err)
			}
			got, err := kc.Take(ctx, token, "acme/ops", nil)
			if err != nil {
				t.Fatalf("the other replica: %v", err)
			}
			if got.Tool != "delete" || got.Arguments["path"] != "/tmp/x" || got.Pin != "p1" {
				t.Errorf("got %+v, want the held call", got)
			}
			if _, err := ka.Take(ctx, token, "acme/ops", nil); !errors.Is(err, approval.ErrUsed) {
				t.Errorf("replay: got %v, want ErrUsed", err)
			}
			if _, err := ka.Take(ctx, "tra_never-issued", "acme/ops", nil); !errors.Is(err, approval.ErrUnknownToken) {
				t.Errorf("unknown token: got %v, want ErrUnknownToken", err)
			}

			race, _, err := ka.Hold(ctx, held)
			if err != nil {
				t.Fatal(err)
			}
			var (
				wg   sync.WaitGroup
				errs [2]error
			)
			for i, k := range []*approval.Keeper{ka, kc} {
				wg.Go(func() { _, errs[i] = k.Take(ctx, race, "acme/ops", nil) })
			}
			wg.Wait()
			if won := (errs[0] == nil) != (errs[1] == nil); !won || !(errors.Is(errs[0], approval.ErrUsed) || errors.Is(errs[1], approval.ErrUsed)) {
				t.Errorf("two replicas taking one token: got %v and %v, want exactly one success and ErrUsed", errs[0], errs[1])
			}

			short := approval.NewKeeper(a, time.Nanosecond)
			old, _, err := short.Hold(ctx, held)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := kc.Take(ctx, old, "acme/ops", nil); !errors.Is(err, approval.ErrExpired) {
				t.Errorf("expired: got %v, want ErrExpired", err)
			}
		})
	}
}

// TestHeldBounded: held_calls keeps at most approval.MaxHeld calls. Calls expired more than a day
// ago are dropped, used or not; at the bound the expired ones, used or not, make room, and a new
// call is refused with approval.ErrFull when every call kept is unexpired, on replicas racing
// for the last place too.
func TestHeldBounded(t *testing.T) {
	type fill struct {
		n         int
		expiresIn time.Duration // negative: expired that long ago
		used      bool
	}
	tests := []struct {
		name     string
		fills    []fill
		wantFull bool
		wantRows int
	}{
		{name: "room", fills: []fill{{10, time.Hour, false}}, wantRows: 11},
		{name: "expired over a day ago dropped, used or not",
			fills:    []fill{{3, -25 * time.Hour, true}, {3, -25 * time.Hour, false}, {2, -time.Hour, true}, {5, time.Hour, false}},
			wantRows: 2 + 5 + 1},
		{name: "full of unexpired calls, used ones too", fills: []fill{{approval.MaxHeld - 1, time.Hour, false}, {1, time.Hour, true}},
			wantFull: true, wantRows: approval.MaxHeld},
		{name: "full, expired calls make room, used or not",
			fills:    []fill{{approval.MaxHeld - 2, time.Hour, false}, {1, -time.Minute, true}, {1, -time.Minute, false}},
			wantRows: approval.MaxHeld - 1},
	}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			open := b.open(t)
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			s, other := open(), open()
			defer s.Close()
			defer other.Close()
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					resetHeld(t, s)
					for i, f := range tc.fills {
						fillHeld(t, s, fmt.Sprintf("fill%d-", i), f.n, time.Now().Add(f.expiresIn), f.used)
					}
					err := s.PutHeld(ctx, "new", time.Now().Add(time.Hour), []byte("{}"))
					switch {
					case tc.wantFull && (!errors.Is(err, approval.ErrFull) || !strings.HasPrefix(err.Error(), "storing a held call: ")):
						t.Errorf("got %v, want ErrFull wrapped as storing a held call", err)
					case !tc.wantFull && err != nil:
						t.Errorf("got %v, want nil", err)
					}
					if _, _, found, err := s.Held(ctx, "new"); err != nil || found == tc.wantFull {
						t.Errorf("got the new call found %v (%v), want %v", found, err, !tc.wantFull)
					}
					if got := heldRows(t, s); got != tc.wantRows {
						t.Errorf("got %d rows, want %d", got, tc.wantRows)
					}
				})
			}
			t.Run("replicas racing for the last place", func(t *testing.T) {
				resetHeld(t, s)
				fillHeld(t, s, "fill-", approval.MaxHeld-1, time.Now().Add(time.Hour), false)
				var (
					wg   sync.WaitGroup
					errs [2]error
				)
				for i, r := range []*Store{s, other} {
					wg.Go(func() { errs[i] = r.PutHeld(ctx, fmt.Sprint("new", i), time.Now().Add(time.Hour), []byte("{}")) })
				}
				wg.Wait()
				if won := (errs[0] == nil) != (errs[1] == nil); !won || !(errors.Is(errs[0], approval.ErrFull) || errors.Is(errs[1], approval.ErrFull)) {
					t.Errorf("got %v and %v, want exactly one success and ErrFull", errs[0], errs[1])
				}
				if got := heldRows(t, s); got != approval.MaxHeld {
					t.Errorf("got %d rows, want %d", got, approval.MaxHeld)
				}
			})
		})
	}
}

// resetHeld empties s's held_calls.
func resetHeld(t *testing.T, s *Store) {
	t.Helper()
	if _, err := s.db.ExecContext(t.Context(), `DELETE FROM held_calls`); err != nil {
		t.Fatal(err)
	}
}

// fillHeld adds n calls to s's held_calls in one statement, keyed prefix1 to prefixN, expiring at
// expires, their tokens used or not.
func fillHeld(t *testing.T, s *Store, prefix string, n int, expires time.Time, used bool) {
	t.Helper()
	var usedMS int64
	if used {
		usedMS = time.Now().UnixMilli()
	}
	if _, err := s.db.ExecContext(t.Context(), s.d.q(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		INSERT INTO held_calls (key, record, expires_ms, used_ms)
		SELECT CAST(? AS TEXT) || CAST(i AS TEXT), '{}', CAST(? AS BIGINT), CAST(? AS BIGINT) FROM n`),
		n, prefix, expires.UnixMilli(), usedMS); err != nil {
		t.Fatalf("filling held_calls: %v", err)
	}
}

// heldRows counts s's held_calls.
func heldRows(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.db.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM held_calls`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
