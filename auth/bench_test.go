package auth

import (
	"fmt"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"toolrouter/access"
)

// BenchmarkAuthenticate is the cost of authenticating one request, and of the whole per-request
// path: credential, caller, policy and one tool check.
func BenchmarkAuthenticate(b *testing.B) {
	cfg := Config{}
	for i := range 100 {
		cfg.Keys = append(cfg.Keys, Key{Name: fmt.Sprint("k", i), SHA256: sha(fmt.Sprint("tr_key-number-", i)), Org: "acme", Team: "research"})
	}
	keys, err := New(b.Context(), cfg, Options{})
	if err != nil {
		b.Fatal(err)
	}
	h, err := access.New(access.Orgs{"acme": {Allow: []string{"*"}, Teams: map[string]access.Team{
		"research": {Allow: []string{"calculator.*", "clock"}, Agents: map[string]access.Agent{"summariser": {Allow: []string{"calculator.*"}}}},
	}}})
	if err != nil {
		b.Fatal(err)
	}
	rsaKey, ecKey := newRSA(b, "rsa"), newEC(b, "ec")
	is := newIssuer(b, rsaKey, ecKey)
	clk := newClock()
	cached := newJWT(b, is, is.srv.URL, clk, Options{})
	uncached := newJWT(b, is, is.srv.URL, clk, Options{TokenCacheTTL: -1})
	sub := jwt.MapClaims{"sub": "summariser"}
	rs256, es256 := rsaKey.sign(b, claims(clk.Now(), sub)), ecKey.sign(b, claims(clk.Now(), sub))

	run := func(name string, a *Authenticator, hd headers) {
		b.Run(name, func(b *testing.B) {
			get := hd.get
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.Authenticate(b.Context(), get); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	run("api_key", keys, bearer("tr_key-number-57"))
	run("jwt_cached", cached, bearer(rs256))
	run("jwt_verify_RS256", uncached, bearer(rs256))
	run("jwt_verify_ES256", uncached, bearer(es256))

	for _, tc := range []struct {
		name string
		a    *Authenticator
		hd   headers
	}{{"request_api_key", keys, bearer("tr_key-number-57")}, {"request_jwt_cached", cached, bearer(rs256)}} {
		b.Run(tc.name, func(b *testing.B) {
			get := tc.hd.get
			b.ReportAllocs()
			for b.Loop() {
				id, err := tc.a.Authenticate(b.Context(), get)
				if err != nil {
					b.Fatal(err)
				}
				if id, err = Narrow(id, "summariser", h); err != nil {
					b.Fatal(err)
				}
				if _, permits := h.Policy(id); !permits("calculator.add") {
					b.Fatal("calculator.add refused")
				}
			}
		})
	}
}
