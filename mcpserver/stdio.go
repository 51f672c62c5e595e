package mcpserver

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// stdioChunk is how much of stdin is read at once: with the line held back until it ends, at most
// max_message_bytes + stdioChunk bytes of one message are in memory.
const stdioChunk = 64 << 10

// boundedLines passes whole lines of r on to mcp-go's stdio reader, which buffers a line whole
// however long it is. A line over max bytes (its newline aside) is neither buffered nor passed
// on: the rest of it is read and discarded, tooLong is called, and the next line is served.
type boundedLines struct {
	r       *bufio.Reader
	max     int
	tooLong func() error

	line []byte // the line being read; at most max+1 bytes
	out  []byte // what of a whole line Read has yet to pass on
	err  error  // r's error, passed on once out is empty
	peak int    // the most bytes line ever held
}

func newBoundedLines(r io.Reader, max int, tooLong func() error) *boundedLines {
	return &boundedLines{r: bufio.NewReaderSize(r, stdioChunk), max: max, tooLong: tooLong}
}

// Read passes on the next whole lines, one at a time.
func (b *boundedLines) Read(p []byte) (int, error) {
	for len(b.out) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		b.next()
	}
	n := copy(p, b.out)
	b.out = b.out[n:]
	return n, nil
}

// next reads the next line into out, or skips it when it is over the bound; at r's end or error it
// passes on what it has read and keeps the error.
func (b *boundedLines) next() {
	b.line = b.line[:0]
	for {
		frag, err := b.r.ReadSlice('\n')
		size := len(b.line) + len(frag)
		if err == nil {
			size-- // the newline
		}
		if size > b.max {
			b.err = b.skip(err)
			return
		}
		b.line = append(b.line, frag...)
		b.peak = max(b.peak, len(b.line))
		switch {
		case err == nil:
			b.out = b.line
			return
		case !errors.Is(err, bufio.ErrBufferFull):
			b.out, b.err = b.line, err
			return
		}
	}
}

// skip discards the rest of a line over the bound, err being the last read's, and reports it; it
// returns the error that ends the input, nil when there is a next line.
func (b *boundedLines) skip(err error) error {
	b.line = b.line[:0]
	for errors.Is(err, bufio.ErrBufferFull) {
		_, err = b.r.ReadSlice('\n')
	}
	if werr := b.tooLong(); werr != nil {
		return werr
	}
	return err
}

// syncWriter makes each Write to w whole: mcp-go writes each message in one Write under a lock of
// its own, and tooLong's answers go to the same stdout.
type syncWriter struct {
	mu sync.Mutex // guards w
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// rpcError is a JSON-RPC error answer.
type rpcError struct {
	JSONRPC string `json:"jsonrpc"`
	ID      any    `json:"id"`
	Error   struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// tooLongAnswer is the JSON-RPC error answering a line over max bytes: its id cannot be read, so
// it is null, as for a parse error.
func tooLongAnswer(max int) []byte {
	a := rpcError{JSONRPC: mcp.JSONRPC_VERSION}
	a.Error.Code, a.Error.Message = mcp.INVALID_REQUEST, fmt.Sprintf("message over %d bytes (max_message_bytes): not read", max)
	b, _ := json.Marshal(a)
	return append(b, '\n')
}
