package usage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
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
// not "unknown"), before PutHeld drops it.
const heldKept = 24 * time.Hour

// PutHeld stores a held call's record under key, and drops the records expired more than a day
// ago. It satisfies approval.Store with Held and UseHeld.
func (s *Store) PutHeld(ctx context.Context, key string, expires time.Time, record []byte) error {
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	if _, err := s.db.ExecContext(ctx, s.d.q(`DELETE FROM held_calls WHERE expires_ms < ?`),
		time.Now().Add(-heldKept).UnixMilli()); err != nil {
		return fmt.Errorf("dropping expired held calls: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, s.d.q(`INSERT INTO held_calls (key, record, expires_ms, used_ms) VALUES (?, ?, ?, 0)`),
		key, string(record), expires.UnixMilli()); err != nil {
		return fmt.Errorf("storing a held call: %w", err)
	}
	return nil
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
