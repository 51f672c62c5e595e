package auth

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const (
	testIssuer   = "https://id.example"
	testAudience = "toolrouter"
)

// newJWT returns an Authenticator for the issuer's JWKS, on clock, once its first fetch of the
// JWKS is over (whether it succeeded or not).
func newJWT(t testing.TB, is *issuer, url string, c *clock, o Options) *Authenticator {
	t.Helper()
	o.HTTPClient, o.Now = is.srv.Client(), c.Now
	a, err := New(t.Context(), Config{JWT: JWT{Issuer: testIssuer, Audience: testAudience, JWKSURL: url}}, o)
	if err != nil {
		t.Fatal(err)
	}
	<-a.jwt.tried
	return a
}

// claims are valid claims at now, with extra ones set (a nil value deletes a claim).
func claims(now time.Time, extra jwt.MapClaims) jwt.MapClaims {
	c := jwt.MapClaims{
		"iss": testIssuer, "aud": testAudience, "sub": "svc-1", "org": "acme", "team": "research",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

func TestJWT(t *testing.T) {
	rsaKey, ecKey, stranger := newRSA(t, "rsa"), newEC(t, "ec"), newRSA(t, "stranger")
	is := newIssuer(t, rsaKey, ecKey)
	clk := newClock()
	a := newJWT(t, is, is.srv.URL, clk, Options{TokenCacheTTL: -1})
	now := clk.Now()
	unsigned, err := jwt.NewWithClaims(jwt.SigningMethodNone, claims(now, nil)).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	hmac := jwt.NewWithClaims(jwt.SigningMethodHS256, claims(now, nil))
	hmac.Header["kid"] = "rsa"
	hs256, err := hmac.SignedString([]byte("a shared secret of some length"))
	if err != nil {
		t.Fatal(err)
	}
	good := rsaKey.sign(t, claims(now, nil))
	other := rsaKey.sign(t, claims(now, jwt.MapClaims{"team": "ops"}))
	parts, otherParts := strings.Split(good, "."), strings.Split(other, ".")
	tampered := parts[0] + "." + otherParts[1] + "." + parts[2]

	tests := []struct {
		name   string
		h      headers
		want   string // the identity's path, or the error's reason
		wantID Identity
	}{
		{"RS256", bearer(good), "", Identity{Org: "acme", Team: "research", Agent: "svc-1", Name: "svc-1"}},
		{"ES256", bearer(ecKey.sign(t, claims(now, nil))), "", Identity{Org: "acme", Team: "research", Agent: "svc-1", Name: "svc-1"}},
		{"no team: an org identity, the agent dropped", bearer(ecKey.sign(t, claims(now, jwt.MapClaims{"team": nil}))), "", Identity{Org: "acme", Name: "svc-1"}},
		{"audience among several", bearer(rsaKey.sign(t, claims(now, jwt.MapClaims{"aud": []string{"x", testAudience}}))), "", Identity{Org: "acme", Team: "research", Agent: "svc-1", Name: "svc-1"}},
		{"expired within the leeway", bearer(rsaKey.sign(t, claims(now, jwt.MapClaims{"exp": now.Add(-10 * time.Second).Unix()}))), "", Identity{Org: "acme", Team: "research", Agent: "svc-1", Name: "svc-1"}},
		{"expired", bearer(rsaKey.sign(t, claims(now, jwt.MapClaims{"exp": now.Add(-time.Hour).Unix()}))), "token expired", Identity{}},
		{"not valid yet", bearer(rsaKey.sign(t, claims(now, jwt.MapClaims{"nbf": now.Add(time.Hour).Unix()}))), "token not valid yet", Identity{}},
		{"without expiry", bearer(rsaKey.sign(t, claims(now, jwt.MapClaims{"exp": nil}))), "token without an expiry", Identity{}},
		{"wrong audience", bearer(rsaKey.sign(t, claims(now, jwt.MapClaims{"aud": "someone-else"}))), "token is for another audience", Identity{}},
		{"wrong issuer", bearer(rsaKey.sign(t, claims(now, jwt.MapClaims{"iss": "https://evil.example"}))), "token from another issuer", Identity{}},
		{"unknown kid", bearer(stranger.sign(t, claims(now, nil))), "token signed by an unknown key", Identity{}},
		{"HS256 with the public key's kid", bearer(hs256), "bad token signature", Identity{}},
		{"alg none", bearer(unsigned), "bad token signature", Identity{}},
		{"tampered claims", bearer(tampered), "bad token signature", Identity{}},
		{"no org claim", bearer(rsaKey.sign(t, claims(now, jwt.MapClaims{"org": nil}))), `token without the org claim "org"`, Identity{}},
		{"org claim not a string", bearer(rsaKey.sign(t, claims(now, jwt.MapClaims{"org": 7}))), `token claim "org" is not a name`, Identity{}},
		{"team claim with a slash", bearer(rsaKey.sign(t, claims(now, jwt.MapClaims{"team": "research/../ops"}))), `token claim "team" is not a name`, Identity{}},
		{"malformed", bearer("a.b.c"), "malformed token", Identity{}},
		{"a token in x-api-key is not verified", headers{"X-Api-Key": good}, "unknown API key", Identity{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := a.Authenticate(t.Context(), tc.h.get)
			if tc.want == "" {
				if err != nil || got != tc.wantID {
					t.Errorf("got %+v, %v, want %+v", got, err, tc.wantID)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %+v, %v, want ErrInvalid with %q", got, err, tc.want)
			}
		})
	}
}

func TestJWTClaimsMapping(t *testing.T) {
	k := newEC(t, "ec")
	is := newIssuer(t, k)
	clk := newClock()
	a, err := New(t.Context(), Config{JWT: JWT{Issuer: testIssuer, Audience: testAudience, JWKSURL: is.srv.URL,
		Claims: Claims{Org: "https://acme.example/org", Team: "grp"}}}, Options{HTTPClient: is.srv.Client(), Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.WaitKeys(t.Context()); err != nil {
		t.Fatal(err)
	}
	tok := k.sign(t, claims(clk.Now(), jwt.MapClaims{"https://acme.example/org": "acme", "grp": "ops", "org": "globex"}))
	got, err := a.Authenticate(t.Context(), bearer(tok).get)
	want := Identity{Org: "acme", Team: "ops", Name: "svc-1"}
	if err != nil || got != want {
		t.Errorf("got %+v, %v, want %+v", got, err, want)
	}
}

// TestJWKSRotation: a token signed by a new key makes the JWKS be fetched again, at most once per
// UnknownKeyRefresh; a key gone from the JWKS is no longer accepted.
func TestJWKSRotation(t *testing.T) {
	oldKey, newKey := newRSA(t, "2025"), newEC(t, "2026")
	is := newIssuer(t, oldKey)
	clk := newClock()
	a := newJWT(t, is, is.srv.URL, clk, Options{})
	auth := func(k signer, sub string) error {
		_, err := a.Authenticate(t.Context(), bearer(k.sign(t, claims(clk.Now(), jwt.MapClaims{"sub": sub}))).get)
		return err
	}
	steps := []struct {
		name    string
		rotate  bool
		key     signer
		wantErr bool
		fetches int64
	}{
		{"old key, fetched at start", false, oldKey, false, 1},
		{"old key, from the cached JWKS", false, oldKey, false, 1},
		{"after rotation, the new key is fetched", true, newKey, false, 2},
		{"the old key is gone, and the next fetch must wait", false, oldKey, true, 2},
		{"the new key, cached", false, newKey, false, 2},
	}
	for i, s := range steps {
		if s.rotate {
			is.publish(t, newKey)
		}
		err := auth(s.key, "svc-"+string(rune('a'+i)))
		if (err != nil) != s.wantErr || is.fetches.Load() != s.fetches {
			t.Errorf("%s: got %v and %d fetches, want error %v and %d fetches", s.name, err, is.fetches.Load(), s.wantErr, s.fetches)
		}
	}
}

// TestTokenCache: a verified token is accepted again without its key until the cache TTL or its
// expiry, whichever comes first.
func TestTokenCache(t *testing.T) {
	k, next := newRSA(t, "k"), newEC(t, "next")
	is := newIssuer(t, k)
	clk := newClock()
	a := newJWT(t, is, is.srv.URL, clk, Options{TokenCacheTTL: time.Minute, Leeway: -1})
	short := k.sign(t, claims(clk.Now(), jwt.MapClaims{"exp": clk.Now().Add(30 * time.Second).Unix()}))
	long := k.sign(t, claims(clk.Now(), nil))
	for _, tok := range []string{short, long} {
		if _, err := a.Authenticate(t.Context(), bearer(tok).get); err != nil {
			t.Fatal(err)
		}
	}
	// Key k is withdrawn; a token signed by the next key makes the JWKS be fetched again, so that
	// only the token cache still accepts the tokens.
	is.publish(t, next)
	if _, err := a.Authenticate(t.Context(), bearer(next.sign(t, claims(clk.Now(), nil))).get); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name    string
		advance time.Duration
		token   string
		wantErr bool
	}{
		{"cached", 0, long, false},
		{"cached until its expiry", 20 * time.Second, short, false},
		{"expired, though the TTL is not over", 15 * time.Second, short, true},
		{"still cached", 0, long, false},
		{"past the TTL, verified again", 30 * time.Second, long, true},
	}
	for _, s := range steps {
		clk.advance(s.advance)
		_, err := a.Authenticate(t.Context(), bearer(s.token).get)
		if (err != nil) != s.wantErr {
			t.Errorf("%s: got %v, want error %v", s.name, err, s.wantErr)
		}
	}
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestJWKSRefused: an oversized JWKS is refused, the server still starts, and the failure is
// logged without the secret in the JWKS URL. Tokens get ErrKeysUnavailable until the JWKS is
// fetched, which a token retries (at most once per UnknownKeyRefresh).
func TestJWKSRefused(t *testing.T) {
	k := newRSA(t, "k")
	is := newIssuer(t, k)
	is.setBody(bytes.Repeat([]byte(" "), maxJWKSBytes+1))
	var logs syncBuffer
	clk := newClock()
	a := newJWT(t, is, is.srv.URL+"/jwks?access_token=s3cr3t-in-url", clk,
		Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), UnknownKeyRefresh: time.Nanosecond})
	tok := bearer(k.sign(t, claims(clk.Now(), nil)))
	_, err := a.Authenticate(t.Context(), tok.get)
	if !errors.Is(err, ErrKeysUnavailable) || errors.Is(err, ErrInvalid) {
		t.Errorf("got %v, want ErrKeysUnavailable", err)
	}
	out := logs.String()
	if !strings.Contains(out, "fetching the JWKS") || strings.Contains(out, "s3cr3t") {
		t.Errorf("got logs %q, want the failed fetch logged without the secret", out)
	}
	is.publish(t, k)
	if _, err := a.Authenticate(t.Context(), tok.get); err != nil {
		t.Errorf("once the JWKS is served: got %v, want the token accepted", err)
	}
}

// TestJWKSInBackground: a JWKS that is slow to answer does not hold New back. Until the first
// fetch succeeds a token gets ErrKeysUnavailable (a malformed one is still refused for what it
// is); then tokens are verified.
func TestJWKSInBackground(t *testing.T) {
	k := newEC(t, "k")
	is := newIssuer(t, k)
	release := is.hold()
	defer release()
	clk := newClock()
	start := time.Now()
	a, err := New(t.Context(), Config{JWT: JWT{Issuer: testIssuer, Audience: testAudience, JWKSURL: is.srv.URL}},
		Options{HTTPClient: is.srv.Client(), Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > jwksTimeout/2 {
		t.Errorf("New took %v with the JWKS held, want no wait (the fetch is bounded by %v)", d, jwksTimeout)
	}
	good := bearer(k.sign(t, claims(clk.Now(), nil)))
	for _, tc := range []struct {
		name    string
		h       headers
		wantErr error
	}{
		{"a token before the keys", good, ErrKeysUnavailable},
		{"a malformed token", bearer("a.b.c"), ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := a.Authenticate(t.Context(), tc.h.get); !errors.Is(err, tc.wantErr) {
				t.Errorf("got %v, want %v", err, tc.wantErr)
			}
		})
	}

	release()
	if err := a.WaitKeys(t.Context()); err != nil {
		t.Fatalf("WaitKeys: %v", err)
	}
	want := Identity{Org: "acme", Team: "research", Agent: "svc-1", Name: "svc-1"}
	if got, err := a.Authenticate(t.Context(), good.get); err != nil || got != want {
		t.Errorf("after the fetch: got %+v, %v, want %+v", got, err, want)
	}
	if n := is.fetches.Load(); n != 1 {
		t.Errorf("got %d fetches, want 1: a token before the keys does not fetch them again", n)
	}
}
