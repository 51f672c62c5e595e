package approval

import (
	"errors"
	"sync"
)

// Decision is what a person decided about a held call.
type Decision string

// Decisions.
const (
	Approved Decision = "approved"
	Declined Decision = "declined"
)

// ErrTooManyWaiting is Waiters.Add's error when its bound is reached: the route answers at once,
// with the call held, as it would without a wait.
var ErrTooManyWaiting = errors.New("too many routes wait for approvals")

// Waiters connects a route that waits for the decision on its held call with the person who
// decides it in the same process; T is what a decision hands the route. A waiting route costs a
// channel and a map entry, no goroutine of its own and no polling. It is safe for concurrent use.
type Waiters[T any] struct {
	max int
	mu  sync.Mutex // guards m
	m   map[string]chan T
}

// NewWaiters returns Waiters that let at most max routes wait at once.
func NewWaiters[T any](max int) *Waiters[T] {
	return &Waiters[T]{max: max, m: make(map[string]chan T)}
}

// Add registers a wait for the call held under key (its token's hash, Keeper.Key) and returns
// the channel its decision arrives on, once, and stop, which ends the wait: a route calls it
// however the wait ended. stop returns a decision that was handed over but not yet received, so
// that a decision made as the wait times out is never lost: once stop has returned, no decision
// reaches the route, and Decide reports that none waited. ErrTooManyWaiting when max routes wait.
func (w *Waiters[T]) Add(key string) (<-chan T, func() (T, bool), error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.m) >= w.max {
		return nil, nil, ErrTooManyWaiting
	}
	ch := make(chan T, 1)
	w.m[key] = ch
	return ch, func() (T, bool) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.m[key] == ch {
			delete(w.m, key)
		}
		select {
		case d := <-ch:
			return d, true
		default:
			var zero T
			return zero, false
		}
	}, nil
}

// Decide hands d to the route waiting for the call held under key and reports whether one was
// waiting; the wait ends then, so a second decision finds none.
func (w *Waiters[T]) Decide(key string, d T) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch, ok := w.m[key]
	if !ok {
		return false
	}
	delete(w.m, key)
	ch <- d
	return true
}

// Waiting reports whether a route waits for the call held under key.
func (w *Waiters[T]) Waiting(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.m[key]
	return ok
}

// Len is how many routes wait.
func (w *Waiters[T]) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.m)
}
