package inventory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"toolrouter/internal/errtext"
	"toolrouter/inventory/builtin"
)

// protocolVersion is pinned to the newest version that still uses the initialize handshake: every
// server in the field speaks it, and a server that ignores `server/discover` would otherwise cost
// the discover timeout (5 s) on every start.
const protocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION

// session is one live connection to a server.
type session struct {
	client *client.Client
	tr     transport.Interface
	stderr *tailBuffer // nil unless stdio
	proc   *process    // nil unless stdio
	grace  time.Duration

	calls sync.WaitGroup // tool calls in flight (see Manager.CallTool and drain)

	dead     chan struct{} // closed by fail
	failOnce sync.Once
	failErr  error // why the session failed; written before dead closes
}

func newSession(grace time.Duration) *session {
	return &session{dead: make(chan struct{}), grace: grace}
}

// fail records why the session cannot go on (the server exited, or sent a message over its bound)
// and wakes its supervisor. Only the first reason is kept.
func (s *session) fail(err error) {
	s.failOnce.Do(func() {
		s.failErr = err
		close(s.dead)
	})
}

// failure returns the reason given to fail, or nil.
func (s *session) failure() error {
	select {
	case <-s.dead:
		return s.failErr
	default:
		return nil
	}
}

// cause adds the session's failure to err when err only says the transport is gone or the
// request was cancelled (by bound, when the session failed).
func (s *session) cause(err error) error {
	if f := s.failure(); f != nil && err != nil && !errors.Is(err, f) && (isTransportError(err) || errors.Is(err, context.Canceled)) {
		return fmt.Errorf("%w: %w", err, f)
	}
	return err
}

// bound returns ctx cancelled also when the session fails, so that a request whose answer can no
// longer come (its stream broke over the message bound) ends at once rather than at its deadline.
func (s *session) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-s.dead:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// close closes the client and stops a stdio server's process group; it returns within about
// 3 × the stop grace (see process.stop).
func (s *session) close() {
	if s == nil {
		return
	}
	if s.client != nil {
		_ = s.client.Close()
	}
	if s.proc != nil {
		s.proc.stop(s.grace)
	}
}

// dial starts the transport and runs the initialize handshake. life bounds the session (a stdio
// subprocess dies with it); ctx bounds only the handshake.
func dial(ctx, life context.Context, e *entry, opts Options, onNotify func(mcp.JSONRPCNotification)) (*session, error) {
	s := newSession(opts.StopGrace)
	sc := e.cfg
	var err error
	switch sc.Transport {
	case TransportBuiltin:
		which := sc.BuiltinName(e.name)
		srv, ok := opts.InProcess[which]
		if !ok {
			var berr error
			if srv, berr = builtin.New(which, opts.Now); berr != nil {
				return nil, berr
			}
		}
		s.tr = transport.NewInProcessTransport(srv)
	case TransportStdio:
		// The process is started here rather than by mcp-go's stdio transport, so that it runs in
		// its own group and its output is read through a bound.
		s.stderr = newTailBuffer(4096)
		s.proc, err = startProcess(sc, s.stderr, e.procs, func(werr error) {
			if werr == nil {
				s.fail(errors.New("server exited"))
			} else {
				s.fail(fmt.Errorf("server exited: %w", werr))
			}
		})
		if err != nil {
			return nil, err
		}
		out := &lineReader{r: s.proc.stdout, max: sc.MaxMessageBytes, fail: s.fail, name: e.name}
		st := transport.NewIO(out, s.proc.stdin, nil)
		transport.WithCommandLogger(e.log)(st) // mcp-go's own lines, through the server's logger
		s.tr = st
	case TransportStreamableHTTP:
		// The standalone GET stream carries notifications/tools/list_changed on the 2025-11-25
		// protocol this client speaks (the option is deprecated only for 2026-07-28).
		//lint:ignore SA1019 needed on protocol 2025-11-25, which this client pins (protocolVersion)
		s.tr, err = transport.NewStreamableHTTP(sc.URL, transport.WithHTTPHeaders(sc.Headers), transport.WithContinuousListening(),
			transport.WithHTTPBasicClient(s.httpClient(e)), transport.WithHTTPLogger(e.log))
	case TransportSSE:
		s.tr, err = transport.NewSSE(sc.URL, transport.WithHeaders(sc.Headers),
			transport.WithHTTPClient(s.httpClient(e)), transport.WithSSELogger(e.log))
	default:
		err = fmt.Errorf("unknown transport %q", sc.Transport)
	}
	if err != nil {
		return nil, fmt.Errorf("creating %s transport: %w", sc.Transport, err)
	}
	s.client = client.NewClient(s.tr, client.WithProtocolVersion(protocolVersion))
	// The transport lives as long as life; only the handshake is bounded by ctx.
	if err := s.client.Start(life); err != nil {
		s.close()
		return nil, s.withStderr(s.cause(fmt.Errorf("starting: %w", transport.NewError(err))))
	}
	s.client.OnNotification(onNotify)
	ctx, cancel := s.bound(ctx)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = protocolVersion
	init.Params.ClientInfo = mcp.Implementation{Name: "toolrouter", Version: "0.1.0"}
	if _, err := s.client.Initialize(ctx, init); err != nil {
		s.close()
		return nil, s.withStderr(s.cause(fmt.Errorf("initializing: %w", err)))
	}
	return s, nil
}

// httpClient is the HTTP client of a session over HTTP: its response bodies are bounded by the
// server's max_message_bytes, and a body over the bound fails the session.
func (s *session) httpClient(e *entry) *http.Client {
	return &http.Client{Transport: &boundedTransport{base: http.DefaultTransport, max: e.cfg.MaxMessageBytes, fail: s.fail, name: e.name}}
}

// withStderr appends what a stdio server last wrote to stderr, which usually says why it failed.
// After close it holds everything the server wrote: the process has been waited for, and
// exec's copy of its stderr with it.
func (s *session) withStderr(err error) error {
	if s.stderr == nil {
		return err
	}
	if tail := s.stderr.String(); tail != "" {
		// One line: the error reaches /readyz, /v1/inventory and tool-call errors as a JSON string.
		return fmt.Errorf("%w (stderr: %s)", err, errtext.OneLine(tail))
	}
	return err
}

func envList(env map[string]string) []string {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k+"="+env[k])
	}
	return out
}

// rawTool is a tool as listed by the server. mcp-go's client-side mcp.Tool decodes inputSchema into
// a fixed struct that drops keywords such as top-level anyOf, minProperties and $schema, so the
// inventory lists tools itself and keeps the schema bytes untouched.
type rawTool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	// OutputSchema is scanned, kept and exported, and validates the tool's results; no prompt shows it.
	OutputSchema json.RawMessage `json:"outputSchema"`
	// Annotations are decoded per tool (see hints): a malformed value loses the hints of that
	// tool, not the whole listing.
	Annotations json.RawMessage `json:"annotations"`
}

var listSeq atomic.Uint64

// maxPages bounds pagination against a server that keeps returning cursors.
const maxPages = 100

// listTools lists every tool, following pagination, straight over the session's transport. The
// connection uses the initialize handshake, so requests need no per-request protocol metadata.
func (s *session) listTools(ctx context.Context) ([]rawTool, error) {
	var (
		out    []rawTool
		cursor string
		seen   = map[string]bool{}
	)
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, fmt.Errorf("listing tools: more than %d pages", maxPages)
		}
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		resp, err := s.tr.SendRequest(ctx, transport.JSONRPCRequest{
			JSONRPC: mcp.JSONRPC_VERSION,
			ID:      mcp.NewRequestId(fmt.Sprintf("toolrouter-list-%d", listSeq.Add(1))),
			Method:  string(mcp.MethodToolsList),
			Params:  params,
		})
		if err != nil {
			return nil, fmt.Errorf("listing tools: %w", transport.NewError(err))
		}
		if resp.Error != nil {
			return nil, fmt.Errorf("listing tools: %w", resp.Error.AsError())
		}
		var result struct {
			Tools      []rawTool `json:"tools"`
			NextCursor string    `json:"nextCursor"`
		}
		if err := json.Unmarshal(resp.Result, &result); err != nil {
			return nil, fmt.Errorf("listing tools: decoding page %d: %w", page, err)
		}
		out = append(out, result.Tools...)
		if result.NextCursor == "" {
			return out, nil
		}
		if seen[result.NextCursor] {
			return nil, fmt.Errorf("listing tools: cursor %q repeated", result.NextCursor)
		}
		seen[result.NextCursor] = true
		cursor = result.NextCursor
	}
}

// tailBuffer keeps the last n bytes written to it; a stdio server's stderr goes here.
type tailBuffer struct {
	mu  sync.Mutex // guards buf
	n   int
	buf []byte
}

func newTailBuffer(n int) *tailBuffer { return &tailBuffer{n: n} }

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.n {
		b.buf = append([]byte(nil), b.buf[len(b.buf)-b.n:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(bytes.TrimSpace(b.buf))
}

// isTransportError reports whether err means the connection is broken (as opposed to a JSON-RPC
// error answer or the caller's deadline).
func isTransportError(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	var te *transport.Error
	return errors.As(err, &te) || errors.Is(err, transport.ErrTransportClosed)
}
