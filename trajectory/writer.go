package trajectory

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"toolrouter/spool"
)

const (
	defaultMaxBytes  = 64 << 20
	defaultMaxFiles  = 5
	defaultQueueSize = 1024
	bufferSize       = 64 << 10
	logEvery         = time.Minute
)

// Options configures a Writer. Only Path is required; zero values take the defaults.
type Options struct {
	Path      string       // file to write; required
	MaxBytes  int64        // rotate when the file would exceed it; default 64 MiB
	MaxFiles  int          // rotated files kept (path.1 … path.N, newest .1); default 5
	QueueSize int          // records buffered; default 1024
	Logger    *slog.Logger // write failures, at most once a minute; nil discards them (Stats still counts)

	hooks hooks // test seams; zero in production
}

// hooks lets tests hold the writer goroutine at known points and replace the file opener.
type hooks struct {
	beforeWrite func()                              // writer goroutine, before each dequeued record
	idle        func()                              // writer goroutine, after the queue drained and was flushed
	closing     func()                              // Close, after the queue is closed to new records
	open        func(name string) (*os.File, error) // replaces openAppend
}

// Stats counts what happened to recorded steps. After Close, Written + Dropped is the number of
// Record calls: Written lines reached the file; Dropped ones met a full queue, a closed writer,
// an encoding error or a failed write.
type Stats struct {
	Written   uint64 `json:"written"`
	Dropped   uint64 `json:"dropped"`
	Rotations uint64 `json:"rotations"`
	Errors    uint64 `json:"errors"` // failed opens, writes, flushes and rotations
}

// Writer queues Records and writes them as JSON Lines from its own goroutine. Its methods are
// safe for concurrent use, and a nil *Writer does nothing, so callers may hold nil when the log
// is disabled.
type Writer struct {
	path     string
	maxBytes int64
	maxFiles int
	log      *slog.Logger
	hooks    hooks

	q        *spool.Spool[Record]
	closeErr error // final flush or close error; written before q's goroutine ends

	// dropped counts the records q did not drop itself: those that failed to encode or write, or
	// that q handed over after Close's deadline.
	written, dropped, rotations, errs atomic.Uint64

	// Owned by the writer goroutine.
	f          *os.File // nil after a failure until the next record reopens it
	bw         *bufio.Writer
	size       int64  // bytes in the file, including those still in bw
	pending    uint64 // lines handed to bw and not yet known to be on disk
	line       bytes.Buffer
	enc        *json.Encoder
	lastLog    time.Time
	suppressed int // failures not logged since lastLog
}

// Open creates the directory if needed, opens (appends to) Path and starts the writer goroutine.
func Open(o Options) (*Writer, error) {
	if o.Path == "" {
		return nil, errors.New("opening trajectory log: path is required")
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = defaultMaxBytes
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = defaultMaxFiles
	}
	if o.QueueSize <= 0 {
		o.QueueSize = defaultQueueSize
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.hooks.open == nil {
		o.hooks.open = openAppend
	}
	if err := os.MkdirAll(filepath.Dir(o.Path), 0o755); err != nil {
		return nil, fmt.Errorf("creating trajectory directory: %w", err)
	}
	w := &Writer{
		path:     o.Path,
		maxBytes: o.MaxBytes,
		maxFiles: o.MaxFiles,
		log:      o.Logger,
		hooks:    o.hooks,
		bw:       bufio.NewWriterSize(io.Discard, bufferSize),
	}
	w.enc = json.NewEncoder(&w.line)
	w.enc.SetEscapeHTML(false)
	if err := w.reopen(); err != nil {
		return nil, fmt.Errorf("opening trajectory log: %w", err)
	}
	// One record at a time, as it comes: the buffer, flushed whenever the queue is empty, is what
	// batches the writes to the file.
	w.q = spool.New(spool.Options[Record]{Size: o.QueueSize, Batch: 1, Write: w.writeBatch, Finish: w.finish,
		Name: "trajectory records"})
	return w, nil
}

// Record queues r without blocking; it reports false (and counts a drop) when the queue is full
// or the writer is closed. A zero r.Time is set to now. The writer owns r's slices from here on:
// the caller must not modify them. Safe for concurrent use; nil *Writer is a no-op returning false.
func (w *Writer) Record(r Record) bool {
	if w == nil {
		return false
	}
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	return w.q.Put(r)
}

// Stats reports the counters so far. A nil *Writer reports zeros.
func (w *Writer) Stats() Stats {
	if w == nil {
		return Stats{}
	}
	return Stats{
		Written:   w.written.Load(),
		Dropped:   w.dropped.Load() + w.q.Dropped(),
		Rotations: w.rotations.Load(),
		Errors:    w.errs.Load(),
	}
}

// Close stops accepting records, drains what is queued (bounded by ctx), flushes and closes the
// file. If ctx ends first, Close returns its error at once; the writer goroutine then drops what
// is still queued (counting it), flushes and closes the file on its own. Closing twice is safe.
// A nil *Writer returns nil.
func (w *Writer) Close(ctx context.Context) error {
	if w == nil {
		return nil
	}
	if w.q.Shut() && w.hooks.closing != nil {
		w.hooks.closing()
	}
	if err := w.q.Wait(ctx); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("draining trajectory queue: %w", err)
		}
		return errors.Join(fmt.Errorf("draining trajectory queue: %w", err), w.closeErr)
	}
	return w.closeErr
}

// writeBatch writes records on the writer goroutine, and flushes them to the file whenever the
// queue is momentarily empty, so readers see records promptly. Records handed over after Close's
// deadline (ctx ended) are dropped. It never fails: a record it cannot write is counted.
func (w *Writer) writeBatch(ctx context.Context, rs []Record) error {
	for _, r := range rs {
		if w.hooks.beforeWrite != nil {
			w.hooks.beforeWrite()
		}
		if ctx.Err() != nil {
			w.dropped.Add(1)
			continue
		}
		w.write(r)
	}
	if w.q.Len() == 0 && ctx.Err() == nil {
		w.flush()
		if w.hooks.idle != nil {
			w.hooks.idle()
		}
	}
	return nil
}

// finish flushes and closes the file once the queue is closed and drained.
func (w *Writer) finish() {
	w.flush()
	if w.f != nil {
		if err := w.f.Close(); err != nil {
			w.report("closing", err)
			w.closeErr = fmt.Errorf("closing trajectory log: %w", err)
		}
		w.f = nil
	}
}

// write encodes r as one line and hands it to the buffer, reopening or rotating the file first
// when needed. A record that cannot be written is counted as dropped.
func (w *Writer) write(r Record) {
	w.line.Reset()
	if err := w.enc.Encode(r); err != nil {
		w.report("encoding", err)
		w.dropped.Add(1)
		return
	}
	line := w.line.Bytes()
	// Flush before a line that would not fit, so a failed write loses only this line.
	if w.bw.Buffered() > 0 && len(line) > w.bw.Available() {
		w.flush()
	}
	if w.f == nil {
		if err := w.reopen(); err != nil {
			w.report("opening", err)
			w.dropped.Add(1)
			return
		}
	}
	// A line longer than maxBytes goes alone into a fresh file.
	if w.size > 0 && w.size+int64(len(line)) > w.maxBytes {
		if err := w.rotate(); err != nil {
			w.report("rotating", err)
			w.dropped.Add(1)
			return
		}
	}
	if _, err := w.bw.Write(line); err != nil {
		w.report("writing", err)
		w.dropped.Add(1)
		w.discard()
		return
	}
	w.size += int64(len(line))
	w.pending++
}

// flush moves buffered lines to the file and counts them written. On failure they are counted
// as dropped and the file is closed, to be reopened for the next record.
func (w *Writer) flush() {
	if w.f == nil || w.pending == 0 {
		return
	}
	if err := w.bw.Flush(); err != nil {
		w.report("flushing", err)
		w.discard()
		return
	}
	w.written.Add(w.pending)
	w.pending = 0
}

// discard drops the buffered lines and closes the file after a failure.
func (w *Writer) discard() {
	w.dropped.Add(w.pending)
	w.pending = 0
	w.bw.Reset(io.Discard)
	if w.f != nil {
		_ = w.f.Close() // already failing; the write error is the one reported
		w.f = nil
	}
}

// rotate closes the file, shifts path.(N-1)→path.N … path→path.1, dropping the oldest, and
// reopens path.
func (w *Writer) rotate() error {
	w.flush()
	if w.f != nil {
		if err := w.f.Close(); err != nil {
			w.report("closing", err)
		}
		w.f = nil
	}
	for i := w.maxFiles - 1; i >= 1; i-- {
		if err := os.Rename(w.rotated(i), w.rotated(i+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("shifting rotated file: %w", err)
		}
	}
	if err := os.Rename(w.path, w.rotated(1)); err != nil {
		return fmt.Errorf("shifting current file: %w", err)
	}
	w.rotations.Add(1)
	return w.reopen()
}

func (w *Writer) rotated(i int) string { return w.path + "." + strconv.Itoa(i) }

// reopen opens path for appending and learns its size. A file whose last line was torn (say by a
// crash mid-write) gets a newline first, so the next record starts on a line of its own.
func (w *Writer) reopen() error {
	f, err := w.hooks.open(w.path)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("reading file size: %w", err)
	}
	size := fi.Size()
	if size > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, size-1); err == nil && last[0] != '\n' {
			if _, err := f.Write([]byte{'\n'}); err != nil {
				_ = f.Close()
				return fmt.Errorf("ending torn line: %w", err)
			}
			size++
		}
	}
	w.f, w.size = f, size
	w.bw.Reset(f)
	return nil
}

func openAppend(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
}

// report counts a failure and logs it, at most once a minute.
func (w *Writer) report(op string, err error) {
	w.errs.Add(1)
	now := time.Now()
	if !w.lastLog.IsZero() && now.Sub(w.lastLog) < logEvery {
		w.suppressed++
		return
	}
	w.log.Warn("trajectory log failed", "op", op, "path", w.path, "err", err, "suppressed", w.suppressed)
	w.lastLog, w.suppressed = now, 0
}
