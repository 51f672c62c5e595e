package usage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"toolrouter/approval"
	"toolrouter/approval/storetest"
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
			token, expires, err := ka.Hold(ctx, held, approval.DefaultShare)
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

			race, _, err := ka.Hold(ctx, held, approval.DefaultShare)
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
			old, _, err := short.Hold(ctx, held, approval.DefaultShare)
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
// for the last place too. A call expired less than approval.MaxClockSkew ago is not evicted.
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
		{name: "full, calls expired beyond the clocks' skew make room, used or not",
			fills:    []fill{{approval.MaxHeld - 2, time.Hour, false}, {1, -2 * approval.MaxClockSkew, true}, {1, -2 * approval.MaxClockSkew, false}},
			wantRows: approval.MaxHeld - 1},
		{name: "full, calls expired within the clocks' skew are kept: a replica behind still honours them",
			fills:    []fill{{approval.MaxHeld - 2, time.Hour, false}, {2, -approval.MaxClockSkew / 2, false}},
			wantFull: true, wantRows: approval.MaxHeld},
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
					err := s.PutHeld(ctx, "new", approval.Held{Identity: "acme", Expires: time.Now().Add(time.Hour), Record: []byte("{}")}, approval.DefaultShare)
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
					wg.Go(func() {
						errs[i] = r.PutHeld(ctx, fmt.Sprint("new", i), approval.Held{Identity: "acme", Expires: time.Now().Add(time.Hour), Record: []byte("{}")}, approval.DefaultShare)
					})
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
	if _, err := s.db.ExecContext(t.Context(), `DELETE FROM held_decisions`); err != nil {
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

// TestHeldShares: on the usage database, shared by replicas, an identity that fills its share of
// held calls (in calls, or in the bytes of their records) is refused with approval.ErrShareFull,
// and an identity of another org still holds; its used and expired calls leave the share.
func TestHeldShares(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			open := b.open(t)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			a, c := open(), open()
			defer a.Close()
			defer c.Close()
			resetHeld(t, a)
			ka, kc := approval.NewKeeper(a, time.Hour), approval.NewKeeper(c, time.Hour)
			call := func(identity string) approval.Call {
				return approval.Call{Identity: identity, Server: "fs", Tool: "delete", Arguments: map[string]any{"path": strings.Repeat("x", 1000)}}
			}
			share := approval.Share{Calls: 3}
			var tokens []string
			for i := range 3 {
				k := []*approval.Keeper{ka, kc}[i%2]
				token, _, err := k.Hold(ctx, call("acme/ops"), share)
				if err != nil {
					t.Fatalf("hold %d: %v", i+1, err)
				}
				tokens = append(tokens, token)
			}
			if _, _, err := kc.Hold(ctx, call("acme/ops"), share); !errors.Is(err, approval.ErrShareFull) {
				t.Errorf("over the share: got %v, want ErrShareFull", err)
			}
			if _, _, err := ka.Hold(ctx, call("globex/ops"), share); err != nil {
				t.Errorf("another org's identity: got %v, want it held", err)
			}
			if _, err := kc.Take(ctx, tokens[0], "acme/ops", nil); err != nil {
				t.Fatal(err)
			}
			if _, _, err := ka.Hold(ctx, call("acme/ops"), share); err != nil {
				t.Errorf("after one call was approved: got %v, want it held", err)
			}

			resetHeld(t, a)
			bytes := approval.Share{Bytes: 2500} // two records of about 1,100 bytes, not three
			for i := range 2 {
				if _, _, err := ka.Hold(ctx, call("acme/ops"), bytes); err != nil {
					t.Fatalf("hold %d: %v", i+1, err)
				}
			}
			if _, _, err := kc.Hold(ctx, call("acme/ops"), bytes); !errors.Is(err, approval.ErrShareFull) {
				t.Errorf("over the share's bytes: got %v, want ErrShareFull", err)
			}
			if _, _, err := kc.Hold(ctx, call("globex/ops"), bytes); err != nil {
				t.Errorf("another org's identity: got %v, want it held", err)
			}

			resetHeld(t, a)
			short := approval.NewKeeper(a, time.Nanosecond)
			if _, _, err := short.Hold(ctx, call("acme/ops"), approval.Share{Calls: 1}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := ka.Hold(ctx, call("acme/ops"), approval.Share{Calls: 1}); err != nil {
				t.Errorf("after the only call expired: got %v, want it held", err)
			}
		})
	}
}

// TestHeldConcurrentSQLite: many calls held at once through two replicas on one SQLite file,
// whose busy timeout is far shorter than the writes' wait, all succeed: a busy database is waited
// for within each request's deadline, never reported to the caller.
func TestHeldConcurrentSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.db")
	open := func() *Store {
		s := &Store{d: sqlite, path: path, stmts: map[string]*sql.Stmt{}, busy: time.Millisecond}
		if err := s.openFile(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	replicas := []*approval.Keeper{approval.NewKeeper(open(), time.Hour), approval.NewKeeper(open(), time.Hour)}
	const workers, each = 8, 40
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed []error
	)
	for w := range workers {
		k := replicas[w%2]
		wg.Go(func() {
			for i := range each {
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				token, _, err := k.Hold(ctx, approval.Call{Identity: fmt.Sprint("acme/w", w), Server: "fs", Tool: "delete",
					Arguments: map[string]any{"i": i}}, approval.DefaultShare)
				if err == nil && i%4 == 0 {
					_, err = k.Take(ctx, token, fmt.Sprint("acme/w", w), nil)
				}
				cancel()
				if err != nil {
					mu.Lock()
					failed = append(failed, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Errorf("%d of %d holds failed, the first: %v", len(failed), workers*each, failed[0])
	}
}

// TestHeldListing: the usage database lists held calls, gives them back by key and keeps
// decisions as Memory does, on SQLite and PostgreSQL.
func TestHeldListing(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			s := b.open(t)()
			defer s.Close()
			resetHeld(t, s)
			storetest.Listing(t, s)
		})
	}
}

// TestHeldDecisionsBounded: held_decisions keeps the newest approval.MaxDecisions decisions: a
// decision recorded past them drops the oldest.
func TestHeldDecisionsBounded(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			s := b.open(t)()
			defer s.Close()
			resetHeld(t, s)
			ctx := t.Context()
			old := time.Now().Add(-time.Hour).UnixMilli()
			if _, err := s.db.ExecContext(ctx, s.d.q(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
				INSERT INTO held_decisions (key, decided_ms, outcome, decider, request_id, identity, server, tool)
				SELECT 'old' || CAST(i AS TEXT), CAST(? AS BIGINT), 'approved', 'acme', '', 'acme', 'fs', 'write' FROM n`),
				approval.MaxDecisions, old); err != nil {
				t.Fatal(err)
			}
			if err := s.RecordDecision(ctx, approval.Decided{ID: "new", Outcome: approval.Declined, By: "acme/ops", At: time.Now(),
				Identity: "acme", Server: "fs", Tool: "write"}); err != nil {
				t.Fatal(err)
			}
			var n int
			var oldest string
			if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM held_decisions`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if err := s.db.QueryRowContext(ctx, `SELECT key FROM held_decisions ORDER BY id LIMIT 1`).Scan(&oldest); err != nil {
				t.Fatal(err)
			}
			if n != approval.MaxDecisions || oldest != "old2" {
				t.Errorf("got %d decisions, the oldest %q; want %d, old1 dropped", n, oldest, approval.MaxDecisions)
			}
			ds, err := s.Decisions(ctx, 1)
			if err != nil || len(ds) != 1 || ds[0].ID != "new" {
				t.Errorf("the newest: got %+v (%v), want the decision just recorded", ds, err)
			}
		})
	}
}
