package inventory_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"toolrouter/config"
	"toolrouter/inventory"
)

// eraServer serves srv over Streamable HTTP as a server that speaks only the given protocol
// versions: without 2026-07-28 it answers server/discover "method not found", as servers before
// it do, and picks its own version in the initialize handshake (the newest it speaks, at most the
// client's); without any handshake version it refuses initialize.
func eraServer(t *testing.T, srv *server.MCPServer, versions ...string) string {
	t.Helper()
	var opts []server.StreamableHTTPOption
	modern := slices.Contains(versions, mcp.ProtocolVersion20260728)
	if modern {
		opts = append(opts, server.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20260728))
	}
	h := server.NewStreamableHTTPServer(srv, opts...)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var msg map[string]any
		_ = json.Unmarshal(body, &msg)
		refuse := func() {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg["id"],
				"error": map[string]any{"code": mcp.METHOD_NOT_FOUND, "message": "Method not found"}})
		}
		switch msg["method"] {
		case string(mcp.MethodServerDiscover):
			if !modern {
				refuse()
				return
			}
		case string(mcp.MethodInitialize):
			params, _ := msg["params"].(map[string]any)
			asked, _ := params["protocolVersion"].(string)
			picked := ""
			for _, v := range versions {
				if !mcp.IsModernProtocol(v) && v <= asked && v > picked {
					picked = v
				}
			}
			if picked == "" {
				refuse()
				return
			}
			params["protocolVersion"] = picked
			body, _ = json.Marshal(msg)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

func echoServer(opts ...server.ServerOption) *server.MCPServer {
	srv := server.NewMCPServer("era", "1.0.0", opts...)
	srv.AddTool(mcp.NewTool("echo", mcp.WithString("message", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.GetString("message", "")), nil
		})
	return srv
}

// TestServersOfEveryProtocolVersion: toolrouter connects to a server that speaks only 2026-07-28,
// only 2024-11-05, and those between, lists and calls their tools, and says in the inventory which
// version each negotiated.
func TestServersOfEveryProtocolVersion(t *testing.T) {
	for _, tc := range []struct {
		name     string
		versions []string
		want     string
	}{
		{"2026-07-28 only", []string{mcp.ProtocolVersion20260728}, mcp.ProtocolVersion20260728},
		{"2025-11-25 only", []string{mcp.ProtocolVersion20251125}, mcp.ProtocolVersion20251125},
		{"2025-06-18 only", []string{mcp.ProtocolVersion20250618}, mcp.ProtocolVersion20250618},
		{"2025-03-26 only", []string{mcp.ProtocolVersion20250326}, mcp.ProtocolVersion20250326},
		{"2024-11-05 only", []string{mcp.ProtocolVersion20241105}, mcp.ProtocolVersion20241105},
		{"every version", mcp.ValidProtocolVersions, mcp.ProtocolVersion20260728},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := eraServer(t, echoServer(), tc.versions...)
			sc := timeouts(config.Server{Transport: config.TransportStreamableHTTP, URL: url})
			m := start(t, map[string]config.Server{"era": sc}, inventory.Options{})
			snap := wait(t, m, "era up", func(s *inventory.Snapshot) bool { return s.Servers[0].Status != inventory.StateStarting })
			st := snap.Servers[0]
			if st.Status != inventory.StateUp || st.ProtocolVersion != tc.want {
				t.Fatalf("got %s (%s) on %q, want up on %s", st.Status, st.Error, st.ProtocolVersion, tc.want)
			}
			b, _ := json.Marshal(snap.Export())
			if !bytes.Contains(b, []byte(`"protocol_version":"`+tc.want+`"`)) {
				t.Errorf("the export lacks the negotiated version: %s", b)
			}
			res, err := m.CallTool(context.Background(), "era", "echo", map[string]any{"message": "hi " + tc.want})
			if err != nil || len(res.Content) != 1 || res.Content[0].(mcp.TextContent).Text != "hi "+tc.want {
				t.Fatalf("got %+v, %v; want the echo", res, err)
			}
		})
	}
}

// TestListTimeToLive: a 2026-07-28 server's list time to live is honoured within
// list_ttl_min and list_ttl_max: a tool the server adds without any notification appears once it
// passes; a server that gives none is listed again only when it says its list changed.
func TestListTimeToLive(t *testing.T) {
	for _, tc := range []struct {
		name     string
		versions []string
		ttlMs    int64
		min, max time.Duration
		want     int64 // list_ttl_ms; 0: none
	}{
		{"ttl honoured", []string{mcp.ProtocolVersion20260728}, 40, time.Millisecond, time.Hour, 40},
		{"zero raised to the floor", []string{mcp.ProtocolVersion20260728}, 0, 30 * time.Millisecond, time.Hour, 30},
		{"long cut to the cap", []string{mcp.ProtocolVersion20260728}, 3_600_000, time.Millisecond, 50 * time.Millisecond, 50},
		{"handshake version gives none", []string{mcp.ProtocolVersion20250618}, 40, time.Millisecond, time.Hour, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// No list_changed: the server never says its list changed.
			srv := echoServer(server.WithToolCapabilities(false), server.WithCacheHints(tc.ttlMs, mcp.CacheScopePrivate))
			sc := timeouts(config.Server{Transport: config.TransportStreamableHTTP, URL: eraServer(t, srv, tc.versions...)})
			sc.ListTTLMin, sc.ListTTLMax = config.Duration(tc.min), config.Duration(tc.max)
			m := start(t, map[string]config.Server{"era": sc}, inventory.Options{})
			snap := wait(t, m, "era up", func(s *inventory.Snapshot) bool { return s.Servers[0].Status == inventory.StateUp })
			if got := snap.Servers[0].ListTTLMS; got != tc.want {
				t.Fatalf("got list_ttl_ms %d, want %d", got, tc.want)
			}
			srv.AddTool(mcp.NewTool("later"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText("ok"), nil
			})
			if tc.want == 0 {
				// Nothing to wait for: the health ping's relist runs only for quarantined tools.
				if _, ok := m.Snapshot().Tool("era.later"); ok || m.Snapshot().Servers[0].TTLRefreshes != 0 {
					t.Fatalf("a list without a time to live was listed again")
				}
				return
			}
			snap = wait(t, m, "the new tool", func(s *inventory.Snapshot) bool { _, ok := s.Tool("era.later"); return ok })
			if snap.Servers[0].TTLRefreshes == 0 || snap.Servers[0].Refreshes != 0 {
				t.Errorf("got ttl_refreshes %d refreshes %d, want the time to live to have caused the listing",
					snap.Servers[0].TTLRefreshes, snap.Servers[0].Refreshes)
			}
		})
	}
}

// TestListChangedOnEveryEra: a server's notifications/tools/list_changed reaches the inventory on
// the handshake's versions (the GET stream) and on 2026-07-28 (subscriptions/listen).
func TestListChangedOnEveryEra(t *testing.T) {
	for _, v := range []string{mcp.ProtocolVersion20260728, mcp.ProtocolVersion20251125, mcp.ProtocolVersion20250618} {
		t.Run(v, func(t *testing.T) {
			srv := echoServer(server.WithToolCapabilities(true), server.WithCacheHints(3_600_000, mcp.CacheScopePrivate))
			sc := timeouts(config.Server{Transport: config.TransportStreamableHTTP, URL: eraServer(t, srv, v)})
			m := start(t, map[string]config.Server{"era": sc}, inventory.Options{RefreshInterval: time.Millisecond})
			wait(t, m, "era up", func(s *inventory.Snapshot) bool { return s.Servers[0].Status == inventory.StateUp })
			// The listener may not be connected yet when the tool is added: add tools until one is heard.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			for i := 0; ; i++ {
				srv.AddTool(mcp.NewTool("later"+string(rune('a'+i%26))), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return mcp.NewToolResultText("ok"), nil
				})
				tick, stop := context.WithTimeout(ctx, 200*time.Millisecond)
				snap, err := m.Wait(tick, func(s *inventory.Snapshot) bool { return s.Servers[0].Refreshes > 0 })
				stop()
				if err == nil {
					if snap.Servers[0].TTLRefreshes != 0 || snap.Servers[0].ProtocolVersion != v {
						t.Errorf("got %+v, want a refresh by notification on %s", snap.Servers[0], v)
					}
					return
				}
				if ctx.Err() != nil {
					t.Fatalf("no list_changed was heard on %s", v)
				}
			}
		})
	}
}

// TestServerIgnoringDiscover: a server that never answers server/discover is reached through the
// handshake within its connect timeout, and its reconnects skip the probe.
func TestServerIgnoringDiscover(t *testing.T) {
	var (
		mu        sync.Mutex
		discovers int
		pinged    bool
	)
	srv := echoServer()
	h := server.NewStreamableHTTPServer(srv)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var msg map[string]any
		_ = json.Unmarshal(body, &msg)
		switch msg["method"] {
		case string(mcp.MethodServerDiscover):
			mu.Lock()
			discovers++
			mu.Unlock()
			<-r.Context().Done() // never answered
			return
		case string(mcp.MethodPing):
			mu.Lock()
			first := !pinged
			pinged = true
			mu.Unlock()
			if first { // fail the first health ping: the session restarts
				http.Error(w, "gone", http.StatusInternalServerError)
				return
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	sc := config.Server{Transport: config.TransportStreamableHTTP, URL: ts.URL,
		ConnectTimeout: config.Duration(2 * time.Second), CallTimeout: config.Duration(5 * time.Second)}
	m := start(t, map[string]config.Server{"old": sc}, inventory.Options{HealthInterval: 20 * time.Millisecond})
	snap := wait(t, m, "restarted and up", func(s *inventory.Snapshot) bool {
		return s.Servers[0].Status == inventory.StateUp && s.Servers[0].Restarts >= 1
	})
	if v := snap.Servers[0].ProtocolVersion; v != mcp.ProtocolVersion20251125 {
		t.Errorf("got %q, want the handshake's 2025-11-25", v)
	}
	mu.Lock()
	defer mu.Unlock()
	if discovers != 1 {
		t.Errorf("server/discover was sent %d times, want once: the reconnect skips it", discovers)
	}
}
