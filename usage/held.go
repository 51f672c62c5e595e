package usage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

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

// heldKept is how long a held call stays after it expired (a late approval is told "expired",
// not "unknown"), before PutHeld drops it; sooner when the table is full (see PutHeld).
const heldKept = 24 * time.Hour

// PutHeld stores a held call's record under key, and drops the records expired more than
// heldKept ago. The table keeps at most approval.MaxHeld calls across every replica sharing the
// database: when that many are held, the expired ones, used or not, make room, and a new call is
// refused with approval.ErrFull (wrapped) when none has expired. It satisfies approval.Store with
// Held and UseHeld.
func (s *Store) PutHeld(ctx context.Context, key string, expires time.Time, record []byte) error {
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	if err := s.putHeld(ctx, key, expires, record, time.Now()); err != nil {
		return fmt.Errorf("storing a held call: %w", err)
	}
	return nil
}

// putHeld is PutHeld at now, in one transaction, which replicas take in turn (PostgreSQL's
// advisory lock, SQLite's write lock), so that they cannot together hold more than the bound.
func (s *Store) putHeld(ctx context.Context, key string, expires time.Time, record []byte, now time.Time) error {
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
		// Expired as approval.Keeper's Take has it: not before now.
		res, err := tx.ExecContext(ctx, s.d.q(`DELETE FROM held_calls WHERE expires_ms <= ?`), now.UnixMilli())
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
	if _, err := tx.ExecContext(ctx, s.d.q(`INSERT INTO held_calls (key, record, expires_ms, used_ms) VALUES (?, ?, ?, 0)`),
		key, string(record), expires.UnixMilli()); err != nil {
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
	res, err := s.db.ExecContext(ctx, s.d.q(`UPDATE held_calls SET used_ms = ? WHERE key = ? AND used_ms = 0`), time.Now().UnixMilli(), key)
	if err != nil {
		return false, fmt.Errorf("using a held call's token: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("using a held call's token: %w", err)
	}
	return n == 1, nil
}
