package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	mcpgo "github.com/mark3labs/mcp-go/server"

	"toolrouter/access"
	"toolrouter/answer"
	"toolrouter/auth"
)

// sessionPrefix starts every session ID this server mints, as mcp-go's own do.
const sessionPrefix = "mcp-session-"

// sessions is who owns each /mcp session (the Mcp-Session-Id of the streamable HTTP transport
// before protocol version 2026-07-28) and how many each identity has open, within the caps. It is
// mcp-go's session ID manager, so each way a session ends (a DELETE, the idle sweeper,
// CloseSessions) frees its place: mcp-go terminates the session through it.
type sessions struct {
	max, perIdentity int

	mu    sync.Mutex        // guards owner, count and open
	owner map[string]string // session ID -> the identity that opened it (access.Identity.String)
	count map[string]int    // identity -> its sessions open or being opened
	open  int               // sessions open or being opened, all identities together
}

func newSessions(max, perIdentity int) *sessions {
	return &sessions{max: max, perIdentity: perIdentity, owner: map[string]string{}, count: map[string]int{}}
}

// reservation is a place taken by an initialize before mcp-go mints its session; it is mcp-go's
// session ID manager for that request, so the session minted is bound to the place.
type reservation struct {
	*sessions
	identity string
	session  string // the session minted for it; "" until then (guarded by sessions.mu)
}

type reservationKey struct{}

// admit takes a place for a session of identity, or refuses it at a cap (answer.ErrTooManySessions).
func (s *sessions) admit(identity string) (*reservation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.count[identity] >= s.perIdentity:
		return nil, fmt.Errorf("%w: identity %q already has %d open (mcp_server.max_sessions_per_identity); end one with DELETE /mcp or let one idle out (mcp_server.session_idle_ttl)",
			answer.ErrTooManySessions, identity, s.perIdentity)
	case s.open >= s.max:
		return nil, fmt.Errorf("%w: the server already has %d open (mcp_server.max_sessions); retry once one has ended or idled out (mcp_server.session_idle_ttl)",
			answer.ErrTooManySessions, s.max)
	}
	s.count[identity]++
	s.open++
	return &reservation{sessions: s, identity: identity}, nil
}

// settle frees the place of a reservation no session was minted for (the initialize failed
// before it, or opened none).
func (r *reservation) settle() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.session == "" {
		r.releaseLocked(r.identity)
	}
}

// Generate mints the reservation's session and binds it to the identity.
func (r *reservation) Generate() string {
	id := sessionPrefix + rand.Text()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.session != "" {
		r.count[r.identity]++ // a second session for one request: it takes a place of its own
		r.open++
	}
	r.session = id
	r.owner[id] = r.identity
	return id
}

// ownerOf is the identity that opened session; false when no such session is open.
func (s *sessions) ownerOf(session string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.owner[session]
	return id, ok
}

func (s *sessions) releaseLocked(identity string) {
	s.open--
	if s.count[identity]--; s.count[identity] <= 0 {
		delete(s.count, identity)
	}
}

// ResolveSessionIdManager is the reservation of an initialize's request, else s (r is nil for
// mcp-go's idle sweeper).
func (s *sessions) ResolveSessionIdManager(r *http.Request) mcpgo.SessionIdManager {
	if r != nil {
		if res, ok := r.Context().Value(reservationKey{}).(*reservation); ok {
			return res
		}
	}
	return s
}

// Generate mints the ID of a session that holds no place: a GET stream opened without a
// session, which lives only as long as its connection.
func (s *sessions) Generate() string { return sessionPrefix + rand.Text() }

// Validate reports an error for a session that is not open: never opened or ended.
func (s *sessions) Validate(session string) (bool, error) {
	if _, ok := s.ownerOf(session); !ok {
		return false, fmt.Errorf("%w %q", answer.ErrUnknownSession, session)
	}
	return false, nil
}

// Terminate ends session and frees its place; ending one that is not open does nothing.
func (s *sessions) Terminate(session string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.owner[session]; ok {
		delete(s.owner, session)
		s.releaseLocked(id)
	}
	return false, nil
}

// sessionGate is the /mcp handler in front of mcp-go's: it admits each initialize within the
// caps, and lets a request name a session (Mcp-Session-Id) only if its own identity opened it, so
// that one identity can neither use nor DELETE another's session. A refusal is answered as the
// HTTP API answers its errors (writeProblem): 429 too_many_sessions at a cap, 404
// session_not_found for a session that is not open or not the caller's.
type sessionGate struct {
	next     http.Handler
	sessions *sessions
	srv      *Server
}

func (g *sessionGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := g.serve(w, r); err != nil {
		writeProblem(w, answer.Classify(err, g.srv.o.Redactor, g.srv.o.Logger), g.srv.o.Logger)
	}
}

// writeProblem answers p on w as the HTTP API answers its errors: its status, headers and
// {"error":{"code","message"}} body.
func writeProblem(w http.ResponseWriter, p *answer.Problem, log *slog.Logger) {
	if p.Challenge != "" {
		w.Header().Set("WWW-Authenticate", p.Challenge)
	}
	if p.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(p.RetryAfter))
	}
	b, err := json.Marshal(p.Body())
	if err != nil {
		log.Error("encoding an error", "err", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(p.Status)
	_, _ = w.Write(b)
}

// serve runs the request through mcp-go, or returns why it is refused.
func (g *sessionGate) serve(w http.ResponseWriter, r *http.Request) error {
	id, ok := access.IdentityFrom(r.Context())
	if !ok {
		return fmt.Errorf("%w: the request has no identity", auth.ErrForbidden)
	}
	who := id.String()
	initialize := false
	if r.Method == http.MethodPost && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return fmt.Errorf("reading the MCP request: %w", err)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		initialize = isInitialize(body)
	}
	if session := r.Header.Get(mcpgo.HeaderKeySessionID); session != "" && !initialize {
		if owner, ok := g.sessions.ownerOf(session); !ok || owner != who {
			return fmt.Errorf("%w: it ended, or was not opened by this identity; initialize a new session", answer.ErrUnknownSession)
		}
	}
	if initialize {
		res, err := g.sessions.admit(who)
		if err != nil {
			return err
		}
		defer res.settle()
		r = r.WithContext(context.WithValue(r.Context(), reservationKey{}, res))
	}
	g.next.ServeHTTP(w, r)
	return nil
}

// isInitialize reports whether a POST body is an initialize request, which opens a session.
func isInitialize(body []byte) bool {
	var msg struct {
		Method mcp.MCPMethod `json:"method"`
	}
	return json.Unmarshal(body, &msg) == nil && msg.Method == mcp.MethodInitialize
}
