package server

import (
	"context"
	"net"
	"syscall"
	"time"

	"toolrouter/answer"
)

// watchConn returns a context derived from parent that is cancelled, with cause answer.ErrClientGone, as
// soon as the peer of conn closes or resets the connection; stop ends the watch and must be called
// before fasthttp reads from conn again (before the handler, or a stream's body writer, returns).
//
// fasthttp serves a connection on the goroutine that runs the handler and does not touch the
// socket meanwhile, so nothing notices a client that leaves (valyala/fasthttp#468, #965;
// RequestCtx.Done closes only when the server shuts down). net/http notices with a background
// one-byte read; that would take a pipelined request's first byte from fasthttp's reader, so the
// watch peeks instead (MSG_PEEK), parked in the runtime's network poller until the socket is
// readable: an end of stream or an error means the client left, data means a pipelined request
// (the watch then ends: the client is there). A connection that is not a socket (app.Test's) is
// not watched.
func watchConn(parent context.Context, conn net.Conn) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	rc := rawConn(conn)
	// fasthttp's read deadline (http.read_timeout) would end the watch of a long request; it sets
	// its own again before it next reads.
	if rc == nil || conn.SetReadDeadline(time.Time{}) != nil {
		return ctx, func() { cancel(nil) }
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if peerClosed(rc) {
			cancel(answer.ErrClientGone)
		}
	}()
	return ctx, func() {
		_ = conn.SetReadDeadline(time.Unix(1, 0)) // wakes the peek with a timeout
		<-done
		_ = conn.SetReadDeadline(time.Time{})
		cancel(nil)
	}
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

// peerClosed waits until the socket is readable and reports whether that is because the peer
// closed or reset it; false when data is waiting or the wait was ended (a read deadline).
func peerClosed(rc syscall.RawConn) bool {
	var closed bool
	err := rc.Read(func(fd uintptr) bool {
		ready, gone := peek(fd)
		closed = gone
		return ready
	})
	return err == nil && closed
}
