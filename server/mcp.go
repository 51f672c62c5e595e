package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"toolrouter/access"
	"toolrouter/answer"
	"toolrouter/auth"
)

// pathMCP is where Deps.MCP, the MCP server's streamable HTTP transport, is served.
const pathMCP = "/mcp"

// Bounds of the MCP bridge.
const (
	// mcpChunks is how many flushed chunks wait for the connection before the MCP handler's
	// writes block.
	mcpChunks = 64
	// mcpChunkBytes is how much the handler may write without a flush before it is sent anyway.
	mcpChunkBytes = 64 << 10
	// mcpMaxBuffered is the largest JSON answer sent with a Content-Length; a longer one is
	// streamed.
	mcpMaxBuffered = 16 << 20
)

// mcp serves /mcp: it runs Deps.MCP, a net/http handler, for the request, with the identity
// authenticate established in the request's context (access.WithIdentity; MCP has no caller
// field, so the credential's identity is the one used). fiber's adaptor buffers a whole response,
// which would hold back every Server-Sent Event, so the handler writes through mcpWriter, whose
// flushes reach the client as they come (fasthttp's body stream writer). A JSON answer is sent
// whole, with its length. The request is logged as any other, once its answer has started.
//
// A POST's work ends at http.request_timeout, when the client leaves or when the server shuts
// down, as any request's; a stream of notifications (a GET, or a POST of subscriptions/listen)
// has no timeout and ends when the client leaves or as soon as the server starts to shut down,
// so it never holds a shutdown. The MCP server reports each tools/call to the observers itself:
// the /mcp request is not reported to them again.
func (h *handlers) mcp(c *fiber.Ctx) error {
	id, ok := identity(c)
	if !ok {
		return fmt.Errorf("%w: the request has no identity", auth.ErrForbidden)
	}
	reportOf(c).unobserved = true // the MCP server reports its tool calls
	var (
		ctx context.Context
		end func()
		err error
	)
	if c.Method() == fiber.MethodGet || listenRequest(c.Body()) {
		ctx, end, err = h.listen(c)
	} else {
		ctx, end, err = h.request(context.Background(), c.Context().Conn())
	}
	if err != nil {
		return err
	}
	req := mcpRequest(c, access.WithIdentity(ctx, id))
	w := newMCPWriter()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { _ = w.flush(false) }() // what is left reaches the chunks before done closes
		defer func() {
			if p := recover(); p != nil {
				h.o.Logger.Error("panic in MCP handler", "panic", p, "stack", string(debug.Stack()))
				w.fail()
			}
		}()
		h.d.MCP.ServeHTTP(w, req)
	}()
	// leave ends the request: nobody reads the chunks any more (the handler's writes fail) and
	// its context ends.
	leave := func() { close(w.stop); end() }

	select {
	case <-w.committed:
	case <-done:
	case <-ctx.Done():
		if !h.grace(done) {
			leave()
			return h.cause(ctx)
		}
	}
	if closed(done) && !closed(w.committed) && ctx.Err() != nil {
		// mcp-go writes nothing for a request whose context ended: the client gets what the
		// API answers such a request (503 shutting_down, 504 timeout).
		leave()
		return h.cause(ctx)
	}
	ended := ctx.Done()
	status, header := w.head()
	for k, vs := range header {
		if hopByHop[k] {
			continue // fasthttp frames the response itself
		}
		for _, v := range vs {
			c.Response().Header.Add(k, v)
		}
	}
	c.Status(status)
	var body []byte
	if !strings.HasPrefix(header.Get(fiber.HeaderContentType), "text/event-stream") {
		// A whole answer: collected, then sent with its length.
	collect:
		for {
			select {
			case b := <-w.chunks:
				if body = append(body, b...); len(body) > mcpMaxBuffered {
					break collect // too long to hold: streamed
				}
			case <-done:
				body = append(body, w.drain()...)
				leave()
				return c.Send(body)
			case <-ended:
				if !h.grace(done) {
					leave()
					return h.cause(ctx)
				}
				ended = nil // done is closed: the answer is complete
			}
		}
	}
	// A stream of notifications outlives http.write_timeout, which fasthttp sets once for the
	// whole response: each write gets a bound of its own instead.
	conn := c.Context().Conn()
	write := func(bw *bufio.Writer, b []byte) error {
		if h.o.WriteTimeout > 0 {
			_ = conn.SetWriteDeadline(time.Now().Add(h.o.WriteTimeout))
		}
		if _, err := bw.Write(b); err != nil {
			return err
		}
		return bw.Flush()
	}
	// The head goes out at once, before the first event: a client waits for it (the Go SDK's
	// Connect does for its GET stream), and a stream may carry no event for a long time.
	c.Response().ImmediateHeaderFlush = true
	c.Context().SetBodyStreamWriter(func(bw *bufio.Writer) {
		defer leave()
		if len(body) > 0 && write(bw, body) != nil {
			return
		}
		for {
			select {
			case b := <-w.chunks:
				if write(bw, b) != nil {
					return // the client is gone: leave ends the handler's context
				}
			case <-done:
				if rest := w.drain(); len(rest) > 0 {
					_ = write(bw, rest)
				}
				return
			case <-ctx.Done():
				return
			}
		}
	})
	return nil
}

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// hopByHop are the handler's headers fasthttp sets itself.
var hopByHop = map[string]bool{"Connection": true, "Content-Length": true, "Transfer-Encoding": true, "Keep-Alive": true}

// grace waits a moment for a handler whose context ended to answer by itself (a tool call cut
// short reports it); false when it does not.
func (h *handlers) grace(done <-chan struct{}) bool {
	t := time.NewTimer(min(h.o.ShutdownTimeout/4, time.Second))
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// cause is the error a request whose context ended before its answer gets.
func (h *handlers) cause(ctx context.Context) error {
	if err := answer.Interrupted(ctx); err != nil {
		return err
	}
	return context.Cause(ctx)
}

// listenRequest reports whether a POST body is a subscriptions/listen request: the stream of
// notifications of protocol version 2026-07-28, which lives as long as a GET stream does.
func listenRequest(body []byte) bool {
	var msg struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(body, &msg) == nil && msg.Method == "subscriptions/listen"
}

// listen returns the context of a GET /mcp stream: no timeout; it ends when the client leaves or
// when the server starts to shut down.
func (h *handlers) listen(c *fiber.Ctx) (context.Context, func(), error) {
	ctx, release, err := h.life.work(context.Background())
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	watch := watchConn(c.Context().Conn(), cancel)
	quit := make(chan struct{})
	go func() {
		select {
		case <-h.life.shutdown:
			cancel(answer.ErrShuttingDown)
		case <-quit:
		}
	}()
	return ctx, func() { close(quit); cancel(nil); watch.stop(); release() }, nil
}

// mcpRequest is the net/http form of the fiber request, its body and headers copied (fasthttp
// reuses them), with ctx.
func mcpRequest(c *fiber.Ctx, ctx context.Context) *http.Request {
	u := &url.URL{Path: c.Path(), RawQuery: string(c.Request().URI().QueryString())}
	body := bytes.Clone(c.Body())
	r, _ := http.NewRequestWithContext(ctx, c.Method(), u.String(), bytes.NewReader(body))
	c.Request().Header.VisitAll(func(k, v []byte) { r.Header.Add(string(k), string(v)) })
	r.Host = string(c.Request().Host())
	r.RemoteAddr = c.Context().RemoteAddr().String()
	r.ContentLength = int64(len(body))
	return r
}

// mcpWriter is the http.ResponseWriter (and http.Flusher) the MCP handler writes to: the head
// once, then bytes, handed on in chunks at each Flush (or every mcpChunkBytes) through a bounded
// channel; a write blocks while the channel is full and fails once stop is closed.
type mcpWriter struct {
	header    http.Header   // the handler's
	sent      http.Header   // a copy of header when the head was committed
	committed chan struct{} // closed by the first WriteHeader, Write or Flush
	chunks    chan []byte
	stop      chan struct{} // closed when nobody reads chunks any more

	mu     sync.Mutex // guards status, sent and buf
	status int
	buf    []byte
}

func newMCPWriter() *mcpWriter {
	return &mcpWriter{header: http.Header{}, committed: make(chan struct{}), chunks: make(chan []byte, mcpChunks),
		stop: make(chan struct{}), status: http.StatusOK}
}

var errMCPWriterGone = errors.New("the MCP response is no longer read")

func (w *mcpWriter) Header() http.Header { return w.header }

func (w *mcpWriter) WriteHeader(status int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.commitLocked(status)
}

func (w *mcpWriter) commitLocked(status int) {
	if w.sent != nil {
		return
	}
	w.sent, w.status = w.header.Clone(), status // later changes are ignored, as net/http does
	close(w.committed)
}

func (w *mcpWriter) Write(p []byte) (int, error) {
	select {
	case <-w.stop:
		return 0, errMCPWriterGone
	default:
	}
	w.mu.Lock()
	w.commitLocked(http.StatusOK)
	w.buf = append(w.buf, p...)
	full := len(w.buf) >= mcpChunkBytes
	w.mu.Unlock()
	if full {
		if err := w.flush(true); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush sends the head, if not yet sent, and hands what was written on to the connection.
func (w *mcpWriter) Flush() { _ = w.flush(true) }

// flush hands what was written on; commit sends the head too, even with nothing written.
func (w *mcpWriter) flush(commit bool) error {
	w.mu.Lock()
	if commit {
		w.commitLocked(http.StatusOK)
	}
	b := w.buf
	w.buf = nil
	w.mu.Unlock()
	if len(b) == 0 {
		return nil
	}
	select {
	case w.chunks <- b:
		return nil
	case <-w.stop:
		return errMCPWriterGone
	}
}

// head returns the committed status and headers (200 and none when the handler wrote nothing).
func (w *mcpWriter) head() (int, http.Header) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.commitLocked(http.StatusOK)
	return w.status, w.sent
}

// drain returns the chunks waiting, once the handler has returned.
func (w *mcpWriter) drain() []byte {
	var b []byte
	for {
		select {
		case c := <-w.chunks:
			b = append(b, c...)
		default:
			return b
		}
	}
}

// fail answers 500 for a handler that panicked before writing anything.
func (w *mcpWriter) fail() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sent == nil {
		w.header.Set(fiber.HeaderContentType, fiber.MIMETextPlainCharsetUTF8)
		w.commitLocked(http.StatusInternalServerError)
		w.buf = append(w.buf, "internal error\n"...)
	}
}
