package mcpserver_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"toolrouter/internal/fakeollama"
	"toolrouter/mcpserver"
)

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// answer is one /mcp exchange: its status, the error code of a refusal and the session it opened.
type answer struct {
	status  int
	code    string
	message string
	session string
}

// do sends one /mcp request with key's credential and, if not "", session's Mcp-Session-Id.
func (k *keyed) do(t *testing.T, method, key, session, body string) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, k.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s /mcp: %v", method, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, session: resp.Header.Get("Mcp-Session-Id")}
	if resp.StatusCode >= 400 {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatalf("%s /mcp: got %d %q, want a JSON error body", method, resp.StatusCode, raw)
		}
		a.code, a.message = e.Error.Code, e.Error.Message
	}
	return a
}

func (k *keyed) keyOf(org string) string {
	if org == "acme" {
		return k.acmeKey
	}
	return k.betaKey
}

// TestSessionCaps: initializes are admitted up to mcp_server.max_sessions_per_identity for each
// identity and mcp_server.max_sessions for all, and one over a cap is a 429 naming it; a DELETE
// frees a place.
func TestSessionCaps(t *testing.T) {
	type open struct {
		org        string
		wantStatus int
		wantCap    string // in the refusal's message
	}
	for _, tc := range []struct {
		name       string
		max, per   int
		opens      []open
		thenDelete bool // DELETE the first session, then open one more for its org
	}{
		{name: "per identity", max: 10, per: 2, opens: []open{
			{org: "acme", wantStatus: http.StatusOK}, {org: "acme", wantStatus: http.StatusOK},
			{org: "acme", wantStatus: http.StatusTooManyRequests, wantCap: "mcp_server.max_sessions_per_identity"},
			{org: "beta", wantStatus: http.StatusOK},
		}},
		{name: "in total", max: 3, per: 2, opens: []open{
			{org: "acme", wantStatus: http.StatusOK}, {org: "acme", wantStatus: http.StatusOK},
			{org: "beta", wantStatus: http.StatusOK},
			{org: "beta", wantStatus: http.StatusTooManyRequests, wantCap: "mcp_server.max_sessions"},
		}},
		{name: "a DELETE frees a place", max: 10, per: 1, thenDelete: true, opens: []open{
			{org: "acme", wantStatus: http.StatusOK},
			{org: "acme", wantStatus: http.StatusTooManyRequests, wantCap: "mcp_server.max_sessions_per_identity"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newKeyedWith(t, fakeollama.New(t), mcpserver.Options{Logger: quiet, MaxSessions: tc.max, MaxSessionsPerIdentity: tc.per})
			var first string
			for i, o := range tc.opens {
				a := k.do(t, http.MethodPost, k.keyOf(o.org), "", initBody)
				if a.status != o.wantStatus {
					t.Fatalf("initialize %d (%s): got %d %s %q, want %d", i, o.org, a.status, a.code, a.message, o.wantStatus)
				}
				if o.wantStatus == http.StatusOK {
					if a.session == "" {
						t.Fatalf("initialize %d (%s): got no Mcp-Session-Id, want one", i, o.org)
					}
					if first == "" {
						first = a.session
					}
					continue
				}
				if a.code != "too_many_sessions" || !strings.Contains(a.message, o.wantCap+")") {
					t.Errorf("initialize %d (%s): got %s %q, want too_many_sessions naming %s", i, o.org, a.code, a.message, o.wantCap)
				}
			}
			if !tc.thenDelete {
				return
			}
			if a := k.do(t, http.MethodDelete, k.keyOf(tc.opens[0].org), first, ""); a.status != http.StatusOK {
				t.Fatalf("DELETE of its own session: got %d %s, want 200", a.status, a.code)
			}
			if a := k.do(t, http.MethodPost, k.keyOf(tc.opens[0].org), "", initBody); a.status != http.StatusOK {
				t.Errorf("initialize after a DELETE: got %d %s %q, want 200", a.status, a.code, a.message)
			}
		})
	}
}

// TestSessionOwner: a session is used and ended only by the identity that opened it; another
// identity's request naming it is a 404 session_not_found, as one naming no open session is.
func TestSessionOwner(t *testing.T) {
	k := newKeyedWith(t, fakeollama.New(t), mcpserver.Options{Logger: quiet})
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	for _, tc := range []struct {
		name       string
		method     string
		org        string
		session    string // "own": the session acme opened
		body       string
		ownDelete  bool // acme DELETEs the session first
		wantStatus int
	}{
		{name: "another identity's DELETE", method: http.MethodDelete, org: "beta", session: "own", wantStatus: http.StatusNotFound},
		{name: "another identity's request", method: http.MethodPost, org: "beta", session: "own", body: list, wantStatus: http.StatusNotFound},
		{name: "a DELETE of no session", method: http.MethodDelete, org: "acme", session: "mcp-session-nothing", wantStatus: http.StatusNotFound},
		{name: "its own request", method: http.MethodPost, org: "acme", session: "own", body: list, wantStatus: http.StatusOK},
		{name: "its own DELETE", method: http.MethodDelete, org: "acme", session: "own", wantStatus: http.StatusOK},
		{name: "a request after its DELETE", method: http.MethodPost, org: "acme", session: "own", body: list, ownDelete: true, wantStatus: http.StatusNotFound},
	} {
		own := k.do(t, http.MethodPost, k.acmeKey, "", initBody)
		if own.status != http.StatusOK || own.session == "" {
			t.Fatalf("initialize: got %d %q, want 200 and a session", own.status, own.session)
		}
		t.Run(tc.name, func(t *testing.T) {
			session := tc.session
			if session == "own" {
				session = own.session
			}
			if tc.ownDelete {
				if a := k.do(t, http.MethodDelete, k.acmeKey, session, ""); a.status != http.StatusOK {
					t.Fatalf("DELETE: got %d, want 200", a.status)
				}
			}
			a := k.do(t, tc.method, k.keyOf(tc.org), session, tc.body)
			if a.status != tc.wantStatus || tc.wantStatus == http.StatusNotFound && a.code != "session_not_found" {
				t.Errorf("got %d %s %q, want %d", a.status, a.code, a.message, tc.wantStatus)
			}
		})
	}
}

// TestSessionIdleTTL: a session nobody uses for mcp_server.session_idle_ttl ends by itself: its
// place is freed and it can no longer be used.
func TestSessionIdleTTL(t *testing.T) {
	k := newKeyedWith(t, fakeollama.New(t), mcpserver.Options{Logger: quiet, MaxSessionsPerIdentity: 1,
		SessionIdleTTL: 50 * time.Millisecond})
	idle := k.do(t, http.MethodPost, k.acmeKey, "", initBody)
	if idle.status != http.StatusOK || idle.session == "" {
		t.Fatalf("initialize: got %d %q, want 200 and a session", idle.status, idle.session)
	}
	// mcp-go's sweeper runs at most once a second. Each try is refused (and touches nothing) until
	// the idle session has been swept.
	deadline := time.Now().Add(10 * time.Second)
	for {
		a := k.do(t, http.MethodPost, k.acmeKey, "", initBody)
		if a.status == http.StatusOK {
			break
		}
		if a.code != "too_many_sessions" {
			t.Fatalf("initialize at the cap: got %d %s, want 429 too_many_sessions", a.status, a.code)
		}
		if time.Now().After(deadline) {
			t.Fatal("the idle session still holds its place 10 s after its TTL of 50 ms")
		}
		time.Sleep(20 * time.Millisecond) // pace the poll; the deadline bounds it
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if a := k.do(t, http.MethodPost, k.acmeKey, idle.session, list); a.status != http.StatusNotFound || a.code != "session_not_found" {
		t.Errorf("a request on the expired session: got %d %s, want 404 session_not_found", a.status, a.code)
	}
}
