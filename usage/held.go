package usage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	sqlitedriver "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"toolrouter/approval"
)

// heldSchema is schema version 3: the tool calls that await approval (package approval), one row
// per token, under the token's hash. The record is approval's JSON; used_ms is 0 until the token
// is used.
var heldSchema = []string{
	`CREATE TABLE held_calls (
		key TEXT NOT NULL PRIMARY KEY,
		record TEXT NOT NULL,
		expires_ms BIGINT NOT NULL, used_ms BIGINT NOT NULL)`,
	`CREATE INDEX held_calls_expires ON held_calls (expires_ms)`,
}

// heldShareSchema is schema version 4: whose each held call is and the bytes of its record, so
// that PutHeld counts an identity's share without reading records. Calls held before it have no
// identity, and count against no share.
var heldShareSchema = []string{
	`ALTER TABLE held_calls ADD COLUMN identity TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE held_calls ADD COLUMN bytes BIGINT NOT NULL DEFAULT 0`,
	`CREATE INDEX held_calls_identity ON held_calls (identity, expires_ms)`,
}

// heldDecisionsSchema is schema version 5: the decisions on held calls (who decided what, when,
// about which call), at most approval.MaxDecisions rows. A call that expired undecided is not a
// row: Decisions reads it from held_calls while they keep it.
func heldDecisionsSchema(d dialect) []string {
	return []string{
		`CREATE TABLE held_decisions (
			id ` + d.id + `,
			key TEXT NOT NULL, decided_ms BIGINT NOT NULL, outcome TEXT NOT NULL, decider TEXT NOT NULL,
			request_id TEXT NOT NULL, identity TEXT NOT NULL, server TEXT NOT NULL, tool TEXT NOT NULL)`,
		`CREATE INDEX held_decisions_decided ON held_decisions (decided_ms)`,
	}
}

// heldKept is how long a held call stays after it expired (a late approval is told "expired",
// not "unknown"), before PutHeld drops it; sooner when the table is full (see PutHeld).
const heldKept = 24 * time.Hour

// PutHeld stores a held call's record under key, and drops the records expired more than
// heldKept ago. The table keeps at most approval.MaxHeld calls across every replica sharing the
// database: when that many are held, the ones expired more than approval.MaxClockSkew ago, used
// or not, make room, and a new call is refused with approval.ErrFull (wrapped) when none has. A
// call that would take its identity past share is refused with approval.ErrShareFull (wrapped).
// A database busy with another writer is tried again until ctx ends. It satisfies
// approval.Store with Held and UseHeld.
func (s *Store) PutHeld(ctx context.Context, key string, h approval.Held, share approval.Share) error {
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	err := s.heldWrite(ctx, func() error { return s.putHeld(ctx, key, h, share, time.Now()) })
	if err != nil {
		return fmt.Errorf("storing a held call: %w", err)
	}
	return nil
}

// heldRetry is the longest pause between two tries of a held call's write that found SQLite
// busy.
const heldRetry = 50 * time.Millisecond

// heldWrite runs write on SQLite one at a time in this process (so that its writers do not
// contend for the file's lock among themselves), and again while another process holds the lock
// past SQLite's busy timeout, until ctx ends: a caller waits for a busy database within its
// deadline rather than being told it is busy. PostgreSQL's writes run as they come (PutHeld's
// take turns on its advisory lock, which waits).
func (s *Store) heldWrite(ctx context.Context, write func() error) error {
	if s.d.name != sqlite.name {
		return write()
	}
	s.heldOnce.Do(func() { s.heldTurn = make(chan struct{}, 1) })
	select {
	case s.heldTurn <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("waiting for the held calls' turn: %w", context.Cause(ctx))
	}
	defer func() { <-s.heldTurn }()
	pause := time.Millisecond
	for {
		err := write()
		if !busy(err) {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (still busy when the request's deadline came: %w)", err, context.Cause(ctx))
		}
		pause = min(2*pause, heldRetry)
	}
}

// busy reports whether err is SQLite's "database is locked" (SQLITE_BUSY, SQLITE_LOCKED).
func busy(err error) bool {
	var e *sqlitedriver.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return true
	}
	return false
}

// putHeld is PutHeld at now, in one transaction, which replicas take in turn (PostgreSQL's
// advisory lock, SQLite's write lock), so that they cannot together hold more than the bounds.
func (s *Store) putHeld(ctx context.Context, key string, h approval.Held, share approval.Share, now time.Time) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if s.d.heldLock != "" {
		if _, err := tx.ExecContext(ctx, s.d.heldLock); err != nil {
			return fmt.Errorf("locking held calls: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, s.d.q(`DELETE FROM held_calls WHERE expires_ms < ?`), now.Add(-heldKept).UnixMilli()); err != nil {
		return fmt.Errorf("dropping expired held calls: %w", err)
	}
	var n int64
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM held_calls`).Scan(&n); err != nil {
		return fmt.Errorf("counting held calls: %w", err)
	}
	if n >= approval.MaxHeld {
		// Expired as approval.Keeper's Take has it (not before now) on every replica whose clock
		// is less than MaxClockSkew behind this one's.
		res, err := tx.ExecContext(ctx, s.d.q(`DELETE FROM held_calls WHERE expires_ms <= ?`), now.Add(-approval.MaxClockSkew).UnixMilli())
		if err != nil {
			return fmt.Errorf("dropping expired held calls: %w", err)
		}
		dropped, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("dropping expired held calls: %w", err)
		}
		if n -= dropped; n >= approval.MaxHeld {
			return fmt.Errorf("the usage database keeps %d unexpired calls, the most it may: %w", n, approval.ErrFull)
		}
	}
	if share.Calls > 0 || share.Bytes > 0 {
		var calls, bytes int64
		if err := tx.QueryRowContext(ctx, s.d.q(`SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM held_calls
			WHERE identity = ? AND used_ms = 0 AND expires_ms > ?`), h.Identity, now.UnixMilli()).Scan(&calls, &bytes); err != nil {
			return fmt.Errorf("counting %q's held calls: %w", h.Identity, err)
		}
		if err := share.Check(h.Identity, int(calls), bytes+int64(len(h.Record))); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, s.d.q(`INSERT INTO held_calls (key, record, expires_ms, used_ms, identity, bytes) VALUES (?, ?, ?, 0, ?, ?)`),
		key, string(h.Record), h.Expires.UnixMilli(), h.Identity, len(h.Record)); err != nil {
		return err
	}
	return tx.Commit()
}

// Held returns the record stored under key and whether its token was used.
func (s *Store) Held(ctx context.Context, key string) (record []byte, used, found bool, err error) {
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	var (
		text   string
		usedMS int64
	)
	switch err := s.db.QueryRowContext(ctx, s.d.q(`SELECT record, used_ms FROM held_calls WHERE key = ?`), key).Scan(&text, &usedMS); {
	case errors.Is(err, sql.ErrNoRows):
		return nil, false, false, nil
	case err != nil:
		return nil, false, false, fmt.Errorf("reading a held call: %w", err)
	}
	return []byte(text), usedMS != 0, true, nil
}

// UseHeld marks the token under key used, and reports whether this call did: of replicas taking
// one token at once, exactly one does.
func (s *Store) UseHeld(ctx context.Context, key string) (bool, error) {
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	var res sql.Result
	err := s.heldWrite(ctx, func() (err error) {
		res, err = s.db.ExecContext(ctx, s.d.q(`UPDATE held_calls SET used_ms = ? WHERE key = ? AND used_ms = 0`), time.Now().UnixMilli(), key)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("using a held call's token: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("using a held call's token: %w", err)
	}
	return n == 1, nil
}

// ListHeld returns the unexpired, unused held calls f selects, in key order.
func (s *Store) ListHeld(ctx context.Context, f approval.Filter) ([]approval.Record, error) {
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	if f.Limit <= 0 {
		f.Limit = approval.DefaultPage
	}
	q := `SELECT key, record FROM held_calls WHERE used_ms = 0 AND expires_ms > ? AND key > ?`
	args := []any{time.Now().UnixMilli(), f.After}
	if f.Identity != "" {
		q += ` AND identity = ?`
		args = append(args, f.Identity)
	}
	q += ` ORDER BY key LIMIT ?`
	args = append(args, f.Limit)
	rows, err := s.db.QueryContext(ctx, s.d.q(q), args...)
	if err != nil {
		return nil, fmt.Errorf("listing held calls: %w", err)
	}
	defer rows.Close()
	var out []approval.Record
	for rows.Next() {
		var key, record string
		if err := rows.Scan(&key, &record); err != nil {
			return nil, fmt.Errorf("listing held calls: %w", err)
		}
		out = append(out, approval.Record{Key: key, Record: []byte(record)})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing held calls: %w", err)
	}
	return out, nil
}

// RecordDecision keeps a decision on a held call, and drops the oldest past
// approval.MaxDecisions.
func (s *Store) RecordDecision(ctx context.Context, d approval.Decided) error {
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	err := s.heldWrite(ctx, func() error {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		if _, err := tx.ExecContext(ctx, s.d.q(`INSERT INTO held_decisions (key, decided_ms, outcome, decider, request_id, identity, server, tool)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`), d.ID, d.At.UnixMilli(), string(d.Outcome), d.By, d.RequestID, d.Identity, d.Server, d.Tool); err != nil {
			return err
		}
		// The ids grow with each row: every one below the MaxDecisions-th newest goes.
		if _, err := tx.ExecContext(ctx, s.d.q(`DELETE FROM held_decisions WHERE id <= (SELECT MAX(id) FROM held_decisions) - ?`),
			approval.MaxDecisions); err != nil {
			return err
		}
		return tx.Commit()
	})
	if err != nil {
		return fmt.Errorf("recording a decision on a held call: %w", err)
	}
	return nil
}

// Decisions returns the newest decisions, at most limit, newest first: those recorded and the
// held calls that expired unused.
func (s *Store) Decisions(ctx context.Context, limit int) ([]approval.Decided, error) {
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	rows, err := s.db.QueryContext(ctx, s.d.q(`SELECT key, decided_ms, outcome, decider, request_id, identity, server, tool
		FROM held_decisions ORDER BY decided_ms DESC, id DESC LIMIT ?`), limit)
	if err != nil {
		return nil, fmt.Errorf("reading decisions: %w", err)
	}
	var recorded []approval.Decided
	for rows.Next() {
		var (
			d       approval.Decided
			at      int64
			outcome string
		)
		if err := rows.Scan(&d.ID, &at, &outcome, &d.By, &d.RequestID, &d.Identity, &d.Server, &d.Tool); err != nil {
			rows.Close()
			return nil, fmt.Errorf("reading decisions: %w", err)
		}
		d.At, d.Outcome = time.UnixMilli(at).UTC(), approval.Decision(outcome)
		recorded = append(recorded, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading decisions: %w", err)
	}
	rows, err = s.db.QueryContext(ctx, s.d.q(`SELECT key, record FROM held_calls WHERE used_ms = 0 AND expires_ms <= ?
		ORDER BY expires_ms DESC LIMIT ?`), time.Now().UnixMilli(), limit)
	if err != nil {
		return nil, fmt.Errorf("reading expired held calls: %w", err)
	}
	defer rows.Close()
	var expired []approval.Decided
	for rows.Next() {
		var key, record string
		if err := rows.Scan(&key, &record); err != nil {
			return nil, fmt.Errorf("reading expired held calls: %w", err)
		}
		if d, ok := approval.ExpiredOf(key, []byte(record)); ok {
			expired = append(expired, d)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading expired held calls: %w", err)
	}
	return approval.MergeDecisions(recorded, expired, limit), nil
}
