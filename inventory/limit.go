package inventory

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
)

// ErrMessageTooLarge is wrapped when a server sends a message over its max_message_bytes: a stdio
// line, an HTTP response body or an SSE event. mcp-go buffers a message whole before parsing it,
// so the bound is enforced on the bytes as they arrive; the session fails and is restarted.
var ErrMessageTooLarge = errors.New("message too large")

// tooLarge is the error for a message of what that passed max bytes on server name.
func tooLarge(name, what string, max int) error {
	return fmt.Errorf("%w: %s over %d bytes (servers.%s.max_message_bytes)", ErrMessageTooLarge, what, max, name)
}

// lineReader passes a stdio server's output through until a line grows past max bytes; then it
// reports the failure and ends the stream. It ends it with io.EOF, which mcp-go's reader takes
// quietly: the reason goes to fail, and from there to the inventory and the log, once.
type lineReader struct {
	r    io.Reader
	max  int
	line int // bytes since the last newline
	err  error
	fail func(error)
	name string
}

func (l *lineReader) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, io.EOF
	}
	n, err := l.r.Read(p)
	chunk := p[:n]
	for off := 0; off < n; {
		i := bytes.IndexByte(chunk[off:], '\n')
		seg := n - off
		if i >= 0 {
			seg = i
		}
		if l.line+seg > l.max {
			l.err = tooLarge(l.name, "a line of standard output", l.max)
			l.fail(l.err)
			return 0, io.EOF
		}
		if i < 0 {
			l.line += seg
			break
		}
		l.line = 0
		off += i + 1
	}
	return n, err
}

// boundedTransport bounds the response bodies of an MCP server reached over HTTP: an event stream
// per event, any other body whole.
type boundedTransport struct {
	base http.RoundTripper
	max  int
	fail func(error)
	name string
}

func (t *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	resp.Body = &boundedBody{rc: resp.Body, t: t, events: mt == "text/event-stream"}
	return resp, nil
}

// boundedBody fails a body once it (or, for an event stream, one event) passes the bound.
type boundedBody struct {
	rc     io.ReadCloser
	t      *boundedTransport
	events bool
	n      int  // bytes of the body, or of the current event
	line   bool // the current line has a byte other than '\r'
	err    error
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	if !b.events {
		if b.n += n; b.n > b.t.max {
			b.err = tooLarge(b.t.name, "a response body", b.t.max)
		}
	} else {
		for _, c := range p[:n] {
			switch {
			case c == '\n' && !b.line: // a blank line ends an event
				b.n = 0
				continue
			case c == '\n':
				b.line = false
			case c != '\r':
				b.line = true
			}
			if b.n++; b.n > b.t.max {
				b.err = tooLarge(b.t.name, "an event", b.t.max)
				break
			}
		}
	}
	if b.err != nil {
		b.t.fail(b.err)
		return 0, b.err
	}
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }
