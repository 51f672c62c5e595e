package usage

import (
	"context"
	"fmt"
	"time"
)

// pinsSchema is schema version 2: the pins of tool definitions (package safety's Pin), one row per
// server and tool. pin is the definition the tool is compared with: the first seen, or the last
// an admin approved; approved is the last definition an admin approved ("" none), which lifts a
// quarantine for findings. Rows are never expired: a tool that comes back changed after a while
// is still a changed tool.
var pinsSchema = []string{
	`CREATE TABLE tool_pins (
		server TEXT NOT NULL, tool TEXT NOT NULL,
		pin TEXT NOT NULL, approved TEXT NOT NULL,
		first_seen_ms BIGINT NOT NULL, updated_ms BIGINT NOT NULL,
		PRIMARY KEY (server, tool))`,
}

// ClaimPin records pin as the pin of server's tool unless one is recorded already, and returns the
// recorded pin and the approved one ("" when none). Replicas that see a tool first at the same
// time agree: the first insert wins and every one reads it back. It satisfies inventory.PinStore.
func (s *Store) ClaimPin(ctx context.Context, server, tool, pin string) (pinned, approved string, err error) {
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	now := time.Now().UnixMilli()
	if _, err := s.db.ExecContext(ctx, s.d.q(`INSERT INTO tool_pins (server, tool, pin, approved, first_seen_ms, updated_ms)
		VALUES (?, ?, ?, '', ?, ?) ON CONFLICT (server, tool) DO NOTHING`), server, tool, pin, now, now); err != nil {
		return "", "", fmt.Errorf("recording the pin of %s.%s: %w", server, tool, err)
	}
	if err := s.db.QueryRowContext(ctx, s.d.q(`SELECT pin, approved FROM tool_pins WHERE server = ? AND tool = ?`),
		server, tool).Scan(&pinned, &approved); err != nil {
		return "", "", fmt.Errorf("reading the pin of %s.%s: %w", server, tool, err)
	}
	return pinned, approved, nil
}

// ApprovePin makes pin both the pin and the approved pin of server's tool: an admin accepted that
// definition, changed or flagged as it is.
func (s *Store) ApprovePin(ctx context.Context, server, tool, pin string) error {
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	now := time.Now().UnixMilli()
	if _, err := s.db.ExecContext(ctx, s.d.q(`INSERT INTO tool_pins (server, tool, pin, approved, first_seen_ms, updated_ms)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (server, tool) DO UPDATE
		SET pin = excluded.pin, approved = excluded.approved, updated_ms = excluded.updated_ms`),
		server, tool, pin, pin, now, now); err != nil {
		return fmt.Errorf("approving the pin of %s.%s: %w", server, tool, err)
	}
	return nil
}
