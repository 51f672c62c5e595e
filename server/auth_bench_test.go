package server_test

import (
	"fmt"
	"net"
	"testing"

	"github.com/valyala/fasthttp"

	"toolrouter/auth"
	"toolrouter/inventory"
	"toolrouter/server"
)

// emptyInventory has no servers, so that a GET /v1/inventory costs little beyond the middleware.
type emptyInventory struct{}

func (emptyInventory) Snapshot() *inventory.Snapshot { return &inventory.Snapshot{} }

// BenchmarkAuthMiddleware is the cost of caller authentication and access on the request path:
// GET /v1/inventory through the fiber app's handler (no network), served anonymously with no
// orgs, then with a Host check, an API key among 100 (SHA-256), a caller narrowing the key's team
// to an agent and the agent's policy. The difference is what auth and access add per request.
//
//	go test -run '^$' -bench AuthMiddleware ./server/
func BenchmarkAuthMiddleware(b *testing.B) {
	cfg := auth.Config{}
	for i := range 100 {
		cfg.Keys = append(cfg.Keys, auth.Key{Name: fmt.Sprint("k", i), SHA256: sha(fmt.Sprint("tr_bench-key-number-", i)), Org: "acme", Team: "research"})
	}
	authn, err := auth.New(b.Context(), cfg, auth.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		deps server.Deps
		o    server.Options
		path string
		key  string
	}{
		{"anonymous", server.Deps{Inventory: emptyInventory{}}, server.Options{Logger: quiet}, "/v1/inventory", ""},
		{"api_key", server.Deps{Inventory: emptyInventory{}, Auth: authn, Access: authOrgs(b)},
			server.Options{Logger: quiet, Listen: "127.0.0.1:8090"}, "/v1/inventory?caller=summariser", "tr_bench-key-number-57"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			handler := server.New(tc.deps, tc.o).Handler()
			var req fasthttp.Request
			req.Header.SetMethod("GET")
			req.SetRequestURI(tc.path)
			req.Header.SetHost("127.0.0.1:8090")
			if tc.key != "" {
				req.Header.Set("Authorization", "Bearer "+tc.key)
			}
			var ctx fasthttp.RequestCtx
			remote := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}
			b.ReportAllocs()
			for b.Loop() {
				ctx.Init(&req, remote, nil)
				handler(&ctx)
				if ctx.Response.StatusCode() != 200 {
					b.Fatalf("got %d %s, want 200", ctx.Response.StatusCode(), ctx.Response.Body())
				}
			}
		})
	}
}
