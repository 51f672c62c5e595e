package usage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	_ "modernc.org/sqlite"           // registers the "sqlite" database/sql driver
)

// ErrOff is returned when usage records are off (usage.path and usage.postgres_url are empty).
var ErrOff = errors.New("usage records are off: set usage.path or usage.postgres_url")

// Store is the usage database: SQLite or PostgreSQL, behind database/sql.
type Store struct {
	d dialect
	// path is the SQLite file ("" for PostgreSQL).
	path string

	// dbMu guards db and file: held shared while db is used, exclusively to replace it (reopen).
	dbMu sync.RWMutex
	db   *sql.DB
	// file is the SQLite file db has open, as it was when opened.
	file os.FileInfo

	// heldTurn lets one held call's write at a time through (heldWrite); made once, by heldOnce.
	heldTurn chan struct{}
	heldOnce sync.Once
	// busy is SQLite's busy timeout (0: sqliteBusy).
	busy time.Duration

	mu sync.Mutex // guards stmts
	// stmts are the full-sized inserts of db, by query; at most one per table.
	stmts map[string]*sql.Stmt
}

// dialect is what differs between the two databases.
type dialect struct {
	name string
	// id is the type of an auto-numbered primary key column.
	id string
	// lock, if not "", serialises schema migrations between processes (PostgreSQL's advisory
	// lock, held until the migration's transaction ends); SQLite's transactions begin IMMEDIATE,
	// which does the same.
	lock string
	// heldLock, if not "", serialises PutHeld's transactions between processes, so that together
	// they keep the bound on held calls (another advisory lock); SQLite's write lock does the same.
	heldLock string
	// numbered says placeholders are $1, $2, ... rather than ?.
	numbered bool
	// copy says a batch is written with COPY (PostgreSQL's); else with multi-row INSERTs of up to
	// rows rows and maxParams bind values each. rows (measured with BenchmarkWriteSQLite) keeps
	// their statements' parsing cheap and lets them be prepared once.
	copy            bool
	rows, maxParams int
}

var (
	sqlite   = dialect{name: "sqlite", id: "INTEGER PRIMARY KEY", rows: 64, maxParams: 32766}
	postgres = dialect{name: "postgres", id: "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
		lock: "SELECT pg_advisory_xact_lock(7301884207465937011)", heldLock: "SELECT pg_advisory_xact_lock(7301884207465937012)",
		numbered: true, copy: true}
)

// q rewrites a query written with ? placeholders for the dialect.
func (d dialect) q(query string) string {
	if !d.numbered {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// sqliteBusy is how long a SQLite statement waits for another writer's lock (another process on
// the same file) before failing.
const sqliteBusy = 5 * time.Second

// Open opens the usage database and creates or migrates its schema: the PostgreSQL database at
// postgresURL when it is not "", else the SQLite file at path (created if missing), in WAL mode.
// ctx bounds connecting and migrating.
func Open(ctx context.Context, path, postgresURL string) (*Store, error) {
	switch {
	case postgresURL != "":
		db, err := sql.Open("pgx", postgresURL)
		if err != nil {
			return nil, fmt.Errorf("opening usage database: %w", err)
		}
		db.SetMaxOpenConns(4)
		if err := connect(ctx, db); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("connecting to the usage database: %w", err)
		}
		s := &Store{db: db, d: postgres, stmts: map[string]*sql.Stmt{}}
		if err := s.migrate(ctx); err != nil {
			_ = db.Close()
			return nil, err
		}
		return s, nil
	case path != "":
		if strings.Contains(path, "?") {
			return nil, fmt.Errorf("usage database path %q: must not contain '?'", path)
		}
		s := &Store{d: sqlite, path: path, stmts: map[string]*sql.Stmt{}}
		if err := s.openFile(ctx); err != nil {
			return nil, err
		}
		return s, nil
	default:
		return nil, ErrOff
	}
}

// openFile opens the SQLite file at s.path (created if missing), migrates its schema and notes
// which file it is, for fileLost. The caller holds dbMu, or has the only reference to s.
func (s *Store) openFile(ctx context.Context) error {
	// Every connection waits for the write lock, writes through a write-ahead log with a sync at
	// each commit (a committed batch survives the process being killed, and the machine losing
	// power), and begins its transactions holding the write lock.
	busy := s.busy
	if busy == 0 {
		busy = sqliteBusy
	}
	dsn := s.path + "?_busy_timeout=" + strconv.Itoa(int(busy.Milliseconds())) +
		"&_journal_mode=WAL&_synchronous=FULL&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return fmt.Errorf("opening usage database %s: %w", s.path, err)
	}
	db.SetMaxOpenConns(4)
	s.db = db
	if err := s.migrate(ctx); err != nil {
		_ = db.Close()
		return err
	}
	if s.file, err = os.Stat(s.path); err != nil {
		_ = db.Close()
		return fmt.Errorf("opening usage database %s: %w", s.path, err)
	}
	return nil
}

// fileLost reports whether the SQLite file the store has open is no longer at its path: deleted,
// moved away or replaced by another file. Always false for PostgreSQL.
func (s *Store) fileLost() (bool, error) {
	if s.path == "" {
		return false, nil
	}
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	fi, err := os.Stat(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, nil
	case err != nil:
		return false, err
	}
	return !os.SameFile(s.file, fi), nil
}

// reopen closes the SQLite database and opens the file at its path again, creating it with its
// schema when missing. The old connections are closed first: the last one checkpoints the old
// write-ahead log into the old file and removes it, so the new file never sees it. Queries
// running meanwhile finish first; until reopen succeeds the store fails every statement.
func (s *Store) reopen(ctx context.Context) error {
	s.dbMu.Lock()
	defer s.dbMu.Unlock()
	if err := s.closeDB(); err != nil {
		return fmt.Errorf("closing the lost usage database: %w", err)
	}
	return s.openFile(ctx)
}

// connect waits for a PostgreSQL server that is starting (refusing connections, or answering
// that it is starting up) until it answers or ctx ends; any other error ends it at once.
func connect(ctx context.Context, db *sql.DB) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := db.PingContext(ctx)
		if err == nil || !starting(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-tick.C:
		}
	}
}

// cannotConnectNow is PostgreSQL's SQLSTATE for "the database system is starting up".
const cannotConnectNow = "57P03"

// starting reports whether err is that of a server not yet accepting connections.
func starting(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == cannotConnectNow
	}
	var oe *net.OpError
	return errors.As(err, &oe)
}

// Close closes the database.
func (s *Store) Close() error {
	s.dbMu.Lock()
	defer s.dbMu.Unlock()
	return s.closeDB()
}

// closeDB closes db and its statements; the caller holds dbMu.
func (s *Store) closeDB() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for q, st := range s.stmts {
		errs = append(errs, st.Close())
		delete(s.stmts, q)
	}
	return errors.Join(append(errs, s.db.Close())...)
}

// migrations are the schema's versions, in order: migrations[i] takes the schema from version i to
// i+1. A version, once released, is never edited; a change is a new version.
func migrations(d dialect) [][]string {
	return [][]string{{
		`CREATE TABLE requests (
			id ` + d.id + `,
			start_ms BIGINT NOT NULL,
			org TEXT NOT NULL, team TEXT NOT NULL, agent TEXT NOT NULL, key_name TEXT NOT NULL,
			endpoint TEXT NOT NULL, status INTEGER NOT NULL, error_code TEXT NOT NULL,
			use_tool INTEGER NOT NULL, degraded_reason TEXT NOT NULL, stopped TEXT NOT NULL,
			duration_ms DOUBLE PRECISION NOT NULL,
			tool_calls INTEGER NOT NULL, tool_errors INTEGER NOT NULL, model_calls INTEGER NOT NULL,
			prompt_tokens BIGINT NOT NULL, completion_tokens BIGINT NOT NULL)`,
		`CREATE INDEX requests_start ON requests (start_ms)`,
		`CREATE TABLE tool_calls (
			id ` + d.id + `,
			request_id BIGINT NOT NULL, start_ms BIGINT NOT NULL,
			server TEXT NOT NULL, tool TEXT NOT NULL, outcome TEXT NOT NULL,
			duration_ms DOUBLE PRECISION NOT NULL)`,
		`CREATE INDEX tool_calls_start ON tool_calls (start_ms)`,
		`CREATE INDEX tool_calls_request ON tool_calls (request_id)`,
		`CREATE TABLE model_calls (
			id ` + d.id + `,
			request_id BIGINT NOT NULL, start_ms BIGINT NOT NULL,
			phase TEXT NOT NULL, model TEXT NOT NULL,
			prompt_tokens BIGINT NOT NULL, completion_tokens BIGINT NOT NULL,
			duration_ms DOUBLE PRECISION NOT NULL, failed INTEGER NOT NULL)`,
		`CREATE INDEX model_calls_start ON model_calls (start_ms)`,
		`CREATE INDEX model_calls_request ON model_calls (request_id)`,
	}, pinsSchema, heldSchema, heldShareSchema, heldDecisionsSchema(d)}
}

// migrate brings the schema to the latest version in one transaction, which concurrent openers
// (replicas starting together) take in turn. A database newer than this program is refused.
func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrating usage database: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if s.d.lock != "" {
		if _, err := tx.ExecContext(ctx, s.d.lock); err != nil {
			return fmt.Errorf("migrating usage database: locking: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS usage_schema (version INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("migrating usage database: %w", err)
	}
	var version int
	switch err := tx.QueryRowContext(ctx, `SELECT version FROM usage_schema`).Scan(&version); {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, `INSERT INTO usage_schema (version) VALUES (0)`); err != nil {
			return fmt.Errorf("migrating usage database: %w", err)
		}
	case err != nil:
		return fmt.Errorf("migrating usage database: reading its version: %w", err)
	}
	steps := migrations(s.d)
	if version > len(steps) {
		return fmt.Errorf("usage database schema is version %d, newer than this toolrouter's %d: upgrade toolrouter", version, len(steps))
	}
	if version == len(steps) {
		return nil
	}
	for v := version; v < len(steps); v++ {
		for _, stmt := range steps[v] {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("migrating usage database to version %d: %w", v+1, err)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, s.d.q(`UPDATE usage_schema SET version = ?`), len(steps)); err != nil {
		return fmt.Errorf("migrating usage database: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrating usage database: %w", err)
	}
	return nil
}

// table is one table's rows of a batch.
type table struct {
	name    string
	columns []string
	// rows each hold a value (an int, int64, float64 or string) per column.
	rows [][]any
}

// tables are recs' rows in requests, tool_calls and model_calls, ids[i] being recs[i]'s id.
func tables(recs []Record, ids []int64) []table {
	requests := table{name: "requests", columns: []string{"id", "start_ms", "org", "team", "agent", "key_name",
		"endpoint", "status", "error_code", "use_tool", "degraded_reason", "stopped", "duration_ms", "tool_calls",
		"tool_errors", "model_calls", "prompt_tokens", "completion_tokens"}, rows: make([][]any, 0, len(recs))}
	tools := table{name: "tool_calls", columns: []string{"request_id", "start_ms", "server", "tool", "outcome", "duration_ms"}}
	models := table{name: "model_calls", columns: []string{"request_id", "start_ms", "phase", "model", "prompt_tokens",
		"completion_tokens", "duration_ms", "failed"}}
	for i, r := range recs {
		id, start := ids[i], r.Start.UnixMilli()
		var errs, prompt, completion int64
		for _, t := range r.Tools {
			if t.Outcome != OutcomeOK {
				errs++
			}
			tools.rows = append(tools.rows, []any{id, start, clean(t.Server), clean(t.Tool), clean(t.Outcome), t.DurationMS})
		}
		for _, m := range r.Models {
			prompt += int64(m.PromptTokens)
			completion += int64(m.CompletionTokens)
			models.rows = append(models.rows, []any{id, start, clean(m.Phase), clean(m.Model), m.PromptTokens,
				m.CompletionTokens, m.DurationMS, flag(m.Failed)})
		}
		requests.rows = append(requests.rows, []any{id, start, clean(r.Org), clean(r.Team), clean(r.Agent),
			clean(r.KeyName), clean(r.Endpoint), r.Status, clean(r.ErrorCode), flag(r.UseTool), clean(r.DegradedReason),
			clean(r.Stopped), ms(r.Duration), len(r.Tools), errs, len(r.Models), prompt, completion})
	}
	return []table{requests, tools, models}
}

// write stores recs in one transaction: all of them or none. Whatever the batch's size, it takes
// one statement to reserve the requests' ids (so that the calls' rows name theirs without reading
// any back) and one per table: PostgreSQL's COPY, or SQLite's multi-row INSERTs (one per s.d.rows
// rows, within the process).
func (s *Store) write(ctx context.Context, recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	var err error
	if s.d.copy {
		err = s.copy(ctx, recs)
	} else {
		err = s.insert(ctx, recs)
	}
	if err != nil {
		return fmt.Errorf("writing usage records: %w", err)
	}
	return nil
}

// copy writes recs to PostgreSQL with the driver's own transaction and COPY, on a connection of
// the pool.
func (s *Store) copy(ctx context.Context, recs []Record) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("connection is a %T, not pgx's", dc)
		}
		tx, err := c.Conn().Begin(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(ctx) }()
		// The sequence's ids are no other writer's, whatever their order.
		rows, err := tx.Query(ctx, `SELECT nextval(pg_get_serial_sequence('requests', 'id')) FROM generate_series(1, $1)`, len(recs))
		if err != nil {
			return fmt.Errorf("reserving ids: %w", err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return fmt.Errorf("reserving ids: %w", err)
		}
		if len(ids) != len(recs) {
			return fmt.Errorf("reserving ids: got %d, want %d", len(ids), len(recs))
		}
		for _, t := range tables(recs, ids) {
			if len(t.rows) == 0 {
				continue
			}
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{t.name}, t.columns, pgx.CopyFromRows(t.rows)); err != nil {
				return fmt.Errorf("copying into %s: %w", t.name, err)
			}
		}
		return tx.Commit(ctx)
	})
}

// insert writes recs to SQLite in multi-row INSERTs of up to s.d.rows rows (fewer if
// s.d.maxParams says so): the full ones through a statement prepared once per store, the last
// one's as it comes.
func (s *Store) insert(ctx context.Context, recs []Record) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	// The transaction holds the database's write lock from its start (_txlock=immediate): the ids
	// after the largest are its own until it ends.
	var last int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) FROM requests`).Scan(&last); err != nil {
		return fmt.Errorf("reserving ids: %w", err)
	}
	ids := make([]int64, len(recs))
	for i := range ids {
		ids[i] = last + 1 + int64(i)
	}
	for _, t := range tables(recs, ids) {
		width := len(t.columns)
		per := max(1, min(s.d.rows, s.d.maxParams/width))
		head := "INSERT INTO " + t.name + " (" + strings.Join(t.columns, ", ") + ")"
		args := make([]any, 0, min(per, len(t.rows))*width)
		for rows := t.rows; len(rows) > 0; {
			chunk := rows[:min(per, len(rows))]
			rows = rows[len(chunk):]
			args = args[:0]
			for _, r := range chunk {
				args = append(args, r...)
			}
			query := rowsOf(head, width, len(chunk))
			var err error
			if len(chunk) == per {
				var st *sql.Stmt
				if st, err = s.prepared(ctx, query); err == nil {
					_, err = tx.StmtContext(ctx, st).ExecContext(ctx, args...)
				}
			} else {
				_, err = tx.ExecContext(ctx, query, args...)
			}
			if err != nil {
				return fmt.Errorf("inserting into %s: %w", t.name, err)
			}
		}
	}
	return tx.Commit()
}

// rowsOf is head followed by VALUES and n rows of width placeholders (?).
func rowsOf(head string, width, n int) string {
	var b strings.Builder
	b.Grow(len(head) + n*width*3)
	b.WriteString(head)
	b.WriteString(" VALUES ")
	for i := range n * width {
		switch {
		case i == 0:
			b.WriteByte('(')
		case i%width == 0:
			b.WriteString("), (")
		default:
			b.WriteString(", ")
		}
		b.WriteByte('?')
	}
	b.WriteByte(')')
	return b.String()
}

// prepared returns query prepared, preparing it the first time.
func (s *Store) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.stmts[query]; ok {
		return st, nil
	}
	st, err := s.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	s.stmts[query] = st
	return st, nil
}

// expire deletes the oldest limit requests that started before before, with their calls, in one
// transaction; it returns the requests deleted.
func (s *Store) expire(ctx context.Context, before time.Time, limit int) (int64, error) {
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("expiring usage records: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	expired := `(SELECT id FROM requests WHERE start_ms < ? ORDER BY start_ms, id LIMIT ?)`
	var n int64
	for _, del := range []string{
		`DELETE FROM tool_calls WHERE request_id IN ` + expired,
		`DELETE FROM model_calls WHERE request_id IN ` + expired,
		`DELETE FROM requests WHERE id IN ` + expired,
	} {
		res, err := tx.ExecContext(ctx, s.d.q(del), before.UnixMilli(), limit)
		if err != nil {
			return 0, fmt.Errorf("expiring usage records: %w", err)
		}
		n, _ = res.RowsAffected() // the last statement's: the requests
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("expiring usage records: %w", err)
	}
	return n, nil
}

// maxText bounds each text column's value.
const maxText = 256

// clean makes s storable in either database: valid UTF-8 without NUL bytes, at most maxText bytes.
func clean(s string) string {
	if len(s) > maxText {
		s = s[:maxText]
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "")
	}
	for len(s) > maxText || !utf8.ValidString(s) {
		s = s[:len(s)-1] // a rune cut in two at the bound, or the replacement growing it
	}
	return s
}

func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}
