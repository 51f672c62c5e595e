package server

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"toolrouter/answer"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// Serve serves the API on ln until ctx ends, then shuts down within o.ShutdownTimeout: it stops
// accepting connections and lets the requests in flight finish until the last part of the timeout
// (a quarter, at most a second), then ends those still running, so that each gets a final answer
// before Serve returns: 503 shutting_down, or on a stream an error event with that code. Requests
// that arrive meanwhile on open connections get the same 503. It returns nil once every request
// has had its answer, or an error naming how many had none when the timeout ran out.
func Serve(ctx context.Context, ln net.Listener, d Deps, o Options) error {
	app, h := build(d, o, ln.Addr().String())
	h.life.tracking = true
	app.Server().ConnState = h.life.connState
	errc := make(chan error, 1)
	go func() { errc <- app.Listener(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	deadline := time.Now().Add(h.o.ShutdownTimeout)
	final := min(h.o.ShutdownTimeout/4, time.Second)
	h.life.refuse()
	h.o.Logger.Info("shutting down", "requests_in_flight", h.life.inFlight(), "timeout_ms", h.o.ShutdownTimeout.Milliseconds())
	// Closes the listener and idle connections, and waits for the others to finish.
	graceful, cancel := context.WithDeadline(context.Background(), deadline.Add(-final))
	err := app.ShutdownWithContext(graceful)
	cancel()
	if err == nil {
		return nil
	}
	h.o.Logger.Warn("shutdown: ending the requests still in flight", "requests", h.life.inFlight())
	h.life.cancelAll()
	last, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if n := h.life.waitAnswered(last); n > 0 {
		return fmt.Errorf("shutting down: %d requests had no answer within http.shutdown_timeout (%s)", n, h.o.ShutdownTimeout)
	}
	return nil
}

// lifecycle knows the requests in flight: their work, to end it when the server shuts down, and
// (once Serve tracks connections) which connections still owe an answer.
type lifecycle struct {
	tracking bool // set by Serve before serving: connections are tracked

	mu       sync.Mutex // guards the fields below
	closing  bool
	next     uint64
	cancels  map[uint64]context.CancelCauseFunc // work in flight
	pending  map[net.Conn]struct{}              // connections whose request is not answered yet
	answered chan struct{}                      // closed and replaced when pending shrinks
	shutdown chan struct{}                      // closed by refuse: long-lived streams end at once
}

func newLifecycle() *lifecycle {
	return &lifecycle{cancels: map[uint64]context.CancelCauseFunc{}, pending: map[net.Conn]struct{}{}, answered: make(chan struct{}), shutdown: make(chan struct{})}
}

// admit is the first middleware: while shutting down it answers 503 at once; otherwise it notes
// that the connection owes an answer.
func (l *lifecycle) admit(c *fiber.Ctx) error {
	l.mu.Lock()
	closing := l.closing
	if !closing && l.tracking {
		l.pending[c.Context().Conn()] = struct{}{}
	}
	l.mu.Unlock()
	if closing {
		c.Set(fiber.HeaderConnection, "close")
		return answer.ErrShuttingDown
	}
	return c.Next()
}

// connState is fasthttp's connection hook: a connection that goes idle or closes has answered.
func (l *lifecycle) connState(conn net.Conn, st fasthttp.ConnState) {
	if st != fasthttp.StateIdle && st != fasthttp.StateClosed && st != fasthttp.StateHijacked {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.pending[conn]; ok {
		delete(l.pending, conn)
		close(l.answered)
		l.answered = make(chan struct{})
	}
}

// work returns the context of one request's work, a child of parent that ends when the server
// shuts down (cause answer.ErrShuttingDown), and the function that releases it.
func (l *lifecycle) work(parent context.Context) (context.Context, func(), error) {
	ctx, cancel := context.WithCancelCause(parent)
	id, err := l.enroll(cancel)
	if err != nil {
		return nil, nil, err
	}
	return ctx, func() { l.release(id, cancel) }, nil
}

// enroll registers cancel, the cancellation of one request's work, for the server's shutdown to
// call with answer.ErrShuttingDown, and returns its id for release. While the server shuts down it
// calls cancel at once and returns answer.ErrShuttingDown.
func (l *lifecycle) enroll(cancel context.CancelCauseFunc) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		cancel(answer.ErrShuttingDown)
		return 0, answer.ErrShuttingDown
	}
	id := l.next
	l.next++
	l.cancels[id] = cancel
	return id, nil
}

// release ends the work enrolled as id: it unregisters it and cancels its context.
func (l *lifecycle) release(id uint64, cancel context.CancelCauseFunc) {
	l.mu.Lock()
	delete(l.cancels, id)
	l.mu.Unlock()
	cancel(nil)
}

// refuse makes every request from now on a 503 shutting_down.
func (l *lifecycle) refuse() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closing {
		l.closing = true
		close(l.shutdown)
	}
}

// inFlight is the number of requests whose work is running.
func (l *lifecycle) inFlight() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.cancels)
}

// cancelAll ends the work of every request in flight with cause answer.ErrShuttingDown.
func (l *lifecycle) cancelAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, cancel := range l.cancels {
		cancel(answer.ErrShuttingDown)
	}
}

// waitAnswered waits until no connection owes an answer, or ctx ends; it returns how many still do.
func (l *lifecycle) waitAnswered(ctx context.Context) int {
	for {
		l.mu.Lock()
		n, answered := len(l.pending), l.answered
		l.mu.Unlock()
		if n == 0 {
			return 0
		}
		select {
		case <-answered:
		case <-ctx.Done():
			return n
		}
	}
}

// request returns the context for one request's work, a child of parent, with its end: it ends at
// the request timeout, when the client closes conn (cause answer.ErrClientGone) or when the server shuts
// down (cause answer.ErrShuttingDown). end must be called before fasthttp uses conn again.
//
// The shutdown and the watch of conn cancel the same context, whichever comes first giving the
// cause, as a watch context nested in the work's would.
func (h *handlers) request(parent context.Context, conn net.Conn) (context.Context, func(), error) {
	work, cancelWork := context.WithCancelCause(parent)
	id, err := h.life.enroll(cancelWork)
	if err != nil {
		return nil, nil, err
	}
	watch := watchConn(conn, cancelWork)
	ctx, cancel := context.WithTimeout(work, h.o.RequestTimeout)
	return ctx, func() { cancel(); watch.stop(); h.life.release(id, cancelWork) }, nil
}
