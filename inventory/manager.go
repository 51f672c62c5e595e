package inventory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"toolrouter/config"
	"toolrouter/inventory/builtin"
	"toolrouter/schema"
)

// ErrServerDown is returned by CallTool when the server has no live session.
var ErrServerDown = errors.New("server is down")

// ErrUnknownServer is returned by CallTool for a server that is not configured.
var ErrUnknownServer = errors.New("unknown server")

// Options tunes a Manager; the zero value works.
type Options struct {
	Logger *slog.Logger
	// Now is the clock given to the built-in servers (nil: time.Now).
	Now func() time.Time
	// Backoff is the wait before reconnect attempt n (n ≥ 1). Default: 500 ms doubling to 30 s.
	Backoff func(attempt int) time.Duration
	// HealthInterval is how often a live session is pinged; a failed ping restarts it. Default 15 s.
	HealthInterval time.Duration
	// Cache compiles tool schemas; a shared cache lets tests observe it. Default: a new one.
	Cache *schema.Cache
	// InProcess are MCP servers the embedding program serves itself (the benchmark's per-record
	// servers, tests' fault servers). A "builtin" server's name is looked up here before the
	// package builtin's servers.
	InProcess map[string]*server.MCPServer
}

func defaultBackoff(attempt int) time.Duration {
	d := 500 * time.Millisecond
	for i := 1; i < attempt && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}

// Manager owns one supervisor goroutine per enabled server. Each supervisor connects, lists tools,
// watches the session (list_changed notifications, health pings, broken calls) and reconnects with
// backoff; a server that fails affects only its own tools.
type Manager struct {
	opts    Options
	servers map[string]config.Server

	mu       sync.Mutex // guards states, sessions, version, changed
	states   map[string]*Server
	sessions map[string]*session
	version  uint64
	changed  chan struct{}

	signals map[string]*signals // fixed after New
	snap    atomic.Pointer[Snapshot]
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// signals wake a supervisor; both channels have room for one pending signal.
type signals struct {
	refresh chan struct{}      // the server said its tool list changed
	broken  chan brokenSession // a call found a session's transport broken
}

// brokenSession names the session a call found broken, so a late report about a session already
// replaced does not restart its successor.
type brokenSession struct {
	sess *session
	err  error
}

// New builds a Manager for the enabled servers of servers; nothing connects until Start.
func New(servers map[string]config.Server, opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Backoff == nil {
		opts.Backoff = defaultBackoff
	}
	if opts.HealthInterval <= 0 {
		opts.HealthInterval = 15 * time.Second
	}
	if opts.Cache == nil {
		opts.Cache = schema.NewCache()
	}
	m := &Manager{
		opts:     opts,
		servers:  map[string]config.Server{},
		states:   map[string]*Server{},
		sessions: map[string]*session{},
		changed:  make(chan struct{}),
		signals:  map[string]*signals{},
	}
	now := time.Now()
	for name, sc := range servers {
		if !sc.IsEnabled() {
			continue
		}
		if sc.Purpose == "" && sc.Transport == config.TransportBuiltin {
			sc.Purpose = builtin.Purpose(sc.BuiltinName(name))
		}
		m.servers[name] = sc
		m.signals[name] = &signals{refresh: make(chan struct{}, 1), broken: make(chan brokenSession, 1)}
		m.states[name] = &Server{
			Name: name, Purpose: sc.Purpose, Transport: string(sc.Transport), URL: sc.URL, Command: sc.Command,
			Status: StateStarting, Since: now, Tools: []Tool{},
		}
	}
	m.publishLocked()
	return m
}

// Start connects to every server concurrently and returns once each has finished its first attempt
// (up, or down with its error), or when ctx ends. Servers keep reconnecting in the background until
// Close. Start never fails because a server does: that server is reported down.
func (m *Manager) Start(ctx context.Context) {
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m.cancel = cancel
	var first sync.WaitGroup
	for name, sc := range m.servers {
		first.Add(1)
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			m.supervise(life, name, sc, sync.OnceFunc(first.Done))
		}()
	}
	done := make(chan struct{})
	go func() { first.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// Close stops every supervisor and closes every session (stdio subprocesses are stopped).
func (m *Manager) Close() {
	if m.cancel != nil {
		m.cancel()
	}
	m.wg.Wait()
}

// Snapshot returns the current inventory; it is never nil.
func (m *Manager) Snapshot() *Snapshot { return m.snap.Load() }

// Wait blocks until cond holds for the current snapshot or ctx ends.
func (m *Manager) Wait(ctx context.Context, cond func(*Snapshot) bool) (*Snapshot, error) {
	for {
		m.mu.Lock()
		changed := m.changed
		m.mu.Unlock()
		if s := m.Snapshot(); cond(s) {
			return s, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return m.Snapshot(), fmt.Errorf("waiting for inventory: %w", ctx.Err())
		}
	}
}

// CallTool calls one tool with the server's call timeout (or ctx's deadline, if sooner). A result
// with isError is returned as a result, not an error; a broken transport is an error and makes the
// supervisor restart the session.
func (m *Manager) CallTool(ctx context.Context, server, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	sc, ok := m.servers[server]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownServer, server)
	}
	m.mu.Lock()
	sess := m.sessions[server]
	lastErr := m.states[server].Error
	m.mu.Unlock()
	if sess == nil {
		if lastErr != "" {
			return nil, fmt.Errorf("%w: %s: %s", ErrServerDown, server, lastErr)
		}
		return nil, fmt.Errorf("%w: %s", ErrServerDown, server)
	}
	ctx, cancel := context.WithTimeout(ctx, sc.CallTimeout.D())
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := sess.client.CallTool(ctx, req)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			// The server may answer a cancelled call with its own error; the deadline is the cause.
			err = fmt.Errorf("%w (server said: %v)", ctx.Err(), err)
		}
		if isTransportError(err) {
			select {
			case m.signals[server].broken <- brokenSession{sess, err}:
			default:
			}
		}
		return nil, fmt.Errorf("calling %s: %w", Qualify(server, tool), err)
	}
	return res, nil
}

// supervise keeps one server connected until life ends.
func (m *Manager) supervise(life context.Context, name string, sc config.Server, firstDone func()) {
	log := m.opts.Logger.With("server", name)
	sig := m.signals[name]
	for attempt := 0; ; {
		sess, tools, err := m.connect(life, name, sc)
		if life.Err() != nil {
			sess.close()
			return
		}
		if err != nil {
			attempt++
			wait := m.opts.Backoff(attempt)
			log.Warn("server down", "err", err, "retry_in", wait)
			m.setDown(name, err, false)
			firstDone()
			timer := time.NewTimer(wait)
			select {
			case <-life.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
			continue
		}
		attempt = 0
		m.setUp(name, sess, tools)
		log.Info("server up", "tools", len(tools))
		firstDone()
		reason := m.watch(life, name, sc, sess, sig)
		m.mu.Lock()
		delete(m.sessions, name)
		m.mu.Unlock()
		sess.close()
		if life.Err() != nil {
			return
		}
		reason = sess.withStderr(reason)
		log.Warn("server connection lost, restarting", "err", reason)
		m.setDown(name, reason, true)
	}
}

// connect dials and lists tools within the server's connect timeout.
func (m *Manager) connect(life context.Context, name string, sc config.Server) (*session, []Tool, error) {
	ctx, cancel := context.WithTimeout(life, sc.ConnectTimeout.D())
	defer cancel()
	sig := m.signals[name]
	sess, err := dial(ctx, life, name, sc, m.opts, func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			select {
			case sig.refresh <- struct{}{}:
			default:
			}
		}
	})
	if err != nil {
		return nil, nil, err
	}
	tools, err := m.tools(ctx, name, sc, sess)
	if err != nil {
		sess.close()
		return nil, nil, sess.withStderr(err)
	}
	return sess, tools, nil
}

// watch serves a live session until it breaks (returning why) or life ends.
func (m *Manager) watch(life context.Context, name string, sc config.Server, sess *session, sig *signals) error {
	health := time.NewTicker(m.opts.HealthInterval)
	defer health.Stop()
	for {
		select {
		case <-life.Done():
			return life.Err()
		case b := <-sig.broken:
			if b.sess == sess {
				return b.err
			}
		case <-health.C:
			ctx, cancel := context.WithTimeout(life, sc.ConnectTimeout.D())
			//lint:ignore SA1019 ping exists on protocol 2025-11-25, which this client pins (protocolVersion)
			err := sess.client.Ping(ctx)
			cancel()
			if err != nil && life.Err() == nil {
				return fmt.Errorf("health ping: %w", err)
			}
		case <-sig.refresh:
			ctx, cancel := context.WithTimeout(life, sc.ConnectTimeout.D())
			tools, err := m.tools(ctx, name, sc, sess)
			cancel()
			switch {
			case life.Err() != nil:
				return life.Err()
			case err == nil:
				m.setUp(name, sess, tools)
				m.opts.Logger.Info("tools refreshed", "server", name, "tools", len(tools))
			case isTransportError(err):
				return err
			default:
				m.opts.Logger.Warn("refreshing tools failed; keeping the previous list", "server", name, "err", err)
			}
		}
	}
}

// tools lists a server's tools, applies its allow/deny filter and compiles each schema. A schema
// that does not compile makes that one tool unavailable, with the reason.
func (m *Manager) tools(ctx context.Context, name string, sc config.Server, sess *session) ([]Tool, error) {
	raw, err := sess.listTools(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Tool, 0, len(raw))
	seen := map[string]bool{}
	for _, rt := range raw {
		if rt.Name == "" || seen[rt.Name] || !sc.Tools.Permits(rt.Name) {
			continue
		}
		seen[rt.Name] = true
		t := Tool{
			Server: name, Name: rt.Name, Qualified: Qualify(name, rt.Name), Title: rt.Title,
			Description: rt.Description, InputSchema: rt.InputSchema, Parameters: params(rt.InputSchema),
		}
		if len(t.InputSchema) == 0 || string(t.InputSchema) == "null" {
			t.InputSchema = []byte(`{"type":"object"}`)
		}
		compiled, err := m.opts.Cache.Compile(schema.Key{Server: name, Tool: rt.Name}, t.InputSchema)
		if err == nil {
			t.Format, err = schema.OllamaFormat(t.InputSchema)
		}
		if err != nil {
			t.Unavailable = err.Error()
		} else {
			t.Available, t.Schema = true, compiled
		}
		out = append(out, t)
	}
	return out, nil
}

func (m *Manager) setUp(name string, sess *session, tools []Tool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.states[name]
	if st.Status != StateUp {
		st.Since = time.Now()
	}
	st.Status, st.Error, st.Tools = StateUp, "", tools
	m.sessions[name] = sess
	m.publishLocked()
}

func (m *Manager) setDown(name string, err error, restarted bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.states[name]
	if st.Status != StateDown {
		st.Since = time.Now()
	}
	st.Status, st.Error, st.Tools = StateDown, err.Error(), []Tool{}
	if restarted {
		st.Restarts++
	}
	m.publishLocked()
}

// publishLocked builds and publishes a new snapshot and wakes Wait callers. m.mu must be held.
func (m *Manager) publishLocked() {
	m.version++
	servers := make([]Server, 0, len(m.states))
	live := map[schema.Key]bool{}
	for _, st := range m.states {
		s := *st
		s.Tools = append([]Tool(nil), st.Tools...)
		for _, t := range s.Tools {
			live[schema.Key{Server: t.Server, Tool: t.Name}] = true
		}
		servers = append(servers, s)
	}
	m.opts.Cache.Prune(live)
	m.snap.Store(newSnapshot(m.version, servers))
	close(m.changed)
	m.changed = make(chan struct{})
}
