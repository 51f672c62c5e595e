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

	"toolrouter/inventory/builtin"
	"toolrouter/redact"
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
	// RefreshInterval is the least time between the end of one tools/list refresh and the start of
	// the next; list_changed notifications in between make one refresh. Default 1 s.
	RefreshInterval time.Duration
	// StopGrace is each of the three waits when a stdio server is stopped (after closing its
	// input, after SIGTERM, after SIGKILL). Default 2 s.
	StopGrace time.Duration
	// CloseTimeout bounds Close. Default 10 s.
	CloseTimeout time.Duration
	// Cache compiles tool schemas; a shared cache lets tests observe it. Default: a new one.
	Cache *schema.Cache
	// InProcess are MCP servers the embedding program serves itself (the benchmark's per-record
	// servers, tests' fault servers). A "builtin" server's name is looked up here before the
	// package builtin's servers.
	InProcess map[string]*server.MCPServer
	// Safety is what the listings' pins and scans lead to (config safety.*); a zero policy is
	// DefaultChecks.
	Safety Checks
	// Pins keeps the pins (the usage database, so that replicas agree). Default: in memory, for
	// this process only.
	Pins PinStore
}

func defaultBackoff(attempt int) time.Duration {
	d := 500 * time.Millisecond
	for i := 1; i < attempt && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}

// stableUptime is how long a session must last for its loss to count as a one-off: the server is
// reconnected at once after a first loss, while one that keeps failing sooner backs off as a failed
// connect does.
const stableUptime = time.Minute

// Manager owns one supervisor goroutine per enabled server. Each supervisor connects, lists tools,
// watches the session (list_changed notifications, health pings, broken calls, the server's exit)
// and reconnects with backoff; a server that fails affects only its own tools.
type Manager struct {
	opts Options

	reloading sync.Mutex // held by Reload: one at a time

	mu      sync.Mutex // guards entries, states, sessions, version, changed, life, cancel, closed, names
	entries map[string]*entry
	states  map[string]*Server
	// names counts the changes of any server's tool names: a listing scanned at an older count
	// may have missed a reference to another server's tool (see setUp).
	names    uint64
	sessions map[string]*session
	version  uint64
	changed  chan struct{}
	life     context.Context    // the supervisors' parent; set by Start
	cancel   context.CancelFunc // ends life
	closed   bool               // Close was called: Start and Reload start nothing

	snap  atomic.Pointer[Snapshot]
	wg    sync.WaitGroup
	procs procSet // the stdio servers running now
}

// entry is one configured server: its settings, what reports on it, and what wakes its supervisor.
type entry struct {
	name string
	cfg  ServerConfig
	// redact masks the server's credentials (URL, headers, secret env) in everything reported
	// about it; log is the Logger through it, with the server's name.
	redact *redact.Redactor
	log    *slog.Logger

	refresh   chan struct{}      // the server said its tool list changed; room for one pending
	rescan    chan struct{}      // list again for the safety checks (see relist); room for one
	procs     *procSet           // the Manager's running stdio servers
	broken    chan brokenSession // a call found a session's transport broken; room for one
	compiling chan struct{}      // holds a token while a schema compile runs (see compile)

	listChanged atomic.Uint64 // notifications/tools/list_changed received
	refreshes   atomic.Uint64 // tools/list refreshes made because of them
	ttl         atomic.Int64  // the published list's time to live (ns), 0 for none; see watch
	ttlRefresh  atomic.Uint64 // tools/list refreshes made because the list's time to live passed
	// quarantines counts tools entering quarantine, by reason (as reasons orders them).
	quarantines [3]atomic.Uint64
	// warned remembers, per check and tool, the pin last logged (see warnOnce); the supervisor's.
	warned map[string]string

	// legacyOnly is set once the server let the server/discover probe time out: its reconnects
	// use the initialize handshake at once (see dial).
	legacyOnly atomic.Bool

	stop    context.CancelFunc // ends the supervisor; set when it starts, under Manager.mu
	retired atomic.Bool        // Reload removed or replaced the entry: its supervisor drains and stops
}

// brokenSession names the session a call found broken, so a late report about a session already
// replaced does not restart its successor.
type brokenSession struct {
	sess *session
	err  error
}

// New builds a Manager for the enabled servers of servers; nothing connects until Start. A zero
// timeout or bound of a server is DefaultServerConfig's.
func New(servers map[string]ServerConfig, opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Backoff == nil {
		opts.Backoff = defaultBackoff
	}
	if opts.HealthInterval <= 0 {
		opts.HealthInterval = 15 * time.Second
	}
	if opts.RefreshInterval <= 0 {
		opts.RefreshInterval = time.Second
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = 2 * time.Second
	}
	if opts.CloseTimeout <= 0 {
		opts.CloseTimeout = 10 * time.Second
	}
	if opts.Cache == nil {
		opts.Cache = schema.NewCache()
	}
	def := DefaultChecks()
	fill(&opts.Safety.Pin, def.Pin)
	fill(&opts.Safety.Scan, def.Scan)
	if opts.Pins == nil {
		opts.Pins = newMemoryPins()
	}
	m := &Manager{
		opts:     opts,
		entries:  map[string]*entry{},
		states:   map[string]*Server{},
		sessions: map[string]*session{},
		changed:  make(chan struct{}),
	}
	now := time.Now()
	for name, sc := range servers {
		if sc.IsEnabled() {
			m.addLocked(name, effective(name, sc), now)
		}
	}
	m.publishLocked()
	return m
}

// effective is the configuration a server runs with: sc with DefaultServerConfig's value for each
// zero timeout or bound, and a built-in's own purpose when it has none. Reload compares it.
func effective(name string, sc ServerConfig) ServerConfig {
	if sc.Purpose == "" && sc.Transport == TransportBuiltin {
		sc.Purpose = builtin.Purpose(sc.BuiltinName(name))
	}
	def := DefaultServerConfig()
	fill(&sc.ConnectTimeout, def.ConnectTimeout)
	fill(&sc.CallTimeout, def.CallTimeout)
	fill(&sc.MaxSchemaBytes, def.MaxSchemaBytes)
	fill(&sc.MaxSchemaDepth, def.MaxSchemaDepth)
	fill(&sc.MaxMessageBytes, def.MaxMessageBytes)
	fill(&sc.ListTTLMin, def.ListTTLMin)
	fill(&sc.ListTTLMax, def.ListTTLMax)
	// Examples feed retrieval, not the session: a change to them reconnects nothing.
	sc.Examples = nil
	return sc
}

// addLocked makes the entry and the starting state of a server whose configuration is sc
// (effective). m.mu must be held, or m not yet shared.
func (m *Manager) addLocked(name string, sc ServerConfig, now time.Time) *entry {
	red := redact.ForServer(sc.URL, sc.Headers, sc.Env, sc.Secrets...)
	e := &entry{
		name: name, cfg: sc, redact: red, procs: &m.procs,
		log:     slog.New(red.Handler(m.opts.Logger.Handler())).With("server", name),
		refresh: make(chan struct{}, 1), broken: make(chan brokenSession, 1), compiling: make(chan struct{}, 1),
		rescan: make(chan struct{}, 1), warned: map[string]string{},
	}
	m.entries[name] = e
	display := sc.DisplayName
	if display == "" {
		display = name
	}
	m.states[name] = &Server{
		Name: name, DisplayName: display, Purpose: sc.Purpose, Transport: string(sc.Transport), URL: redact.URL(sc.URL), Command: sc.Command,
		Pinned: sc.Pinned, Status: StateStarting, Since: now, Tools: []Tool{},
	}
	if sc.Transport == TransportBuiltin {
		m.states[name].Builtin = sc.BuiltinName(name)
	}
	return e
}

func fill[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// Start connects to every server concurrently and returns once each has finished its first attempt
// (up, or down with its error), or when ctx ends. A first attempt lasts at most the server's
// connect_timeout, schema compiles included. Servers keep reconnecting in the background until
// Close. Start never fails because a server does: that server is reported down.
func (m *Manager) Start(ctx context.Context) {
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var first sync.WaitGroup
	m.mu.Lock()
	if m.closed || m.life != nil {
		m.mu.Unlock()
		cancel()
		return
	}
	m.life, m.cancel = life, cancel
	for _, e := range m.entries {
		m.launchLocked(e, &first)
	}
	m.mu.Unlock()
	waitFirst(ctx, &first)
}

// launchLocked starts e's supervisor under m.life (when Start has run); first is told when its
// first attempt ends. m.mu must be held.
func (m *Manager) launchLocked(e *entry, first *sync.WaitGroup) {
	if m.life == nil || m.closed {
		return
	}
	life, stop := context.WithCancel(m.life)
	e.stop = stop
	m.wg.Add(1)
	first.Add(1)
	go func() {
		defer m.wg.Done()
		firstDone := sync.OnceFunc(first.Done)
		defer firstDone() // a supervisor stopped during its first attempt
		m.supervise(life, e, firstDone)
	}()
}

// waitFirst waits for first or the end of ctx.
func waitFirst(ctx context.Context, first *sync.WaitGroup) {
	done := make(chan struct{})
	go func() { first.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// Close stops every supervisor and closes every session; stdio servers are stopped with their
// process groups. It returns within Options.CloseTimeout whatever the servers do.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	cancel := m.cancel
	m.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	t := time.NewTimer(m.opts.CloseTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		m.opts.Logger.Warn("MCP servers did not stop in time; leaving them", "timeout_ms", m.opts.CloseTimeout.Milliseconds())
	}
}

// Shutdown is Close within ctx: when ctx ends before the servers have stopped, every stdio
// server's process group is killed at once (SIGKILL), so that nothing outlives the process, and
// Shutdown returns.
func (m *Manager) Shutdown(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		m.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		m.procs.kill()
		m.opts.Logger.Warn("MCP servers killed: the shutdown ran out of time")
	}
}

// Snapshot returns the current inventory; it is never nil.
func (m *Manager) Snapshot() *Snapshot { return m.snap.Load() }

// Changed returns a channel that is closed when a snapshot newer than the current one is
// published. Each call returns the channel of the current version, so a watcher loops: take the
// channel, read Snapshot, wait on the channel. It never blocks the publisher and holds nothing
// per watcher.
func (m *Manager) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

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
// supervisor restart the session. Errors carry no credential of the server's. A tool that runs as
// a task is polled until it ends within that time, and cancelled when it passes; reports on the
// call reach the function WithProgress put in ctx.
func (m *Manager) CallTool(ctx context.Context, server, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	m.mu.Lock()
	e, ok := m.entries[server]
	if !ok {
		m.mu.Unlock()
		return nil, fmt.Errorf("%w %q", ErrUnknownServer, server)
	}
	if m.states[server].quarantined(tool) {
		m.mu.Unlock()
		return nil, fmt.Errorf("%w: %s (approve it with POST /v1/admin/tools/approve)", ErrQuarantined, Qualify(server, tool))
	}
	sess := m.sessions[server]
	lastErr := m.states[server].Error
	asTask := false
	for _, t := range m.states[server].Tools {
		if t.Name == tool {
			asTask = t.TaskSupport == string(mcp.TaskSupportRequired) || (t.TaskSupport == string(mcp.TaskSupportOptional) && sess != nil && sess.tasks)
		}
	}
	if sess != nil {
		// Counted while the session is still listed: a session Reload retires waits for the calls
		// it has (drain) before it closes.
		sess.calls.Add(1)
	}
	m.mu.Unlock()
	if sess != nil {
		defer sess.calls.Done()
	}
	if sess == nil {
		if lastErr != "" {
			return nil, fmt.Errorf("%w: %s: %s", ErrServerDown, server, lastErr)
		}
		return nil, fmt.Errorf("%w: %s", ErrServerDown, server)
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.CallTimeout.D())
	defer cancel()
	sctx, scancel := sess.bound(ctx)
	defer scancel()
	res, err := sess.callTool(sctx, tool, args, asTask)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			// The server may answer a cancelled call with its own error; the deadline is the cause.
			err = fmt.Errorf("%w (server said: %v)", ctx.Err(), err)
		}
		if isTransportError(err) {
			select {
			case e.broken <- brokenSession{sess, err}:
			default:
			}
		}
		return nil, e.redact.Error(fmt.Errorf("calling %s: %w", Qualify(server, tool), sess.cause(err)))
	}
	return res, nil
}

// supervise keeps one server connected until life ends.
func (m *Manager) supervise(life context.Context, e *entry, firstDone func()) {
	// failures counts failed connects and lost sessions since the server was last up for
	// stableUptime; each waits Backoff(failures) before the next connect, except the first lost
	// session, which reconnects at once.
	failures := 0
	var wait time.Duration
	for {
		if wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-life.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
		}
		sess, l, err := m.connect(life, e)
		if life.Err() != nil {
			sess.close()
			return
		}
		if err != nil {
			failures++
			wait = m.opts.Backoff(failures)
			e.log.Warn("server down", "err", err, "retry_in_ms", wait.Milliseconds())
			m.setDown(e, err, false)
			firstDone()
			continue
		}
		m.setUp(e, sess, l)
		e.log.Info("server up", "tools", len(l.tools), "excluded", len(l.excluded), "quarantined", len(l.quarantined))
		firstDone()
		upAt := time.Now()
		reason := m.watch(life, e, sess)
		m.mu.Lock()
		if m.sessions[e.name] == sess {
			delete(m.sessions, e.name)
		}
		m.mu.Unlock()
		if life.Err() != nil {
			if e.retired.Load() {
				m.drain(e, sess)
			}
			sess.close()
			return
		}
		sess.close()
		reason = sess.withStderr(sess.cause(reason))
		if time.Since(upAt) >= stableUptime {
			failures = 0
		}
		if failures++; failures == 1 {
			wait = 0
		} else {
			wait = m.opts.Backoff(failures)
		}
		e.log.Warn("server connection lost, restarting", "err", reason, "retry_in_ms", wait.Milliseconds())
		m.setDown(e, reason, true)
	}
}

// connect dials and lists tools within the server's connect timeout.
func (m *Manager) connect(life context.Context, e *entry) (*session, listing, error) {
	ctx, cancel := context.WithTimeout(life, e.cfg.ConnectTimeout.D())
	defer cancel()
	sess, err := dial(ctx, life, e, m.opts, func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			e.listChanged.Add(1)
			select {
			case e.refresh <- struct{}{}:
			default: // one is pending already; the refresh it makes covers this one
			}
		}
	})
	if err != nil {
		return nil, listing{}, err
	}
	l, err := m.tools(ctx, e, sess)
	if err != nil {
		sess.close()
		return nil, listing{}, sess.withStderr(sess.cause(err))
	}
	return sess, l, nil
}

// watch serves a live session until it breaks (returning why) or life ends. list_changed
// notifications are coalesced: one refresh runs at a time, at least RefreshInterval after the end
// of the previous one, and every notification that arrives meanwhile joins the one pending
// refresh. A relist (e.rescan) joins them the same way; only refreshes a notification asked for
// count in Refreshes. While the server has quarantined tools, each health tick lists it again, so
// that an approval made on another replica, or a pin store back up, takes effect. A list with a
// time to live (2026-07-28) is listed again when it passes, counted in TTLRefreshes.
func (m *Manager) watch(life context.Context, e *entry, sess *session) error {
	health := time.NewTicker(m.opts.HealthInterval)
	defer health.Stop()
	var (
		last    time.Time        // when the previous refresh ended
		pending *time.Timer      // the pending refresh, if any
		due     <-chan time.Time // pending's channel, nil when none
		counted bool             // a list_changed notification asked for the pending refresh
	)
	var (
		expire  *time.Timer      // the list's time to live, when it has one
		expired <-chan time.Time // expire's channel, nil when none
	)
	// arm starts the published list's time to live over: after any listing.
	arm := func() {
		if expire != nil {
			expire.Stop()
		}
		expire, expired = nil, nil
		if ttl := time.Duration(e.ttl.Load()); ttl > 0 {
			expire = time.NewTimer(ttl)
			expired = expire.C
		}
	}
	arm()
	defer func() {
		if pending != nil {
			pending.Stop()
		}
		if expire != nil {
			expire.Stop()
		}
	}()
	// asked refreshes now, or joins or schedules the pending refresh.
	asked := func() error {
		if due != nil {
			return nil
		}
		if wait := m.opts.RefreshInterval - time.Since(last); wait > 0 {
			pending = time.NewTimer(wait)
			due = pending.C
			return nil
		}
		if err := m.refresh(life, e, sess, counted); err != nil {
			return err
		}
		counted, last = false, time.Now()
		arm()
		return nil
	}
	for {
		select {
		case <-life.Done():
			return life.Err()
		case <-sess.dead:
			return sess.failure()
		case b := <-e.broken:
			if b.sess == sess {
				return b.err
			}
		case <-health.C:
			ctx, cancel := context.WithTimeout(life, e.cfg.ConnectTimeout.D())
			//lint:ignore SA1019 ping exists on protocol 2025-11-25, which this client pins (protocolVersion)
			err := sess.client.Ping(ctx)
			cancel()
			if err != nil && life.Err() == nil {
				return fmt.Errorf("health ping: %w", err)
			}
			if m.holds(e) {
				e.relist()
			}
		case <-e.refresh:
			counted = true
			if err := asked(); err != nil {
				return err
			}
		case <-e.rescan:
			if err := asked(); err != nil {
				return err
			}
		case <-due:
			pending, due = nil, nil
			if err := m.refresh(life, e, sess, counted); err != nil {
				return err
			}
			counted, last = false, time.Now()
			arm()
		case <-expired:
			expire, expired = nil, nil
			e.ttlRefresh.Add(1)
			if err := m.refresh(life, e, sess, false); err != nil {
				return err
			}
			last = time.Now()
			arm()
		}
	}
}

// refresh lists the tools again after list_changed (counted) or a relist. It returns an error only
// when the session is broken; a failed listing on a working session keeps the previous list.
func (m *Manager) refresh(life context.Context, e *entry, sess *session, counted bool) error {
	if counted {
		e.refreshes.Add(1)
	}
	ctx, cancel := context.WithTimeout(life, e.cfg.ConnectTimeout.D())
	l, err := m.tools(ctx, e, sess)
	cancel()
	switch {
	case life.Err() != nil:
		return life.Err()
	case err == nil:
		if !counted && m.unchanged(e, sess, l) {
			return nil // a relist that found what is published: no new version for the router to rebuild
		}
		m.setUp(e, sess, l)
		level := slog.LevelInfo
		if !counted {
			level = slog.LevelDebug // relists repeat while a tool is quarantined
		}
		e.log.Log(life, level, "tools refreshed", "tools", len(l.tools), "excluded", len(l.excluded), "quarantined", len(l.quarantined))
	case isTransportError(err) || sess.failure() != nil:
		return err
	default:
		e.log.Warn("refreshing tools failed; keeping the previous list", "err", err)
		m.mu.Lock()
		m.publishLocked() // the counters moved
		m.mu.Unlock()
	}
	return nil
}

func (m *Manager) setUp(e *entry, sess *session, l listing) {
	for i := range l.tools {
		l.tools[i].Unavailable = e.redact.String(l.tools[i].Unavailable)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries[e.name] != e {
		return // retired by Reload: its supervisor is stopping and closes sess
	}
	st := m.states[e.name]
	if st.Status != StateUp {
		st.Since = time.Now()
	}
	before := st.names()
	st.Status, st.Error, st.Tools, st.Excluded = StateUp, "", l.tools, l.excluded
	st.ProtocolVersion, st.ListTTLMS = l.version, l.ttl.Milliseconds()
	e.ttl.Store(int64(l.ttl))
	st.Findings, st.PinChanged, st.Quarantined = l.findings, l.pinChanged, l.quarantined
	m.sessions[e.name] = sess
	if m.opts.Safety.Scan != ScanOff {
		if l.names != m.names {
			e.relist() // scanned before another server's names changed: scan again with them
		}
		if len(newNames(before, st.names())) > 0 {
			m.names++
			// The other servers whose texts name this server's tools ("server.tool") list again.
			// The texts are read off the lock, on a goroutine of their own: with many servers
			// that is much text, and nothing else should wait for it.
			var others []*entry
			var states []Server
			for name, other := range m.entries {
				if name != e.name && m.sessions[name] != nil {
					others, states = append(others, other), append(states, *m.states[name])
				}
			}
			go func() {
				for i, other := range others {
					if states[i].mentions(e.name) {
						other.relist()
					}
				}
			}()
		}
	}
	m.publishLocked()
}

// holds reports whether the server holds tools back.
func (m *Manager) holds(e *entry) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.entries[e.name] == e && len(m.states[e.name].Quarantined) > 0
}

func (m *Manager) setDown(e *entry, err error, restarted bool) {
	msg := e.redact.String(err.Error())
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries[e.name] != e {
		return // retired by Reload
	}
	st := m.states[e.name]
	if st.Status != StateDown {
		st.Since = time.Now()
	}
	st.Status, st.Error, st.LastError, st.Tools, st.Excluded = StateDown, msg, msg, []Tool{}, nil
	st.ProtocolVersion, st.ListTTLMS = "", 0
	st.Findings, st.PinChanged, st.Quarantined = nil, nil, nil
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
	for name, st := range m.states {
		s := *st
		s.Tools = append([]Tool{}, st.Tools...)
		s.Excluded = append([]Excluded(nil), st.Excluded...)
		s.Findings = append([]Finding(nil), st.Findings...)
		s.PinChanged = append([]PinChange(nil), st.PinChanged...)
		s.Quarantined = append([]Quarantined(nil), st.Quarantined...)
		e := m.entries[name]
		s.ListChanged, s.Refreshes, s.TTLRefreshes = e.listChanged.Load(), e.refreshes.Load(), e.ttlRefresh.Load()
		s.Quarantines = QuarantineCounts{PinChanged: e.quarantines[0].Load(), PinUnverified: e.quarantines[1].Load(), Findings: e.quarantines[2].Load()}
		for _, t := range s.Tools {
			live[schema.Key{Server: t.Server, Tool: t.Name}] = true
			live[schema.Key{Server: t.Server, Tool: t.Name, Output: true}] = true
		}
		servers = append(servers, s)
	}
	m.opts.Cache.Prune(live)
	m.snap.Store(newSnapshot(m.version, servers))
	close(m.changed)
	m.changed = make(chan struct{})
}
