package usage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"toolrouter/access"
	"toolrouter/approval"
	"toolrouter/internal/services"
	"toolrouter/observe"
	"toolrouter/router"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// base is the time the test records start from.
var base = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func openSQLite(t testing.TB, path string) *Store {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "usage.db")
	}
	s, err := Open(t.Context(), path, "")
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openStores opens a store on each database there is, by name: "sqlite" in a temporary file, and
// "postgres" when PostgreSQL is installed (always in CI; elsewhere its absence is logged). They
// close when t ends.
func openStores(t testing.TB) map[string]*Store {
	t.Helper()
	sq := openSQLite(t, "")
	t.Cleanup(func() { sq.Close() })
	stores := map[string]*Store{"sqlite": sq}
	pg, err := services.StartPostgres(t.Context())
	switch {
	case errors.Is(err, services.ErrMissing) && os.Getenv("CI") != "true":
		t.Logf("PostgreSQL not checked: %v (.ci/run installs it)", err)
	case err != nil:
		t.Fatal(err)
	default:
		t.Cleanup(pg.Stop)
		s, err := Open(t.Context(), "", pg.URL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() }) // before pg.Stop: cleanups run last first
		stores["postgres"] = s
	}
	return stores
}

// sample is a spread of records: three identities, two tools (one failing now and then), two
// models, one minute apart from base.
func sample(n int) []Record {
	ids := []access.Identity{{Org: "acme", Team: "research", Agent: "bot"}, {Org: "acme", Team: "ops"}, {Org: "globex"}}
	out := make([]Record, n)
	for i := range out {
		id := ids[i%len(ids)]
		r := Record{Start: base.Add(time.Duration(i) * time.Minute), Org: id.Org, Team: id.Team, Agent: id.Agent,
			KeyName: fmt.Sprintf("key-%d", i), Endpoint: "/v1/route", Status: 200, Duration: time.Duration(10+i) * time.Millisecond}
		r.Models = append(r.Models, ModelCall{Phase: "select", Model: "qwen", PromptTokens: 100 + i, CompletionTokens: 10, DurationMS: 5})
		if i%2 == 0 {
			outcome := OutcomeOK
			if i%4 == 0 {
				outcome = router.CodeToolTimeout
			}
			r.UseTool = true
			r.Tools = append(r.Tools, ToolCall{Server: "calculator", Tool: "add", Outcome: outcome, DurationMS: 2})
			r.Models = append(r.Models, ModelCall{Phase: "arguments", Model: "qwen", PromptTokens: 50, CompletionTokens: 5, DurationMS: 3})
		}
		if i%3 == 0 {
			r.Tools = append(r.Tools, ToolCall{Server: "clock", Tool: "now", Outcome: OutcomeIsError, DurationMS: 1})
			r.Models = append(r.Models, ModelCall{Phase: PhaseStage1, Model: "llama", PromptTokens: 300, CompletionTokens: 30, DurationMS: 20})
		}
		out[i] = r
	}
	return out
}

// expect aggregates records in Go as Query should in SQL.
func expect(recs []Record, q Query) []Row {
	rows := map[string]*Row{}
	seen := map[string]map[int]bool{}
	get := func(key string, i int) *Row {
		r, ok := rows[key]
		if !ok {
			r = &Row{Key: key}
			rows[key], seen[key] = r, map[int]bool{}
		}
		if !seen[key][i] {
			seen[key][i] = true
			r.Requests++
		}
		return r
	}
	for i, rec := range recs {
		if rec.Start.Before(q.Since) || !rec.Start.Before(q.Until) {
			continue
		}
		id := access.Identity{Org: rec.Org, Team: rec.Team, Agent: rec.Agent}
		switch q.GroupBy {
		case ByTool:
			for _, t := range rec.Tools {
				r := get(t.Server+"."+t.Tool, i)
				r.ToolCalls++
				if t.Outcome != OutcomeOK {
					r.ToolErrors++
				}
				r.DurationMS += t.DurationMS
			}
		case ByModel:
			for _, m := range rec.Models {
				r := get(m.Model, i)
				r.ModelCalls++
				r.PromptTokens += int64(m.PromptTokens)
				r.CompletionTokens += int64(m.CompletionTokens)
				r.DurationMS += m.DurationMS
			}
		default:
			switch q.GroupBy {
			case ByOrg:
				id.Team, id.Agent = "", ""
			case ByTeam:
				id.Agent = ""
			}
			r := get(id.String(), i)
			r.ToolCalls += int64(len(rec.Tools))
			for _, t := range rec.Tools {
				if t.Outcome != OutcomeOK {
					r.ToolErrors++
				}
			}
			r.ModelCalls += int64(len(rec.Models))
			for _, m := range rec.Models {
				r.PromptTokens += int64(m.PromptTokens)
				r.CompletionTokens += int64(m.CompletionTokens)
			}
			r.DurationMS += ms(rec.Duration)
		}
	}
	out := []Row{}
	for _, r := range rows {
		out = append(out, *r)
	}
	return out
}

// sameRows compares rows as sets (ties in the order are the database's), durations to a
// microsecond.
func sameRows(got, want []Row) error {
	key := func(r Row) string {
		return fmt.Sprintf("%s %d %d %d %d %d %d %.3f", r.Key, r.Requests, r.ToolCalls, r.ToolErrors, r.ModelCalls,
			r.PromptTokens, r.CompletionTokens, r.DurationMS)
	}
	var g, w []string
	for _, r := range got {
		g = append(g, key(r))
	}
	for _, r := range want {
		w = append(w, key(r))
	}
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		return fmt.Errorf("got rows\n  %s\nwant\n  %s", strings.Join(g, "\n  "), strings.Join(w, "\n  "))
	}
	return nil
}

func TestQueryGroupBy(t *testing.T) {
	s := openSQLite(t, "")
	defer s.Close()
	recs := sample(24)
	// Three batches of different sizes.
	for _, b := range [][]Record{recs[:1], recs[1:10], recs[10:]} {
		if err := s.write(t.Context(), b); err != nil {
			t.Fatal(err)
		}
	}
	all := Query{Since: base, Until: base.Add(24 * time.Hour)}
	for _, by := range groupBys {
		t.Run(string(by), func(t *testing.T) {
			q := all
			q.GroupBy = by
			got, err := s.Query(t.Context(), q)
			if err != nil {
				t.Fatal(err)
			}
			if err := sameRows(got.Rows, expect(recs, q)); err != nil {
				t.Error(err)
			}
			for i := 1; i < len(got.Rows); i++ {
				a, b := got.Rows[i-1], got.Rows[i]
				if by != ByTool && by != ByModel && a.Requests < b.Requests {
					t.Errorf("rows not ordered by requests: %q (%d) before %q (%d)", a.Key, a.Requests, b.Key, b.Requests)
				}
			}
		})
	}
	// A few exact figures, for a reader: 24 requests, 6 from each team of acme and globex's 8.
	got, err := s.Query(t.Context(), Query{Since: base, Until: base.Add(time.Hour), GroupBy: ByTeam})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"acme/research": 8, "acme/ops": 8, "globex": 8}
	for _, r := range got.Rows {
		if r.Requests != want[r.Key] {
			t.Errorf("team %q: got %d requests, want %d", r.Key, r.Requests, want[r.Key])
		}
	}
	if len(got.Rows) != len(want) {
		t.Errorf("got %d teams, want %d", len(got.Rows), len(want))
	}
}

func TestQueryWindow(t *testing.T) {
	s := openSQLite(t, "")
	defer s.Close()
	recs := sample(60) // one a minute for an hour
	if err := s.write(t.Context(), recs); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		since, until time.Time
		want         int64
	}{
		{"whole hour", base, base.Add(time.Hour), 60},
		{"since is inclusive", base.Add(10 * time.Minute), base.Add(time.Hour), 50},
		{"until is exclusive", base, base.Add(10 * time.Minute), 10},
		{"inside", base.Add(5 * time.Minute), base.Add(15 * time.Minute), 10},
		{"before everything", base.Add(-time.Hour), base, 0},
		{"after everything", base.Add(time.Hour), base.Add(2 * time.Hour), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, by := range []GroupBy{ByOrg, ByModel} {
				got, err := s.Query(t.Context(), Query{Since: tc.since, Until: tc.until, GroupBy: by})
				if err != nil {
					t.Fatal(err)
				}
				var n int64
				for _, r := range got.Rows {
					if by == ByOrg {
						n += r.Requests
					} else if r.Key == "qwen" {
						n = r.Requests // every request calls qwen
					}
				}
				if n != tc.want {
					t.Errorf("by %s: got %d requests, want %d", by, n, tc.want)
				}
				if !got.Since.Equal(tc.since) || !got.Until.Equal(tc.until) {
					t.Errorf("got window %v..%v, want %v..%v", got.Since, got.Until, tc.since, tc.until)
				}
			}
		})
	}
}

func count(t testing.TB, db *sql.DB, table string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM ` + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestExpireIsBounded(t *testing.T) {
	s := openSQLite(t, "")
	defer s.Close()
	recs := sample(30)
	if err := s.write(t.Context(), recs); err != nil {
		t.Fatal(err)
	}
	cut := base.Add(25 * time.Minute) // 25 records are older
	var passes []int64
	for {
		n, err := s.expire(t.Context(), cut, 10)
		if err != nil {
			t.Fatal(err)
		}
		passes = append(passes, n)
		if n < 10 {
			break
		}
	}
	if want := []int64{10, 10, 5}; !slices.Equal(passes, want) {
		t.Errorf("got passes deleting %v requests, want %v", passes, want)
	}
	got, err := s.Query(t.Context(), Query{Since: base.Add(-time.Hour), Until: base.Add(time.Hour), GroupBy: ByModel})
	if err != nil {
		t.Fatal(err)
	}
	if err := sameRows(got.Rows, expect(recs[25:], Query{Since: base, Until: base.Add(time.Hour), GroupBy: ByModel})); err != nil {
		t.Errorf("after expiry: %v", err)
	}
	// No call outlives its request.
	var orphans int
	for _, table := range []string{"tool_calls", "model_calls"} {
		var n int
		if err := s.db.QueryRow(`SELECT COUNT(*) FROM ` + table + ` WHERE request_id NOT IN (SELECT id FROM requests)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		orphans += n
	}
	if orphans != 0 {
		t.Errorf("got %d calls without their request, want 0", orphans)
	}
}

// TestRecorderRetention: the writer's retention pass deletes what is older than Retention.
func TestRecorderRetention(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.db")
	s := openSQLite(t, path)
	if err := s.write(t.Context(), sample(30)); err != nil {
		t.Fatal(err)
	}
	now := base.Add(30*24*time.Hour + 20*time.Minute) // the first 20 records are over 30 days old
	r := NewRecorder(s, Options{FlushInterval: 5 * time.Millisecond, Retention: 30 * 24 * time.Hour,
		Now: func() time.Time { return now }, Logger: quiet})
	deadline := time.Now().Add(10 * time.Second)
	for count(t, s.db, "requests") != 10 {
		if time.Now().After(deadline) {
			t.Fatalf("got %d requests 10s after start, want 10", count(t, s.db, "requests"))
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, with a deadline
	}
	if err := r.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestMigrate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.db")
	s := openSQLite(t, path)
	if err := s.write(t.Context(), sample(3)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	t.Run("reopening keeps the records", func(t *testing.T) {
		s := openSQLite(t, path)
		defer s.Close()
		if n := count(t, s.db, "requests"); n != 3 {
			t.Errorf("got %d requests, want 3", n)
		}
		var v int
		if err := s.db.QueryRow(`SELECT version FROM usage_schema`).Scan(&v); err != nil || v != len(migrations(sqlite)) {
			t.Errorf("got schema version %d (%v), want %d", v, err, len(migrations(sqlite)))
		}
	})
	t.Run("a newer schema is refused", func(t *testing.T) {
		s := openSQLite(t, path)
		if _, err := s.db.Exec(`UPDATE usage_schema SET version = 99`); err != nil {
			t.Fatal(err)
		}
		s.Close()
		_, err := Open(t.Context(), path, "")
		if err == nil || !strings.Contains(err.Error(), "version 99") {
			t.Errorf("got %v, want an error naming version 99", err)
		}
	})
	t.Run("off", func(t *testing.T) {
		if _, err := Open(t.Context(), "", ""); !errors.Is(err, ErrOff) {
			t.Errorf("got %v, want ErrOff", err)
		}
	})
}

// report is a request's report as the server fills it.
func report(i int) *observe.Report {
	return &observe.Report{Start: base.Add(time.Duration(i) * time.Second), Duration: 30 * time.Millisecond,
		Endpoint: "/v1/route", Status: 200, Authenticated: true,
		Identity: access.Identity{Org: "acme", Team: "ops", Name: fmt.Sprintf("r%d", i)},
		Outcome: &router.Outcome{UseTool: true, Stopped: router.StopDone,
			Calls: []router.Call{{Step: 1, Server: "calculator", Tool: "add", Result: &router.Result{Text: "3"}, ExecuteMS: 2}},
			Trace: []router.Step{{Kind: router.StepSelect, Model: "qwen", DurationMS: 4, PromptTokens: 100, CompletionTokens: 9},
				{Kind: router.StepExecute, Tool: "calculator.add", DurationMS: 2}}}}
}

// blockWriter holds the database's write lock from another connection until release is called,
// so that the recorder's writer waits.
func blockWriter(t *testing.T, path string) (release func()) {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	return func() { _ = tx.Rollback(); db.Close() }
}

func TestRecorderDropsWhenFull(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.db")
	s := openSQLite(t, path)
	release := blockWriter(t, path)
	var onDrop atomic.Int64
	const queue, batch, n = 4, 2, 50
	r := NewRecorder(s, Options{QueueSize: queue, BatchSize: batch, FlushInterval: time.Millisecond, Logger: quiet,
		WriteTimeout: time.Minute, OnDrop: func() { onDrop.Add(1) }})
	start := time.Now()
	for i := range n {
		r.Observe(t.Context(), report(i))
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("observing %d records took %v with the writer blocked, want no wait", n, d)
	}
	dropped := r.Dropped()
	// The writer holds at most a batch, the queue at most its size: the rest was dropped.
	if dropped < n-queue-batch || dropped > n {
		t.Errorf("got %d dropped, want between %d and %d", dropped, n-queue-batch, n)
	}
	if got := uint64(onDrop.Load()); got != dropped {
		t.Errorf("OnDrop called %d times, want %d (Dropped)", got, dropped)
	}
	release()
	if err := r.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// Every record not dropped was written.
	s = openSQLite(t, path)
	defer s.Close()
	if got := count(t, s.db, "requests"); uint64(got) != n-dropped {
		t.Errorf("got %d records written, want %d (observed %d, dropped %d)", got, n-dropped, n, dropped)
	}
	// Observing after Close drops too.
	r.Observe(t.Context(), report(n))
	if r.Dropped() != dropped+1 {
		t.Errorf("after Close: got %d dropped, want %d", r.Dropped(), dropped+1)
	}
}

func TestCloseFlushes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.db")
	s := openSQLite(t, path)
	// Nothing is written before Close: no full batch, no flush tick.
	const n = 300
	r := NewRecorder(s, Options{QueueSize: 1000, BatchSize: 1000, FlushInterval: time.Hour, Logger: quiet})
	for i := range n {
		rep := report(i)
		if i%10 == 0 {
			rep.Endpoint = "/healthz" // probes are not usage
		}
		r.Observe(t.Context(), rep)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := r.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := r.Close(ctx); err == nil {
		t.Error("second Close: got nil, want an error")
	}
	s = openSQLite(t, path)
	defer s.Close()
	if got, want := count(t, s.db, "requests"), n-n/10; got != want {
		t.Errorf("got %d records after Close, want %d", got, want)
	}
	if r.Dropped() != 0 {
		t.Errorf("got %d dropped, want 0", r.Dropped())
	}
}

// TestCloseLeavesStoreOpen: Close writes what is queued and leaves the store to its other users
// (the held calls here) until its opener closes it.
func TestCloseLeavesStoreOpen(t *testing.T) {
	s := openSQLite(t, "")
	r := NewRecorder(s, Options{QueueSize: 100, BatchSize: 100, FlushInterval: time.Hour, Logger: quiet})
	const n = 10
	for i := range n {
		r.Observe(t.Context(), report(i))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := r.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := count(t, s.db, "requests"); got != n {
		t.Errorf("got %d records after Close, want %d", got, n)
	}
	if err := s.PutHeld(ctx, "k", approval.Held{Identity: "acme", Expires: time.Now().Add(time.Hour), Record: []byte("{}")}, approval.DefaultShare); err != nil {
		t.Errorf("holding a call after the recorder's Close: got %v, want the store open", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("the opener's Close: got %v, want nil", err)
	}
}

// TestCloseDeadline: records that cannot be written before Close's deadline are dropped and
// counted, and Close returns by then.
func TestCloseDeadline(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.db")
	s := openSQLite(t, path)
	release := blockWriter(t, path)
	defer release()
	r := NewRecorder(s, Options{QueueSize: 100, BatchSize: 10, FlushInterval: time.Hour, Logger: quiet})
	for i := range 25 {
		r.Observe(t.Context(), report(i))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := r.Close(ctx)
	if err == nil {
		t.Fatal("Close: got nil, want an error counting the records left")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Close took %v past its 200ms deadline", d)
	}
	if r.Dropped() != 25 {
		t.Errorf("got %d dropped, want 25", r.Dropped())
	}
}

func TestRecordOf(t *testing.T) {
	rep := report(1)
	rep.Outcome.Calls = append(rep.Outcome.Calls,
		router.Call{Step: 2, Server: "calculator", Tool: "add", ReusedFrom: 1, Result: &router.Result{Text: "3"}},
		router.Call{Step: 3, Error: &router.Error{Code: router.CodeUnknownTool}},
		router.Call{Step: 4, Server: "clock", Tool: "now", Error: &router.Error{Code: router.CodeToolTimeout}, ExecuteMS: 30},
		router.Call{Step: 5, Server: "clock", Tool: "now", Result: &router.Result{IsError: true}, ExecuteMS: 1})
	rep.ModelCalls = []observe.ModelCall{{Phase: "completion", Model: "gpt", Duration: 1500 * time.Microsecond, PromptTokens: 7, CompletionTokens: 3, Err: "x"}}
	got := recordOf(rep)
	wantTools := []ToolCall{{"calculator", "add", OutcomeOK, 2}, {"clock", "now", router.CodeToolTimeout, 30}, {"clock", "now", OutcomeIsError, 1}}
	if !slices.Equal(got.Tools, wantTools) {
		t.Errorf("tools: got %+v, want %+v", got.Tools, wantTools)
	}
	wantModels := []ModelCall{{Phase: "select", Model: "qwen", PromptTokens: 100, CompletionTokens: 9, DurationMS: 4},
		{Phase: "completion", Model: "gpt", PromptTokens: 7, CompletionTokens: 3, DurationMS: 1.5, Failed: true}}
	if !slices.Equal(got.Models, wantModels) {
		t.Errorf("models: got %+v, want %+v", got.Models, wantModels)
	}
	if got.Org != "acme" || got.Team != "ops" || got.KeyName != "r1" || !got.UseTool || got.Stopped != "done" || got.Duration != 30*time.Millisecond {
		t.Errorf("got %+v, want acme/ops r1, use_tool, stopped done, 30ms", got)
	}
	rep.Authenticated = false
	if got := recordOf(rep); got.Org != "" || got.KeyName != "" {
		t.Errorf("unauthenticated: got identity %q/%q, want none", got.Org, got.KeyName)
	}
}

func TestParseQuery(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name, since, until, by string
		want                   Query
		wantParam              string
	}{
		{name: "defaults", want: Query{Since: now.Add(-24 * time.Hour), Until: now, GroupBy: ByOrg}},
		{name: "durations", since: "2h", until: "30m", by: "tool", want: Query{Since: now.Add(-2 * time.Hour), Until: now.Add(-30 * time.Minute), GroupBy: ByTool}},
		{name: "days", since: "7d", by: "model", want: Query{Since: now.Add(-7 * 24 * time.Hour), Until: now, GroupBy: ByModel}},
		{name: "RFC 3339", since: "2026-11-01T00:00:00Z", until: "2026-11-02T00:00:00+01:00", by: "agent",
			want: Query{Since: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), Until: time.Date(2026, 11, 1, 23, 0, 0, 0, time.UTC), GroupBy: ByAgent}},
		{name: "bad since", since: "yesterday", wantParam: "since"},
		{name: "negative duration", since: "-1h", wantParam: "since"},
		{name: "bad until", until: "2026-13-01", wantParam: "until"},
		{name: "since after until", since: "1h", until: "2h", wantParam: "since"},
		{name: "bad group_by", by: "country", wantParam: "group_by"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseQuery(tc.since, tc.until, tc.by, now)
			var pe *ParamError
			switch {
			case tc.wantParam != "":
				if !errors.As(err, &pe) || pe.Param != tc.wantParam {
					t.Errorf("got %v, want a ParamError for %s", err, tc.wantParam)
				}
			case err != nil:
				t.Errorf("got %v, want nil", err)
			case !got.Since.Equal(tc.want.Since) || !got.Until.Equal(tc.want.Until) || got.GroupBy != tc.want.GroupBy:
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestClean(t *testing.T) {
	tests := []struct{ in, want string }{
		{"acme", "acme"},
		{"a\x00b", "ab"},
		{"a\xffb", "a\uFFFDb"},
		{strings.Repeat("é", 200), strings.Repeat("é", 128)},
	}
	for _, tc := range tests {
		if got := clean(tc.in); got != tc.want {
			t.Errorf("clean(%q): got %q, want %q", tc.in, got, tc.want)
		}
	}
}

// logSink collects log messages for a test to wait on.
type logSink struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (l *logSink) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}
func (l *logSink) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logSink) WithGroup(string) slog.Handler      { return l }

func (l *logSink) count(prefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if strings.HasPrefix(m, prefix) {
			n++
		}
	}
	return n
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, with a deadline
	}
}

// TestRecorderRetries: a batch whose write fails is written at a later flush; one that fails
// every time is dropped and counted after its retries.
func TestRecorderRetries(t *testing.T) {
	for _, tc := range []struct {
		name        string
		recoverNow  bool
		wantWritten int
	}{
		{name: "the database comes back", recoverNow: true, wantWritten: 3},
		{name: "the database stays locked", recoverNow: false, wantWritten: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "usage.db")
			s := openSQLite(t, path)
			release := blockWriter(t, path)
			logs := &logSink{}
			r := NewRecorder(s, Options{QueueSize: 10, BatchSize: 5, FlushInterval: 10 * time.Millisecond,
				WriteTimeout: 30 * time.Millisecond, Logger: slog.New(logs)})
			for i := range 3 {
				r.Observe(t.Context(), report(i))
			}
			waitFor(t, "a failed write", func() bool { return logs.count("usage records not written") > 0 })
			if tc.recoverNow {
				release()
			} else {
				waitFor(t, "the batch dropped", func() bool { return r.Dropped() == 3 })
				if n := logs.count("usage records not written"); n != retries {
					t.Errorf("got %d retries logged, want %d", n, retries)
				}
				release()
			}
			if err := r.Close(t.Context()); err != nil {
				t.Fatalf("Close: %v", err)
			}
			s = openSQLite(t, path)
			defer s.Close()
			if got := count(t, s.db, "requests"); got != tc.wantWritten {
				t.Errorf("got %d records written, want %d", got, tc.wantWritten)
			}
			if want := uint64(3 - tc.wantWritten); r.Dropped() != want {
				t.Errorf("got %d dropped, want %d", r.Dropped(), want)
			}
		})
	}
}

// TestRecorderFileLost: the SQLite file deleted, moved away or replaced while the recorder writes
// to it is created again at its path, schema and all, and the records written after are there;
// the event is logged and counted once, however many batches follow.
func TestRecorderFileLost(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose func(t *testing.T, path string)
	}{
		{"deleted", func(t *testing.T, path string) { remove(t, path) }},
		{"deleted with its write-ahead log", func(t *testing.T, path string) { remove(t, path, path+"-wal", path+"-shm") }},
		{"moved away", func(t *testing.T, path string) {
			if err := os.Rename(path, path+".old"); err != nil {
				t.Fatal(err)
			}
		}},
		{"replaced by an empty file", func(t *testing.T, path string) {
			remove(t, path)
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "usage.db")
			s := openSQLite(t, path)
			logs := &logSink{}
			var lost atomic.Int64
			r := NewRecorder(s, Options{QueueSize: 100, BatchSize: 10, FlushInterval: time.Hour, Logger: slog.New(logs),
				OnFileLost: func() { lost.Add(1) }})
			observe := func(from, to int) {
				t.Helper()
				for i := from; i < to; i++ {
					r.Observe(t.Context(), report(i))
				}
				if err := r.Flush(t.Context()); err != nil {
					t.Fatalf("Flush: %v", err)
				}
			}
			observe(0, 3)
			tc.lose(t, path)
			observe(3, 8)
			observe(8, 10)
			if err := r.Close(t.Context()); err != nil {
				t.Fatalf("Close: %v", err)
			}

			s = openSQLite(t, path)
			defer s.Close()
			var names []string
			rows, err := s.db.Query(`SELECT key_name FROM requests ORDER BY id`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var n string
				if err := rows.Scan(&n); err != nil {
					t.Fatal(err)
				}
				names = append(names, n)
			}
			if want := []string{"r3", "r4", "r5", "r6", "r7", "r8", "r9"}; !slices.Equal(names, want) {
				t.Errorf("got requests %v at %s, want %v: those written after the file was lost", names, path, want)
			}
			if got := count(t, s.db, "tool_calls"); got != 7 {
				t.Errorf("got %d tool calls, want 7", got)
			}
			if got := lost.Load(); got != 1 {
				t.Errorf("OnFileLost called %d times, want 1", got)
			}
			if got := logs.count("usage database file deleted or replaced"); got != 1 {
				t.Errorf("got %d logs of the lost file, want 1", got)
			}
			if r.Dropped() != 0 {
				t.Errorf("got %d dropped, want 0", r.Dropped())
			}
		})
	}
}

func remove(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
}
