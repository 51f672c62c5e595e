// Package spool is the bounded queue between callers that must never block (a request path) and
// one goroutine that writes what they queue: Put drops an item, and counts it, when the queue is
// full or closed; the goroutine hands the items to Options.Write in batches, retries a batch that
// failed, and on Close writes what is left within the caller's deadline.
//
// It owns no storage and no format: what a write does, and what its error means, is the
// caller's (package usage writes SQL transactions, package trajectory JSON lines).
package spool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClosed is Flush's error once the spool is closed.
var ErrClosed = errors.New("spool closed")

// Options configure a Spool. Size and Write are required.
type Options[T any] struct {
	// Size bounds the items waiting for the goroutine; one that finds the queue full is dropped.
	Size int
	// Batch is the most items handed to Write at once: 1 if <= 0, at most Size.
	Batch int
	// Interval, when > 0, is the longest an item waits: a batch is written when it is full or at
	// the interval's tick. At 0 a batch is written as soon as it is full or the queue is empty.
	Interval time.Duration
	// Write writes a batch, which it must not keep: the slice is reused. ctx ends when Close's
	// context does. An error keeps the batch, to be written again at the next tick, at most
	// Retries times; then its items are dropped. Without Interval a failed batch is dropped at once.
	Write   func(ctx context.Context, batch []T) error
	Retries int
	// Tick, if not nil, runs on the goroutine at each Interval tick, after that tick's write.
	Tick func(ctx context.Context)
	// Finish, if not nil, runs on the goroutine after its last Write (to close a file, say).
	Finish func()
	// OnDrop, if not nil, is called with the number of items each drop loses, on the dropping
	// goroutine (a caller of Put among them): it must not block.
	OnDrop func(n int)
	// Logger receives failed writes; nil discards them. Name says what the items are in its
	// messages ("usage records"; "items" when empty).
	Logger *slog.Logger
	Name   string
}

// Spool queues items for its goroutine. Its methods are safe for concurrent use.
type Spool[T any] struct {
	o       Options[T]
	c       chan T
	dropped atomic.Uint64

	// mu guards closed and every send on c, so that nothing is queued once Shut has returned.
	mu     sync.RWMutex
	closed bool

	stop    chan struct{}   // closed by Shut: the goroutine drains the queue and ends
	flushes chan chan error // Flush's requests, answered by the goroutine
	ctx     context.Context // Write's; cancelled when a Wait's context ends first
	abort   context.CancelFunc
	done    chan struct{} // closed when the goroutine has ended
	lost    int           // items the drain could not write; read after done

	// Owned by the goroutine.
	batch    []T
	failures int // failed writes of the batch
}

// New returns a Spool and starts its goroutine; Close stops it.
func New[T any](o Options[T]) *Spool[T] {
	o.Size = max(o.Size, 1)
	o.Batch = min(max(o.Batch, 1), o.Size)
	if o.Interval <= 0 {
		o.Retries = 0
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Name == "" {
		o.Name = "items"
	}
	ctx, abort := context.WithCancel(context.Background())
	s := &Spool[T]{o: o, c: make(chan T, o.Size), stop: make(chan struct{}), flushes: make(chan chan error),
		ctx: ctx, abort: abort, done: make(chan struct{}), batch: make([]T, 0, o.Batch)}
	go s.run()
	return s
}

// Put queues v without blocking; false (and v dropped, counted) when the queue is full or closed.
func (s *Spool[T]) Put(v T) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.closed {
		select {
		case s.c <- v:
			return true
		default:
		}
	}
	s.drop(1)
	return false
}

// Len is how many items are queued, not counting the batch the goroutine holds.
func (s *Spool[T]) Len() int { return len(s.c) }

// Dropped is how many items were lost: dropped by Put, failed after their retries, or left when
// Close's deadline passed.
func (s *Spool[T]) Dropped() uint64 { return s.dropped.Load() }

func (s *Spool[T]) drop(n int) {
	if n <= 0 {
		return
	}
	s.dropped.Add(uint64(n))
	if s.o.OnDrop != nil {
		s.o.OnDrop(n)
	}
}

// Flush writes the batch being gathered and every item queued before the call, and returns once
// they are written; or the write's error (the batch is kept for its retries, as at a tick), or
// ctx's, or ErrClosed once the spool is closed.
func (s *Spool[T]) Flush(ctx context.Context) error {
	reply := make(chan error, 1)
	select {
	case s.flushes <- reply:
	case <-s.stop:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close is Shut then Wait.
func (s *Spool[T]) Close(ctx context.Context) error {
	s.Shut()
	return s.Wait(ctx)
}

// Shut stops queueing: Put drops from now on, and the goroutine writes what is queued, then ends.
// It reports whether this call shut the spool (false if it was already shut).
func (s *Spool[T]) Shut() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.closed = true
	close(s.stop)
	return true
}

// Wait waits for the goroutine to end after Shut. If ctx ends first, Wait returns ctx's error at
// once and cancels the context of Write: the goroutine then drops what is left (counting it) and
// ends on its own. Once it has ended, Wait returns an error naming the items it could not write
// at the end, or nil.
func (s *Spool[T]) Wait(ctx context.Context) error {
	select {
	case <-s.done:
		return s.result()
	default:
	}
	select {
	case <-s.done:
		return s.result()
	case <-ctx.Done():
		s.abort()
		return ctx.Err()
	}
}

func (s *Spool[T]) result() error {
	if s.lost > 0 {
		return fmt.Errorf("%d %s not written at shutdown", s.lost, s.o.Name)
	}
	return nil
}

// run is the goroutine: it gathers batches and writes them until Shut, then drains the queue.
func (s *Spool[T]) run() {
	defer close(s.done)
	defer s.abort()
	if s.o.Finish != nil {
		defer s.o.Finish()
	}
	var tick <-chan time.Time
	if s.o.Interval > 0 {
		t := time.NewTicker(s.o.Interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-s.stop:
			s.drain()
			return
		default:
		}
		// A full batch waits for its write (a failed one, for the next tick): the queue holds
		// what comes meanwhile.
		var in <-chan T
		if len(s.batch) < s.o.Batch {
			in = s.c
		}
		select {
		case v := <-in:
			s.batch = append(s.batch, v)
			if s.failures == 0 && (len(s.batch) == s.o.Batch || tick == nil && len(s.c) == 0) {
				_ = s.write() // logged; kept for the next tick or dropped
			}
		case <-tick:
			_ = s.write()
			if s.o.Tick != nil {
				s.o.Tick(s.ctx)
			}
		case reply := <-s.flushes:
			reply <- s.flush()
		case <-s.stop:
			s.drain()
			return
		}
	}
}

// write hands the batch to Write. On success, or once it has failed Retries+1 times (its items
// dropped), the batch is emptied; otherwise it is kept for the next tick and the error returned.
func (s *Spool[T]) write() error {
	if len(s.batch) == 0 {
		return nil
	}
	err := s.o.Write(s.ctx, s.batch)
	if err != nil && s.ctx.Err() != nil {
		return err // cut short by Close's deadline: the drain counts the batch as not written
	}
	if err != nil {
		s.failures++
		if s.failures <= s.o.Retries {
			s.o.Logger.Warn(s.o.Name+" not written; retrying at the next flush", "records", len(s.batch), "err", err)
			return err
		}
		s.o.Logger.Error(s.o.Name+" dropped: writing failed", "records", len(s.batch), "attempts", s.failures, "err", err)
		s.drop(len(s.batch))
	}
	s.failures = 0
	s.batch = s.batch[:0]
	return err
}

// flush writes the batch and the items queued now (not those queued meanwhile, so that it ends
// under a steady load), stopping at a failed write.
func (s *Spool[T]) flush() error {
	for n := len(s.c); ; {
		for n > 0 && len(s.batch) < s.o.Batch {
			s.batch = append(s.batch, <-s.c)
			n--
		}
		if len(s.batch) == 0 {
			return nil
		}
		if err := s.write(); err != nil {
			return err
		}
	}
}

// drain writes the batch and everything queued, in batches, until the queue is empty, Wait's
// context ends or the writes have failed Retries+1 times; what it could not write is dropped.
func (s *Spool[T]) drain() {
	for {
		for len(s.batch) < s.o.Batch {
			select {
			case v := <-s.c:
				s.batch = append(s.batch, v)
				continue
			default:
			}
			break
		}
		if len(s.batch) == 0 {
			return
		}
		if s.ctx.Err() != nil || s.failures > s.o.Retries {
			s.lost = len(s.batch) + len(s.c)
			s.drop(s.lost)
			return
		}
		if err := s.o.Write(s.ctx, s.batch); err != nil {
			s.failures++
			s.o.Logger.Warn(s.o.Name+" not written at shutdown", "records", len(s.batch), "err", err)
			continue
		}
		s.batch = s.batch[:0]
	}
}
