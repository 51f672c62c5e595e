package server

import (
	"context"
	"net"
	"sync"
	"syscall"
	"time"

	"toolrouter/answer"
)

// watchConn watches the peer of conn: as soon as it closes or resets the connection, cancel is
// called with cause answer.ErrClientGone. The watch's stop ends it and must be called before
// fasthttp reads from conn again (before the handler, or a stream's body writer, returns).
//
// fasthttp serves a connection on the goroutine that runs the handler and does not touch the
// socket meanwhile, so nothing notices a client that leaves (valyala/fasthttp#468, #965;
// RequestCtx.Done closes only when the server shuts down). net/http notices with a background
// one-byte read; that would take a pipelined request's first byte from fasthttp's reader, so the
// watch peeks instead (MSG_PEEK), parked in the runtime's network poller until the socket is
// readable: an end of stream or an error means the client left, data means a pipelined request
// (the watch then ends: the client is there). A connection that is not a socket (app.Test's) is
// not watched.
//
// The watch starts once the request has run for watchDelay: a goroutine parked in the poller and
// woken again to end costs a request more than all its own work when that takes microseconds,
// and a request answered that soon has no work left to cancel.
func watchConn(conn net.Conn, cancel context.CancelCauseFunc) *connWatch {
	if _, ok := conn.(syscall.Conn); !ok {
		return nil
	}
	w := &connWatch{conn: conn, cancel: cancel}
	w.timer = time.AfterFunc(watchDelay, w.watch)
	return w
}

// watchDelay is how long a request runs before its connection is watched.
const watchDelay = time.Millisecond

// connWatch is one watch of a connection (watchConn); nil when the connection is not watched.
type connWatch struct {
	conn   net.Conn
	cancel context.CancelCauseFunc
	timer  *time.Timer // starts the watch

	mu       sync.Mutex // guards watching and stopped
	watching bool       // the watch has started: stop must end it
	stopped  bool       // stop was called: the watch must not start
	done     sync.WaitGroup
	gone     bool // the peer closed or reset the connection; the watch's goroutine alone uses it
}

// watch runs on the timer's goroutine: unless the request has ended, it waits until the socket is
// readable and cancels when that is because the peer left.
func (w *connWatch) watch() {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	rc := rawConn(w.conn)
	// fasthttp's read deadline (http.read_timeout) would end the watch of a long request; it sets
	// its own again before it next reads. Cleared under mu: stop's deadline must come after.
	if rc == nil || w.conn.SetReadDeadline(time.Time{}) != nil {
		w.mu.Unlock()
		return
	}
	w.watching = true
	w.done.Add(1)
	w.mu.Unlock()
	defer w.done.Done()
	if rc.Read(w.peek) == nil && w.gone {
		w.cancel(answer.ErrClientGone)
	}
}

// peek is the poller's callback: false while there is nothing to see (the poller waits); true
// once there is, gone saying whether it is the end of the connection. A read deadline ends the
// wait with an error.
func (w *connWatch) peek(fd uintptr) bool {
	ready, gone := peek(fd)
	w.gone = gone
	return ready
}

// stop ends the watch, or keeps it from starting, and waits until it has ended.
func (w *connWatch) stop() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.stopped = true
	watching := w.watching
	w.mu.Unlock()
	if !watching {
		w.timer.Stop() // a watch that fires now finds stopped set
		return
	}
	_ = w.conn.SetReadDeadline(time.Unix(1, 0)) // wakes the peek with a timeout
	w.done.Wait()
	_ = w.conn.SetReadDeadline(time.Time{})
}

// rawConn is conn's socket, nil when it has none.
func rawConn(conn net.Conn) syscall.RawConn {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}
