package trajectory

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// step is a small record with a fixed time and a state of n bytes, so line sizes are predictable.
func step(i, n int) Record {
	return Record{
		Time:      t0.Add(time.Duration(i) * time.Millisecond),
		RequestID: "req",
		Step:      i,
		Kind:      "select",
		State:     []Message{{Role: "user", Content: strings.Repeat("x", n)}},
	}
}

func open(t *testing.T, o Options) *Writer {
	t.Helper()
	if o.Path == "" {
		o.Path = filepath.Join(t.TempDir(), "trajectory.jsonl")
	}
	w, err := Open(o)
	if err != nil {
		t.Fatalf("Open: got %v, want nil", err)
	}
	t.Cleanup(func() { _ = w.Close(context.Background()) })
	return w
}

func closeWriter(t *testing.T, w *Writer) {
	t.Helper()
	if err := w.Close(context.Background()); err != nil {
		t.Fatalf("Close: got %v, want nil", err)
	}
}

// readLines parses every line of path as a Record, failing the test on any that does not parse.
func readLines(t *testing.T, path string) []Record {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	var out []Record
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s line %d: got %v parsing %q, want a record", path, len(out)+1, err, sc.Text())
		}
		out = append(out, r)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Errorf("%s: got no trailing newline, want every line terminated", path)
	}
	return out
}

func steps(rs []Record) []int {
	out := make([]int, len(rs))
	for i, r := range rs {
		out[i] = r.Step
	}
	return out
}

func TestRecordRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   Record
	}{
		{
			name: "minimal",
			in:   Record{Time: t0, RequestID: "r1", Step: 1, Kind: "select"},
		},
		{
			name: "full step",
			in: Record{
				Time:      t0,
				RequestID: "r2",
				Step:      2,
				Kind:      "arguments",
				Model:     "qwen3:4b",
				State: []Message{
					{Role: "system", Content: "Answer with <json> & nothing else"},
					{Role: "user", Content: "weather in Zürich?\n"},
				},
				Format:           json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`),
				Action:           Action{Raw: `{"city":"Zürich"}`, Parsed: json.RawMessage(`{"city":"Zürich"}`)},
				Observation:      json.RawMessage(`{"content":[{"type":"text","text":"<b>5°C</b>"}]}`),
				Outcome:          Outcome{SchemaValid: ptr(true), ToolSucceeded: ptr(false), Error: "tool said no"},
				DurationMS:       12.5,
				PromptTokens:     321,
				CompletionTokens: 9,
			},
		},
		{
			name: "schema invalid",
			in: Record{
				Time: t0, RequestID: "r3", Step: 3, Kind: "arguments",
				Action:      Action{Raw: "not json"},
				Observation: json.RawMessage(`"missing property city"`),
				Outcome:     Outcome{SchemaValid: ptr(false)},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.jsonl")
			w := open(t, Options{Path: path})
			if !w.Record(tc.in) {
				t.Fatalf("Record: got false, want true")
			}
			closeWriter(t, w)

			got := readLines(t, path)
			if len(got) != 1 {
				t.Fatalf("lines: got %d, want 1", len(got))
			}
			if !reflect.DeepEqual(got[0], tc.in) {
				t.Errorf("record:\ngot  %+v\nwant %+v", got[0], tc.in)
			}
			data, _ := os.ReadFile(path)
			if bytes.Contains(data, []byte(`\u003c`)) || bytes.Contains(data, []byte(`\u0026`)) {
				t.Errorf("line: got HTML-escaped %s, want < and & as is", data)
			}
			if s := w.Stats(); s != (Stats{Written: 1}) {
				t.Errorf("stats: got %+v, want {Written:1}", s)
			}
		})
	}
}

func TestRecordSetsZeroTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	w := open(t, Options{Path: path})
	before := time.Now()
	w.Record(Record{RequestID: "r", Step: 1, Kind: "native"})
	closeWriter(t, w)
	got := readLines(t, path)
	if len(got) != 1 || got[0].Time.Before(before) {
		t.Errorf("time: got %v, want a time at or after %v", got, before)
	}
}

// blocked returns hooks that hold the writer goroutine before each record until release is
// closed; entered receives once when the first record is held.
func blocked() (h hooks, entered chan struct{}, release chan struct{}) {
	entered = make(chan struct{}, 1)
	release = make(chan struct{})
	h.beforeWrite = func() {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
	}
	return h, entered, release
}

func TestRecordFullQueue(t *testing.T) {
	tests := []struct {
		name  string
		queue int
		total int
	}{
		{name: "queue of one", queue: 1, total: 5},
		{name: "overflow", queue: 8, total: 20},
		{name: "exactly full", queue: 4, total: 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.jsonl")
			h, entered, release := blocked()
			w := open(t, Options{Path: path, QueueSize: tc.queue, hooks: h})

			if !w.Record(step(1, 10)) {
				t.Fatalf("Record 1: got false, want true")
			}
			<-entered // the writer holds record 1; the queue is empty
			for i := 2; i <= tc.total; i++ {
				want := i <= tc.queue+1
				if got := w.Record(step(i, 10)); got != want {
					t.Errorf("Record %d: got %v, want %v", i, got, want)
				}
			}
			wantDropped := uint64(max(0, tc.total-tc.queue-1))
			if got := w.Stats().Dropped; got != wantDropped {
				t.Errorf("dropped while full: got %d, want %d", got, wantDropped)
			}

			close(release)
			closeWriter(t, w)
			s := w.Stats()
			if s.Written+s.Dropped != uint64(tc.total) {
				t.Errorf("written+dropped: got %d+%d, want %d", s.Written, s.Dropped, tc.total)
			}
			if got := readLines(t, path); uint64(len(got)) != s.Written {
				t.Errorf("lines: got %d, want %d (Written)", len(got), s.Written)
			}
		})
	}
}

func TestRotation(t *testing.T) {
	tests := []struct {
		name     string
		maxBytes int64
		maxFiles int
		sizes    []int // state content length of each record, in order
		alone    int   // step whose record exceeds maxBytes and must sit alone; 0 for none
	}{
		{name: "many small records", maxBytes: 1000, maxFiles: 3, sizes: repeat(40, 100)},
		{name: "one rotated file kept", maxBytes: 600, maxFiles: 1, sizes: repeat(20, 100)},
		{name: "record larger than limit", maxBytes: 400, maxFiles: 4, sizes: []int{50, 50, 1000, 50, 50}, alone: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.jsonl")
			w := open(t, Options{Path: path, MaxBytes: tc.maxBytes, MaxFiles: tc.maxFiles})
			for i, n := range tc.sizes {
				if !w.Record(step(i+1, n)) {
					t.Fatalf("Record %d: got false, want true", i+1)
				}
			}
			closeWriter(t, w)

			// Oldest first: path.N … path.1, then path.
			names := []string{path}
			for i := 1; i <= tc.maxFiles; i++ {
				names = append([]string{fmt.Sprintf("%s.%d", path, i)}, names...)
			}
			if _, err := os.Stat(fmt.Sprintf("%s.%d", path, tc.maxFiles+1)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s.%d: got %v, want not exist", path, tc.maxFiles+1, err)
			}
			var all []Record
			for _, name := range names {
				fi, err := os.Stat(name)
				if err != nil {
					t.Fatalf("stat: got %v, want %s to exist", err, name)
				}
				recs := readLines(t, name)
				if fi.Size() > tc.maxBytes && len(recs) != 1 {
					t.Errorf("%s: got %d bytes in %d lines, want at most %d", name, fi.Size(), len(recs), tc.maxBytes)
				}
				for _, r := range recs {
					if r.Step == tc.alone && len(recs) != 1 {
						t.Errorf("%s: got step %d with %d others, want it alone", name, r.Step, len(recs)-1)
					}
				}
				all = append(all, recs...)
			}

			// The kept records are the newest ones, in order, with nothing missing between them.
			total := len(tc.sizes)
			if len(all) == 0 || all[len(all)-1].Step != total {
				t.Fatalf("newest step in %s: got %v, want %d last", path, steps(all), total)
			}
			for i := 1; i < len(all); i++ {
				if all[i].Step != all[i-1].Step+1 {
					t.Fatalf("steps oldest to newest: got %v, want consecutive", steps(all))
				}
			}
			s := w.Stats()
			if s.Written != uint64(total) || s.Dropped != 0 || s.Errors != 0 {
				t.Errorf("stats: got %+v, want Written %d, no drops or errors", s, total)
			}
			if s.Rotations < uint64(tc.maxFiles) {
				t.Errorf("rotations: got %d, want at least %d", s.Rotations, tc.maxFiles)
			}
		})
	}
}

func repeat(n, v int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestClose(t *testing.T) {
	tests := []struct {
		name        string
		cancel      bool // Close's ctx has already ended
		wantErr     error
		wantWritten uint64
	}{
		{name: "drains the queue", wantWritten: 6},
		{name: "context ends first", cancel: true, wantErr: context.Canceled, wantWritten: 0},
	}
	const total = 6
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.jsonl")
			h, entered, release := blocked()
			if !tc.cancel {
				// Let the writer go only once Close has shut the queue, so Close must drain it.
				h.closing = func() { close(release) }
			}
			w := open(t, Options{Path: path, QueueSize: total, hooks: h})
			for i := 1; i <= total; i++ {
				w.Record(step(i, 10))
			}
			<-entered

			ctx, cancel := context.WithCancel(context.Background())
			if tc.cancel {
				cancel()
			}
			defer cancel()
			err := w.Close(ctx)
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("Close: got %v, want %v", err, tc.wantErr)
			}
			if tc.cancel {
				close(release)
				_ = w.q.Wait(context.Background()) // the writer drops the rest and ends
			}

			s := w.Stats()
			if s.Written != tc.wantWritten || s.Written+s.Dropped != total {
				t.Errorf("stats: got %+v, want Written %d and Written+Dropped %d", s, tc.wantWritten, total)
			}
			if got := readLines(t, path); uint64(len(got)) != tc.wantWritten {
				t.Errorf("lines: got %d, want %d", len(got), tc.wantWritten)
			}
		})
	}
}

func TestRecordAfterClose(t *testing.T) {
	w := open(t, Options{})
	closeWriter(t, w)
	if w.Record(step(1, 10)) {
		t.Errorf("Record after Close: got true, want false")
	}
	if got := w.Stats(); got != (Stats{Dropped: 1}) {
		t.Errorf("stats: got %+v, want {Dropped:1}", got)
	}
	if err := w.Close(context.Background()); err != nil {
		t.Errorf("second Close: got %v, want nil", err)
	}
}

func TestConcurrentRecord(t *testing.T) {
	const goroutines, each = 32, 200
	path := filepath.Join(t.TempDir(), "t.jsonl")
	w := open(t, Options{Path: path, QueueSize: 64})

	var wg sync.WaitGroup
	accepted := make([]int, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := 1; i <= each; i++ {
				r := step(i, 20)
				r.RequestID = fmt.Sprint("req-", g)
				if w.Record(r) {
					accepted[g]++
				}
			}
		})
	}
	wg.Wait()
	closeWriter(t, w)

	var ok int
	for _, n := range accepted {
		ok += n
	}
	s := w.Stats()
	if s.Written != uint64(ok) || s.Dropped != uint64(goroutines*each-ok) {
		t.Errorf("stats: got %+v, want Written %d, Dropped %d", s, ok, goroutines*each-ok)
	}
	recs := readLines(t, path)
	if len(recs) != ok {
		t.Errorf("lines: got %d, want %d", len(recs), ok)
	}
	// One goroutine's records keep their order, whatever was dropped between them.
	last := map[string]int{}
	for _, r := range recs {
		if r.Step <= last[r.RequestID] {
			t.Fatalf("%s: got step %d after %d, want increasing", r.RequestID, r.Step, last[r.RequestID])
		}
		last[r.RequestID] = r.Step
	}
}

func TestNilWriter(t *testing.T) {
	var w *Writer
	if w.Record(step(1, 10)) {
		t.Errorf("Record: got true, want false")
	}
	if got := w.Stats(); got != (Stats{}) {
		t.Errorf("Stats: got %+v, want zero", got)
	}
	if err := w.Close(context.Background()); err != nil {
		t.Errorf("Close: got %v, want nil", err)
	}
}

func TestOpen(t *testing.T) {
	tests := []struct {
		name     string
		path     string // relative to a temp dir
		existing string // file content before Open; "" for none
		wantErr  bool
		wantHead string // content expected before the new record
	}{
		{name: "missing path", wantErr: true},
		{name: "creates directory", path: "a/b/t.jsonl"},
		{name: "appends after complete lines", path: "t.jsonl", existing: "{\"step\":1}\n", wantHead: "{\"step\":1}\n"},
		{name: "ends a torn line", path: "t.jsonl", existing: `{"step":1,"ki`, wantHead: "{\"step\":1,\"ki\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var path string
			if tc.path != "" {
				path = filepath.Join(t.TempDir(), tc.path)
			}
			if tc.existing != "" {
				if err := os.WriteFile(path, []byte(tc.existing), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			w, err := Open(Options{Path: path})
			if (err != nil) != tc.wantErr {
				t.Fatalf("Open: got %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			w.Record(step(2, 10))
			closeWriter(t, w)

			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			head, last, ok := strings.Cut(string(data), tc.wantHead)
			if !ok || head != "" {
				t.Fatalf("file: got %q, want it to start with %q", data, tc.wantHead)
			}
			var r Record
			if err := json.Unmarshal([]byte(last), &r); err != nil || r.Step != 2 {
				t.Errorf("new line: got %q (%v), want step 2", last, err)
			}
		})
	}
}

func TestWriteErrors(t *testing.T) {
	readOnly := func(name string) (*os.File, error) {
		return os.OpenFile(name, os.O_RDONLY|os.O_CREATE, 0o644)
	}
	failing := func(string) (*os.File, error) { return nil, errors.New("disk on fire") }
	tests := []struct {
		name      string
		opens     []func(string) (*os.File, error) // in call order; openAppend after these
		records   int
		want      Stats
		wantSteps []int
	}{
		{
			name:      "write fails then recovers",
			opens:     []func(string) (*os.File, error){readOnly},
			records:   2,
			want:      Stats{Written: 1, Dropped: 1, Errors: 1},
			wantSteps: []int{2},
		},
		{
			name:      "reopen fails then recovers",
			opens:     []func(string) (*os.File, error){readOnly, failing},
			records:   3,
			want:      Stats{Written: 1, Dropped: 2, Errors: 2},
			wantSteps: []int{3},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.jsonl")
			opens := tc.opens
			idle := make(chan struct{})
			var logs bytes.Buffer
			w := open(t, Options{
				Path:   path,
				Logger: slog.New(slog.NewTextHandler(&logs, nil)),
				hooks: hooks{
					idle: func() { idle <- struct{}{} },
					open: func(name string) (*os.File, error) {
						if len(opens) == 0 {
							return openAppend(name)
						}
						o := opens[0]
						opens = opens[1:]
						return o(name)
					},
				},
			})
			for i := 1; i <= tc.records; i++ {
				if !w.Record(step(i, 10)) {
					t.Fatalf("Record %d: got false, want true", i)
				}
				<-idle // record i is written or dropped before the next
			}
			closeWriter(t, w)

			if got := w.Stats(); got != tc.want {
				t.Errorf("stats: got %+v, want %+v", got, tc.want)
			}
			if got := steps(readLines(t, path)); !reflect.DeepEqual(got, tc.wantSteps) {
				t.Errorf("steps in file: got %v, want %v", got, tc.wantSteps)
			}
			if got := strings.Count(logs.String(), "\n"); got != 1 {
				t.Errorf("log lines: got %d, want 1 (once a minute)\n%s", got, logs.String())
			}
		})
	}
}

// BenchmarkRecord measures the cost on the request path: building nothing, enqueueing one step.
//
//	go test -run '^$' -bench BenchmarkRecord -benchmem ./trajectory/
func BenchmarkRecord(b *testing.B) {
	r := step(1, 2000)
	r.Time = time.Time{} // include the time.Now Record does on the request path
	for _, parallel := range []bool{false, true} {
		name := "serial"
		if parallel {
			name = "parallel"
		}
		b.Run(name, func(b *testing.B) {
			w, err := Open(Options{Path: filepath.Join(b.TempDir(), "t.jsonl")})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			if parallel {
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						w.Record(r)
					}
				})
			} else {
				for b.Loop() {
					w.Record(r)
				}
			}
			b.StopTimer()
			if err := w.Close(context.Background()); err != nil {
				b.Fatal(err)
			}
			s := w.Stats()
			b.ReportMetric(float64(s.Dropped)/float64(s.Written+s.Dropped), "dropped/op")
		})
	}
}
