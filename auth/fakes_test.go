package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// signer is a key pair an issuer signs tokens with.
type signer struct {
	kid    string
	method jwt.SigningMethod
	priv   any
	jwk    map[string]string // the public key as a JWK
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func newRSA(t testing.TB, kid string) signer {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return signer{kid: kid, method: jwt.SigningMethodRS256, priv: k, jwk: map[string]string{
		"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig",
		"n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes()),
	}}
}

func newEC(t testing.TB, kid string) signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := k.PublicKey.Bytes() // 0x04 || X || Y
	if err != nil {
		t.Fatal(err)
	}
	return signer{kid: kid, method: jwt.SigningMethodES256, priv: k, jwk: map[string]string{
		"kty": "EC", "kid": kid, "alg": "ES256", "use": "sig", "crv": "P-256",
		"x": b64(pub[1:33]), "y": b64(pub[33:]),
	}}
}

// sign returns a token with claims, signed by s with its kid.
func (s signer) sign(t testing.TB, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(s.method, claims)
	tok.Header["kid"] = s.kid
	out, err := tok.SignedString(s.priv)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// issuer is a fake identity provider: it serves a JWKS that a test can rotate, and counts the
// fetches.
type issuer struct {
	srv     *httptest.Server
	fetches atomic.Int64

	mu   sync.Mutex // guards body and gate
	body []byte
	gate chan struct{} // when not nil, a fetch is answered once it is closed
}

func newIssuer(t testing.TB, keys ...signer) *issuer {
	t.Helper()
	is := &issuer{}
	is.publish(t, keys...)
	is.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		is.fetches.Add(1)
		is.mu.Lock()
		gate := is.gate
		is.mu.Unlock()
		if gate != nil {
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		is.mu.Lock()
		body := is.body
		is.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(is.srv.Close)
	return is
}

// publish makes keys the JWKS.
func (is *issuer) publish(t testing.TB, keys ...signer) {
	t.Helper()
	set := struct {
		Keys []map[string]string `json:"keys"`
	}{Keys: []map[string]string{}}
	for _, k := range keys {
		set.Keys = append(set.Keys, k.jwk)
	}
	body, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	is.setBody(body)
}

// hold makes the issuer slow: each fetch waits until release is called.
func (is *issuer) hold() (release func()) {
	gate := make(chan struct{})
	is.mu.Lock()
	is.gate = gate
	is.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(gate) }) }
}

func (is *issuer) setBody(b []byte) {
	is.mu.Lock()
	is.body = b
	is.mu.Unlock()
}

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex // guards now
	now time.Time
}

func newClock() *clock { return &clock{now: time.Now().Truncate(time.Second)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// headers is a request's headers, as Authenticate reads them.
type headers map[string]string

func (h headers) get(name string) string { return h[name] }

func bearer(token string) headers { return headers{"Authorization": "Bearer " + token} }
