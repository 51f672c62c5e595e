package usage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"toolrouter/access"
	"toolrouter/config"
	"toolrouter/observe"
)

// Options tune a Recorder; a zero field takes config.Default()'s usage value, except Retention,
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
// (Options.Retention). Close drains the queue and closes the store.
//
// A process that is killed loses at most the records not yet written: those queued (at most
// QueueSize) and the batch being written (at most BatchSize); every batch that was written is
// whole in the database.
type Recorder struct {
	store   *Store
	o       Options
	queue   chan Record
	dropped atomic.Uint64

	// mu guards closed: Observe does not queue once Close has begun.
	mu     sync.RWMutex
	closed bool
	stop   chan context.Context // Close's context, to the writer
	done   chan error           // the writer's end: records it could not write
}

// NewRecorder returns a Recorder writing to s and starts its writer; Close stops it and closes s.
func NewRecorder(s *Store, o Options) *Recorder {
	def := config.Default().Usage
	if o.QueueSize <= 0 {
		o.QueueSize = def.QueueSize
	}
	if o.BatchSize <= 0 {
		o.BatchSize = def.BatchSize
	}
	o.BatchSize = min(o.BatchSize, o.QueueSize)
	if o.FlushInterval <= 0 {
		o.FlushInterval = def.FlushInterval.D()
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = def.WriteTimeout.D()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	r := &Recorder{store: s, o: o, queue: make(chan Record, o.QueueSize), stop: make(chan context.Context, 1), done: make(chan error, 1)}
	go r.run()
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
func (r *Recorder) enqueue(rec Record) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if !r.closed {
		select {
		case r.queue <- rec:
			return true
		default:
		}
	}
	r.drop(1)
	return false
}

// Dropped is how many records were lost: dropped on a full queue or after Close, failed to be
// written, or still queued when Close's deadline passed.
func (r *Recorder) Dropped() uint64 { return r.dropped.Load() }

func (r *Recorder) drop(n int) {
	r.dropped.Add(uint64(n))
	if r.o.OnDrop != nil {
		for range n {
			r.o.OnDrop()
		}
	}
}

// Query answers q from the store.
func (r *Recorder) Query(ctx context.Context, q Query) (*Summary, error) {
	return r.store.Query(ctx, q)
}

// Close stops recording, writes what is queued within ctx's deadline and closes the store. It
// returns an error when records were left unwritten (they count as dropped).
func (r *Recorder) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return errors.New("usage: recorder already closed")
	}
	r.closed = true
	r.mu.Unlock()
	r.stop <- ctx
	err := <-r.done
	return errors.Join(err, r.store.Close())
}

// run is the writer: it batches the queue and expires old records until Close.
func (r *Recorder) run() {
	tick := time.NewTicker(r.o.FlushInterval)
	defer tick.Stop()
	batch := make([]Record, 0, r.o.BatchSize)
	failures := 0
	// flush writes the batch: on success, or once it has failed retries+1 times (its records
	// dropped), the batch is emptied; otherwise it is kept for the next flush.
	flush := func() {
		if len(batch) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), r.o.WriteTimeout)
		err := r.store.write(ctx, batch)
		cancel()
		if err != nil {
			failures++
			if failures <= retries {
				r.o.Logger.Warn("usage records not written; retrying at the next flush", "records", len(batch), "err", err)
				return
			}
			r.o.Logger.Error("usage records dropped: writing failed", "records", len(batch), "attempts", failures, "err", err)
			r.drop(len(batch))
		}
		failures = 0
		batch = batch[:0]
	}
	nextExpiry := r.o.Now()
	for {
		// A full batch waits for its write (a failed one, for the next flush): the queue holds what
		// comes meanwhile.
		var queue <-chan Record
		if len(batch) < r.o.BatchSize {
			queue = r.queue
		}
		select {
		case rec := <-queue:
			batch = append(batch, rec)
			if len(batch) == r.o.BatchSize && failures == 0 {
				flush()
			}
		case <-tick.C:
			flush()
			if r.o.Retention > 0 && !r.o.Now().Before(nextExpiry) {
				r.expire(context.Background())
				nextExpiry = r.o.Now().Add(expireEvery)
			}
		case ctx := <-r.stop:
			r.done <- r.drain(ctx, batch, failures)
			return
		}
	}
}

// drain writes the batch and everything queued, in batches, until the queue is empty or ctx ends;
// what it could not write is dropped and counted.
func (r *Recorder) drain(ctx context.Context, batch []Record, failures int) error {
	lost := 0
	for {
		for len(batch) < r.o.BatchSize {
			select {
			case rec := <-r.queue:
				batch = append(batch, rec)
				continue
			default:
			}
			break
		}
		if len(batch) == 0 {
			break
		}
		if ctx.Err() != nil || failures > retries {
			lost += len(batch) + len(r.queue)
			break
		}
		wctx, cancel := context.WithTimeout(ctx, r.o.WriteTimeout)
		err := r.store.write(wctx, batch)
		cancel()
		if err != nil {
			failures++
			r.o.Logger.Warn("usage records not written at shutdown", "records", len(batch), "err", err)
			continue
		}
		batch = batch[:0]
	}
	if lost > 0 {
		r.drop(lost)
		return fmt.Errorf("usage: %d records not written at shutdown", lost)
	}
	return nil
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
