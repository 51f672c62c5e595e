// Package provider holds the model clients toolrouter talks to. Ollama is a lean client for
// Ollama's /api/chat and /api/tags that uses the ollama/api request and response types and
// reproduces api.Client's wire behaviour, without its 8 MiB line buffer allocated per call.
// Call is the one path every model call of toolrouter takes over any Chatter: the answer bounded
// and gathered, the server's final message required, its costs read (Stats).
package provider

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"

	"github.com/ollama/ollama/api"
)

// maxList bounds the model list from /api/tags.
const maxList = 8 << 20

// ErrLineTooLong means the server sent a line longer than the client's limit (see
// WithMaxResponseBytes). api.Client allows 8 MiB, allocated up front on every call; here a line
// grows only as long as it is, up to the limit.
var ErrLineTooLong = errors.New("response line too long")

// Ollama is a client for one Ollama server. It is safe for concurrent use.
type Ollama struct {
	base *url.URL
	http *http.Client
	lim  limits
	bufs sync.Pool // *bytes.Buffer for request bodies
}

// NewOllama returns a client for the server at base using hc (nil: http.DefaultClient).
func NewOllama(base *url.URL, hc *http.Client, opts ...Option) *Ollama {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Ollama{base: base, http: hc, lim: newLimits(opts), bufs: sync.Pool{New: func() any { return new(bytes.Buffer) }}}
}

// Chat sends req to /api/chat and calls fn for each response object (one when req.Stream is
// false, several when streaming), exactly as api.Client.Chat does: an HTTP error status becomes
// an api.StatusError carrying the server's message, and an "error" field in a line ends the call
// with that error. An answer past the response limit ends the call with ErrResponseTooLarge,
// without reading the rest.
func (o *Ollama) Chat(ctx context.Context, req *api.ChatRequest, fn api.ChatResponseFunc) error {
	buf := o.bufs.Get().(*bytes.Buffer)
	buf.Reset()
	defer o.bufs.Put(buf)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(req); err != nil {
		return fmt.Errorf("encoding chat request: %w", err)
	}
	resp, err := o.do(ctx, http.MethodPost, "/api/chat", bytes.NewReader(buf.Bytes()), "application/x-ndjson")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	r := bufio.NewReaderSize(resp.Body, 16<<10)
	m := o.lim.meter()
	for {
		line, err := readLine(r, o.lim.maxLine())
		if len(bytes.TrimSpace(line)) > 0 {
			if lerr := o.line(resp, line, m, fn); lerr != nil {
				return lerr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading chat response: %w", err)
		}
	}
}

// chatLine is one NDJSON line: a response, or an error.
type chatLine struct {
	Error string `json:"error,omitempty"`
	api.ChatResponse
}

func (o *Ollama) line(resp *http.Response, line []byte, m *Meter, fn api.ChatResponseFunc) error {
	var l chatLine
	if err := json.Unmarshal(line, &l); err != nil {
		if resp.StatusCode >= http.StatusBadRequest {
			return api.StatusError{StatusCode: resp.StatusCode, Status: resp.Status, ErrorMessage: string(line)}
		}
		return fmt.Errorf("decoding chat response %q: %w", clip(line), err)
	}
	switch {
	case resp.StatusCode >= http.StatusBadRequest:
		return api.StatusError{StatusCode: resp.StatusCode, Status: resp.Status, ErrorMessage: l.Error}
	case l.Error != "":
		return errors.New(l.Error)
	}
	if err := m.Add(l.Message); err != nil {
		return err
	}
	return fn(l.ChatResponse)
}

// List returns the models the server has (GET /api/tags).
func (o *Ollama) List(ctx context.Context) (*api.ListResponse, error) {
	resp, err := o.do(ctx, http.MethodGet, "/api/tags", nil, "application/json")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxList))
	if err != nil {
		return nil, fmt.Errorf("reading model list: %w", err)
	}
	if resp.StatusCode >= http.StatusBadRequest {
		return nil, StatusError(resp, body)
	}
	var list api.ListResponse
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("decoding model list: %w", err)
	}
	return &list, nil
}

// StatusError is the error of an Ollama response with an error status: an api.StatusError with the
// body's {"error": …} message, or the body itself (cut to 512 bytes) when it has none.
func StatusError(resp *http.Response, body []byte) error {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error == "" {
		e.Error = string(body[:min(len(body), 512)])
	}
	return api.StatusError{StatusCode: resp.StatusCode, Status: resp.Status, ErrorMessage: e.Error}
}

func (o *Ollama) do(ctx context.Context, method, path string, body io.Reader, accept string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, o.base.JoinPath(path).String(), body)
	if err != nil {
		return nil, fmt.Errorf("building %s request: %w", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", "toolrouter")
	resp, err := o.http.Do(req)
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// readLine reads one line of at most limit bytes, without the newline; a longer line is an error
// wrapping ErrLineTooLong, returned once limit bytes are read (plus at most r's buffer).
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		if len(line) > limit {
			return nil, lineTooLong(limit)
		}
		return bytes.TrimRight(line, "\r\n"), err
	}
	long := append([]byte(nil), line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		if len(long) > limit {
			return nil, lineTooLong(limit)
		}
		line, err = r.ReadSlice('\n')
		long = append(long, line...)
	}
	if len(long) > limit {
		return nil, lineTooLong(limit)
	}
	return bytes.TrimRight(long, "\r\n"), err
}

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}
