package usage

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"toolrouter/access"
	"toolrouter/observe"
	"toolrouter/spool"
)

// Options tune a Recorder; a zero field takes its default (DefaultQueueSize, …), except Retention,
// whose zero keeps records forever.
type Options struct {
	// QueueSize bounds the records waiting to be written; one that finds the queue full is dropped.
	QueueSize int
	// BatchSize is the most records written in one transaction.
	BatchSize int
	// FlushInterval is the longest a record waits in the queue before its batch is written.
	FlushInterval time.Duration
	// WriteTimeout bounds one batch's transaction (and one retention pass's).
	WriteTimeout time.Duration
	// Retention is how long records are kept; 0 keeps them forever.
	Retention time.Duration
	// OnDrop, if not nil, is called once for each record dropped (see Recorder.Dropped), on the
	// dropping goroutine: it must not block.
	OnDrop func()
	// OnFileLost, if not nil, is called once each time the SQLite file is found deleted or
	// replaced while the store has it open (see Recorder), on the writer goroutine.
	OnFileLost func()
	// Known reports whether an identity is configured (the orgs hierarchy's Has); a request acting
	// for one it does not know is not recorded. Nil: every identity is known.
	Known  func(access.Identity) bool
	Logger *slog.Logger
	// Now is the clock (time.Now when nil); retention cuts at Now() - Retention.
	Now func() time.Time
}

// Retention passes: every expireEvery, delete expired records expireBatch requests at a time,
// at most expireRounds times (what is left goes at the next pass), so that a pass never holds the
// database for long.
const (
	expireEvery  = 10 * time.Minute
	expireBatch  = 5000
	expireRounds = 20
)

// retries is how many times a batch whose write failed is tried again, at the next flushes,
// before its records are dropped.
const retries = 3

// Recorder keeps a usage record of each request it observes: Observe queues it without blocking,
// and one goroutine writes the queue in batches of at most BatchSize, at least every
// FlushInterval, each in one transaction bounded by WriteTimeout. A record that finds the queue
// full is dropped and counted, as are the records of a batch that failed retries+1 times and
// those still queued when Close's deadline passes. It also deletes expired records
// (Options.Retention). Close drains the queue; the store stays open for its opener to close, as
// other users may share it (the tool pins and held calls of the safety checks).
//
// A process that is killed loses at most the records not yet written: those queued (at most
// QueueSize) and the batch being written (at most BatchSize); every batch that was written is
// whole in the database.
//
// Before each batch it checks that the SQLite file is still the one it opened: one deleted (or
// replaced) under a running process would take every later record with it, unseen, at the next
// start. It then logs the event once, counts it (Options.OnFileLost) and creates the database
// again at its path, schema and all; the records the old file held stay with it.
type Recorder struct {
	store   *Store
	o       Options
	q       *spool.Spool[Record]
	closing atomic.Bool // Close has begun

	// Owned by the writer goroutine.
	nextExpiry time.Time
	fileLost   bool // the file was found gone, and is not yet created again
}

// The defaults of Options; package config's usage.* defaults are these.
const (
	DefaultQueueSize     = 4096
	DefaultBatchSize     = 256
	DefaultFlushInterval = time.Second
	DefaultWriteTimeout  = 5 * time.Second
	// DefaultRetention is usage.retention's default; a Recorder given none keeps records forever.
	DefaultRetention = 30 * 24 * time.Hour
)

// NewRecorder returns a Recorder writing to s and starts its writer; Close stops it. s is not
// closed by the recorder: its opener closes it, after Close.
func NewRecorder(s *Store, o Options) *Recorder {
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	o.BatchSize = min(o.BatchSize, o.QueueSize)
	if o.FlushInterval <= 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	r := &Recorder{store: s, o: o, nextExpiry: o.Now()}
	r.q = spool.New(spool.Options[Record]{Size: o.QueueSize, Batch: o.BatchSize, Interval: o.FlushInterval,
		Write: r.write, Retries: retries, Tick: r.tick, OnDrop: r.dropped, Logger: o.Logger, Name: "usage records"})
	return r
}

// skipped are the endpoints that are not usage: health and readiness probes, metrics scrapes.
var skipped = []string{"/healthz", "/readyz", "/metrics"}

// Observe queues the request's record; it never blocks. It drops the record, counting it, when
// the queue is full or the Recorder is closed. What is not usage is not recorded (see recorded).
func (r *Recorder) Observe(_ context.Context, rep *observe.Report) {
	if r.recorded(rep) {
		r.enqueue(recordOf(rep))
	}
}

// recorded is the one rule for which requests are usage: not probes (/healthz, /readyz) or
// scrapes (/metrics); not a request refused its credential or its access (401, 403), which the
// metrics count instead (toolrouter_http_requests_total by status), so that a flood of refusals
// writes nothing; not a request acting for an identity the configuration does not define (say a
// JWT's made-up org), so that no caller can write a key of its choosing.
func (r *Recorder) recorded(rep *observe.Report) bool {
	if slices.Contains(skipped, rep.Endpoint) {
		return false
	}
	if rep.Status == http.StatusUnauthorized || rep.Status == http.StatusForbidden {
		return false
	}
	return !rep.Authenticated || r.o.Known == nil || r.o.Known(rep.Identity)
}

// enqueue queues rec without blocking; false when it was dropped.
func (r *Recorder) enqueue(rec Record) bool { return r.q.Put(rec) }

// Dropped is how many records were lost: dropped on a full queue or after Close, failed to be
// written, or still queued when Close's deadline passed.
func (r *Recorder) Dropped() uint64 { return r.q.Dropped() }

func (r *Recorder) dropped(n int) {
	if r.o.OnDrop != nil {
		for range n {
			r.o.OnDrop()
		}
	}
}

// Flush writes the records queued so far and returns once they are in the database, or with the
// write's error (the batch is then retried at the next flush, as usual), or ctx's.
func (r *Recorder) Flush(ctx context.Context) error { return r.q.Flush(ctx) }

// Query answers q from the store.
func (r *Recorder) Query(ctx context.Context, q Query) (*Summary, error) {
	return r.store.Query(ctx, q)
}

// Close stops recording and writes what is queued within ctx's deadline; it leaves the store open.
// It returns an error when records were left unwritten (they count as dropped).
func (r *Recorder) Close(ctx context.Context) error {
	if !r.closing.CompareAndSwap(false, true) {
		return errors.New("usage: recorder already closed")
	}
	err := r.q.Close(ctx)
	if ctx.Err() != nil {
		// The write in flight is cancelled; the writer drops what is left and ends.
		err = r.q.Wait(context.Background())
	}
	return err
}

// write writes one batch, in the SQLite file at its path (see keepFile).
func (r *Recorder) write(ctx context.Context, batch []Record) error {
	ctx, cancel := context.WithTimeout(ctx, r.o.WriteTimeout)
	defer cancel()
	if err := r.keepFile(ctx); err != nil {
		return err
	}
	return r.store.write(ctx, batch)
}

// keepFile creates the SQLite database again at its path when the file the store has open was
// deleted or replaced: logged and counted once per event, however many batches it takes to
// create it again (until then each batch fails, and is retried or dropped as usual).
func (r *Recorder) keepFile(ctx context.Context) error {
	if lost, err := r.store.fileLost(); err != nil || !lost {
		return nil // one that cannot be looked at (its directory unreadable) is still written to
	}
	if !r.fileLost {
		r.fileLost = true
		r.o.Logger.Error("usage database file deleted or replaced while in use: creating it again (the records, tool pins and held calls it held are not in the new one)",
			"path", r.store.path)
		if r.o.OnFileLost != nil {
			r.o.OnFileLost()
		}
	}
	if err := r.store.reopen(ctx); err != nil {
		return err
	}
	r.fileLost = false
	r.o.Logger.Info("usage database created again", "path", r.store.path)
	return nil
}

// tick runs at each flush: every expireEvery, it deletes the expired records.
func (r *Recorder) tick(ctx context.Context) {
	if r.o.Retention > 0 && !r.o.Now().Before(r.nextExpiry) {
		r.expire(ctx)
		r.nextExpiry = r.o.Now().Add(expireEvery)
	}
}

// expire deletes the records older than the retention, a bounded amount per pass.
func (r *Recorder) expire(ctx context.Context) {
	before := r.o.Now().Add(-r.o.Retention)
	for range expireRounds {
		ctx, cancel := context.WithTimeout(ctx, r.o.WriteTimeout)
		n, err := r.store.expire(ctx, before, expireBatch)
		cancel()
		if err != nil {
			r.o.Logger.Warn("expiring usage records", "err", err)
			return
		}
		if n < expireBatch {
			return
		}
	}
}
