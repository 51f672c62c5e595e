package inventory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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

// The client asks for the newest protocol first (server/discover, stateless 2026-07-28) and falls
// back to the initialize handshake, where the server picks its version (2025-11-25 down to
// 2024-11-05). A server that lets the discover probe time out (instead of answering "method not
// found") is remembered, and its entry's later reconnects go straight to the handshake.

// discoverTimeout bounds the server/discover probe, within the connect deadline.
const discoverTimeout = 5 * time.Second

// session is one live connection to a server.
type session struct {
	client *client.Client
	tr     transport.Interface
	stderr *tailBuffer // nil unless stdio
	proc   *process    // nil unless stdio
	grace  time.Duration

	calls sync.WaitGroup // tool calls in flight (see Manager.CallTool and drain)

	// version is the protocol version negotiated with the server; info is the client's identity,
	// which a 2026-07-28 request repeats in its _meta.
	version string
	info    mcp.Implementation
	// listen ends the subscriptions/listen stream of a 2026-07-28 session (nil when none).
	listen func()
	// tasks says the server takes task-augmented tools/call requests; watch routes the progress
	// and task-status notifications of calls in flight (see callTool).
	tasks bool
	watch watchers
	// inProcess says the server runs in this process (transport builtin): see withoutValues.
	inProcess bool
	log       *slog.Logger

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
	if s.listen != nil {
		s.listen()
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
		s.tr, s.inProcess = transport.NewInProcessTransport(srv), true
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
		// The standalone GET stream carries notifications/tools/list_changed up to 2025-11-25; the
		// transport opens it only when the handshake settled on one of those versions, and a
		// 2026-07-28 session listens with subscriptions/listen instead (see eitherEra).
		var st *transport.StreamableHTTP
		//lint:ignore SA1019 needed up to protocol 2025-11-25; unused on 2026-07-28 (see eitherEra)
		st, err = transport.NewStreamableHTTP(sc.URL, transport.WithHTTPHeaders(sc.Headers), transport.WithContinuousListening(),
			transport.WithHTTPBasicClient(s.httpClient(e)), transport.WithHTTPLogger(e.log))
		if err == nil {
			s.tr = eitherEra{st}
		}
	case TransportSSE:
		s.tr, err = transport.NewSSE(sc.URL, transport.WithHeaders(sc.Headers),
			transport.WithHTTPClient(s.httpClient(e)), transport.WithSSELogger(e.log))
	default:
		err = fmt.Errorf("unknown transport %q", sc.Transport)
	}
	if err != nil {
		return nil, fmt.Errorf("creating %s transport: %w", sc.Transport, err)
	}
	// Half the connect deadline at most: a server that ignores the probe leaves the handshake time.
	probe := min(discoverTimeout, remaining(ctx)/2)
	// The client takes tasks (2026-07-28's extension; before, it asks for them per call).
	caps := mcp.ClientCapabilities{Extensions: map[string]any{tasksExtension: map[string]any{}}}
	copts := []client.ClientOption{client.WithProtocolVersion(mcp.LATEST_PROTOCOL_VERSION), client.WithDiscoverTimeout(probe),
		client.WithClientCapabilities(caps)}
	if e.legacyOnly.Load() {
		//lint:ignore SA1019 the server ignored server/discover: the handshake is all it speaks
		copts = []client.ClientOption{client.WithLegacyProtocolOnly(), client.WithClientCapabilities(caps)}
	}
	s.client = client.NewClient(s.tr, copts...)
	// The transport lives as long as life; only the handshake is bounded by ctx.
	if err := s.client.Start(life); err != nil {
		s.close()
		return nil, s.withStderr(s.cause(fmt.Errorf("starting: %w", transport.NewError(err))))
	}
	s.log = e.log
	s.client.OnNotification(func(n mcp.JSONRPCNotification) {
		if !s.watch.deliver(n) {
			onNotify(n)
		}
	})
	ctx, cancel := s.bound(ctx)
	defer cancel()
	s.info = mcp.Implementation{Name: "toolrouter", Version: "0.1.0"}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = s.info
	t0 := time.Now()
	res, err := s.client.Initialize(ctx, init)
	if err != nil {
		s.close()
		return nil, s.withStderr(s.cause(fmt.Errorf("initializing: %w", err)))
	}
	s.version, s.tasks = res.ProtocolVersion, takesTasks(res.ProtocolVersion, res.Capabilities)
	if !mcp.IsModernProtocol(s.version) && !e.legacyOnly.Load() && time.Since(t0) >= probe {
		e.legacyOnly.Store(true) // the probe timed out: spare the next reconnect the wait
	}
	if mcp.IsModernProtocol(s.version) && res.Capabilities.Tools != nil && res.Capabilities.Tools.ListChanged {
		stop, lerr := s.client.ListenAsync(life, mcp.SubscriptionFilter{ToolsListChanged: true}, func(err error) {
			e.log.Debug("subscriptions/listen ended", "err", err)
		})
		if lerr == nil {
			s.listen = stop
		}
	}
	return s, nil
}

// remaining is the time left before ctx's deadline (an hour when it has none).
func remaining(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Millisecond)
	}
	return time.Hour
}

// eitherEra is a Streamable HTTP transport set up for both protocol eras: it keeps the GET stream
// option for the handshake's versions, which the transport skips on 2026-07-28, without it
// keeping the client from trying 2026-07-28 first.
type eitherEra struct{ *transport.StreamableHTTP }

// RequiresLegacyProtocol is false: see eitherEra.
func (eitherEra) RequiresLegacyProtocol() bool { return false }

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
	// Execution says whether the tool runs as a task (tasks: "optional" or "required").
	Execution struct {
		TaskSupport string `json:"taskSupport"`
	} `json:"execution"`
}

var listSeq atomic.Uint64

// maxPages bounds pagination against a server that keeps returning cursors.
const maxPages = 100

// toolList is one whole tools/list: the tools, and the time to live the server gave the list
// (2026-07-28; the first page's, the least of the pages' when they differ), ttlSet false when it
// gave none.
type toolList struct {
	tools  []rawTool
	ttl    time.Duration
	ttlSet bool
}

// listTools lists every tool, following pagination, straight over the session's transport. On
// 2026-07-28 each request carries the protocol metadata (version, identity, capabilities) in its
// _meta and, over HTTP, the standard headers.
func (s *session) listTools(ctx context.Context) (toolList, error) {
	var (
		out    toolList
		cursor string
		seen   = map[string]bool{}
	)
	for page := 0; ; page++ {
		if page == maxPages {
			return toolList{}, fmt.Errorf("listing tools: more than %d pages", maxPages)
		}
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		resp, err := s.send(ctx, mcp.MethodToolsList, params)
		if err != nil {
			return toolList{}, fmt.Errorf("listing tools: %w", err)
		}
		var result struct {
			Tools      []rawTool `json:"tools"`
			NextCursor string    `json:"nextCursor"`
			TTLMs      *int64    `json:"ttlMs"`
		}
		if err := json.Unmarshal(resp, &result); err != nil {
			return toolList{}, fmt.Errorf("listing tools: decoding page %d: %w", page, err)
		}
		out.tools = append(out.tools, result.Tools...)
		if result.TTLMs != nil {
			ttl := time.Duration(max(*result.TTLMs, 0)) * time.Millisecond
			if *result.TTLMs > int64(24*time.Hour/time.Millisecond) {
				ttl = 24 * time.Hour // beyond any cap; keeps the multiplication in range
			}
			if !out.ttlSet || ttl < out.ttl {
				out.ttl, out.ttlSet = ttl, true
			}
		}
		if result.NextCursor == "" {
			return out, nil
		}
		if seen[result.NextCursor] {
			return toolList{}, fmt.Errorf("listing tools: cursor %q repeated", result.NextCursor)
		}
		seen[result.NextCursor] = true
		cursor = result.NextCursor
	}
}

// send sends one request straight over the session's transport and returns its raw result, for
// the answers mcp-go's client would decode into types that lose something (a listing's schemas,
// a tools/call answered with a task). On 2026-07-28 the request carries the protocol metadata
// (version, identity, capabilities) in its _meta, beside any _meta params holds, and, over HTTP,
// the standard headers. A broken transport is a *transport.Error; a JSON-RPC error is the
// server's answer.
func (s *session) send(ctx context.Context, method mcp.MCPMethod, params map[string]any) (json.RawMessage, error) {
	req := transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId(fmt.Sprintf("toolrouter-%d", listSeq.Add(1))),
		Method:  string(method),
		Params:  params,
	}
	if mcp.IsModernProtocol(s.version) {
		meta, _ := params["_meta"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		meta[mcp.MetaKeyProtocolVersion], meta[mcp.MetaKeyClientInfo] = s.version, s.info
		meta[mcp.MetaKeyClientCapabilities] = s.client.GetClientCapabilities()
		params["_meta"] = meta
		encoded, _ := json.Marshal(params)
		req.Header = http.Header{}
		for k, v := range mcp.StandardHeaders(s.version, method, encoded) {
			req.Header.Set(k, v)
		}
	}
	resp, err := s.tr.SendRequest(ctx, req)
	if err != nil {
		return nil, transport.NewError(err)
	}
	if resp.Error != nil {
		return nil, resp.Error.AsError()
	}
	return resp.Result, nil
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
