package spool

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// sink is a Write that records the batches it was handed. While held, each write waits for a
// token on proceed (or for its context to end) after saying so on entered; fail says how many of
// the next writes fail.
type sink struct {
	mu      sync.Mutex // guards batches and fail
	batches [][]int
	fail    int

	held    bool
	entered chan struct{}
	proceed chan struct{}
	written chan int // the size of each successful write
}

func newSink(held bool) *sink {
	return &sink{held: held, entered: make(chan struct{}, 100), proceed: make(chan struct{}, 100), written: make(chan int, 100)}
}

func (s *sink) write(ctx context.Context, batch []int) error {
	if s.held {
		s.entered <- struct{}{}
		select {
		case <-s.proceed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail > 0 {
		s.fail--
		return errors.New("disk on fire")
	}
	s.batches = append(s.batches, slices.Clone(batch))
	s.written <- len(batch)
	return nil
}

// all is every item written, in order, and the size of each batch.
func (s *sink) all() (items, sizes []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.batches {
		items = append(items, b...)
		sizes = append(sizes, len(b))
	}
	return items, sizes
}

func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// TestPutDropsWhenFull: with the writer held, the queue takes Size items and the writer one batch;
// the rest are dropped and counted, and Put never waits. What was taken is written, in order.
func TestPutDropsWhenFull(t *testing.T) {
	for _, tc := range []struct {
		name        string
		size, batch int
		puts        int
	}{
		{name: "one at a time", size: 4, batch: 1, puts: 10},
		{name: "batches", size: 8, batch: 4, puts: 20},
		{name: "exactly full", size: 3, batch: 1, puts: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newSink(true)
			var onDrop int
			s := New(Options[int]{Size: tc.size, Batch: tc.batch, Write: w.write, OnDrop: func(n int) { onDrop += n }})
			if !s.Put(0) {
				t.Fatal("Put 0: got false, want true")
			}
			<-w.entered // the writer holds item 0; the queue is empty
			accepted := []int{0}
			for i := 1; i < tc.puts; i++ {
				if s.Put(i) {
					accepted = append(accepted, i)
				}
			}
			if want := min(tc.puts, tc.size+1); len(accepted) != want {
				t.Errorf("got %d accepted, want %d", len(accepted), want)
			}
			if got, want := s.Dropped(), uint64(tc.puts-len(accepted)); got != want || onDrop != int(want) {
				t.Errorf("got %d dropped (OnDrop %d), want %d", got, onDrop, want)
			}
			for range tc.puts {
				w.proceed <- struct{}{}
			}
			if err := s.Close(t.Context()); err != nil {
				t.Fatalf("Close: %v", err)
			}
			got, sizes := w.all()
			if !slices.Equal(got, accepted) {
				t.Errorf("got %v written, want %v", got, accepted)
			}
			for _, n := range sizes {
				if n > tc.batch {
					t.Errorf("got a batch of %d, want at most %d", n, tc.batch)
				}
			}
		})
	}
}

// TestBatches: without Interval a batch is written as soon as the queue is empty; with it, a
// batch waits until it is full (or the tick, here an hour away), and Flush writes what is queued.
func TestBatches(t *testing.T) {
	t.Run("without interval", func(t *testing.T) {
		w := newSink(false)
		s := New(Options[int]{Size: 10, Batch: 10, Write: w.write})
		s.Put(1)
		if n := <-w.written; n != 1 {
			t.Errorf("got a batch of %d, want the lone item written at once", n)
		}
		if err := s.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("with interval", func(t *testing.T) {
		w := newSink(false)
		s := New(Options[int]{Size: 10, Batch: 3, Interval: time.Hour, Write: w.write})
		for i := range 7 {
			s.Put(i)
		}
		for range 2 {
			if n := <-w.written; n != 3 {
				t.Errorf("got a batch of %d, want full batches of 3", n)
			}
		}
		if err := s.Flush(t.Context()); err != nil {
			t.Fatalf("Flush: %v", err)
		}
		if got, _ := w.all(); !slices.Equal(got, seq(0, 7)) {
			t.Errorf("after Flush: got %v, want %v", got, seq(0, 7))
		}
		if err := s.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(t.Context()); !errors.Is(err, ErrClosed) {
			t.Errorf("Flush after Close: got %v, want ErrClosed", err)
		}
	})
}

// TestRetries: a failed batch is kept and written at a later tick; one that fails Retries+1
// times is dropped and counted, and the next batch goes on.
func TestRetries(t *testing.T) {
	for _, tc := range []struct {
		name        string
		fail        int
		wantWritten []int
	}{
		{name: "written at a retry", fail: 2, wantWritten: []int{0, 1, 2, 3}},
		{name: "dropped after its retries", fail: 3, wantWritten: []int{2, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newSink(false)
			w.fail = tc.fail
			s := New(Options[int]{Size: 10, Batch: 2, Interval: time.Millisecond, Retries: 2, Write: w.write})
			for i := range 4 {
				s.Put(i)
			}
			for range len(tc.wantWritten) / 2 {
				<-w.written
			}
			if err := s.Close(t.Context()); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if got, _ := w.all(); !slices.Equal(got, tc.wantWritten) {
				t.Errorf("got %v written, want %v", got, tc.wantWritten)
			}
			if got, want := s.Dropped(), uint64(4-len(tc.wantWritten)); got != want {
				t.Errorf("got %d dropped, want %d", got, want)
			}
		})
	}
}

// TestClose: Close writes what is queued; when its context ends first it returns at once, the
// write in flight is cancelled and the rest dropped; Put drops after Shut; Finish runs once,
// after the last write.
func TestClose(t *testing.T) {
	for _, tc := range []struct {
		name        string
		cancel      bool
		wantWritten []int
	}{
		{name: "drains the queue", wantWritten: seq(0, 6)},
		{name: "context ends first", cancel: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newSink(true)
			var finished []int
			s := New(Options[int]{Size: 10, Batch: 2, Interval: time.Hour, Write: w.write,
				Finish: func() { items, _ := w.all(); finished = append(finished, len(items)) }})
			for i := range 6 {
				s.Put(i)
			}
			<-w.entered // the writer holds its first batch
			if !s.Shut() || s.Shut() {
				t.Error("Shut: want true the first time only")
			}
			if s.Put(6) {
				t.Error("Put after Shut: got true, want false")
			}
			ctx, cancel := context.WithCancel(t.Context())
			if tc.cancel {
				cancel()
			} else {
				for range 3 {
					w.proceed <- struct{}{}
				}
			}
			defer cancel()
			err := s.Wait(ctx)
			if tc.cancel {
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Wait: got %v, want context.Canceled", err)
				}
				if err := s.Wait(context.Background()); err == nil || err.Error() != "6 items not written at shutdown" {
					t.Errorf("Wait once ended: got %v, want the 6 items not written", err)
				}
			} else if err != nil {
				t.Errorf("Wait: got %v, want nil", err)
			}
			if got, _ := w.all(); !slices.Equal(got, tc.wantWritten) {
				t.Errorf("got %v written, want %v", got, tc.wantWritten)
			}
			if want := uint64(7 - len(tc.wantWritten)); s.Dropped() != want {
				t.Errorf("got %d dropped, want %d", s.Dropped(), want)
			}
			if !slices.Equal(finished, []int{len(tc.wantWritten)}) {
				t.Errorf("Finish: got runs after %v items, want one after %d", finished, len(tc.wantWritten))
			}
		})
	}
}
