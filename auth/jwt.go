package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"

	"toolrouter/redact"
)

// Defaults of Options' JWT settings.
const (
	defaultJWKSRefresh       = time.Hour
	defaultUnknownKeyRefresh = time.Minute
	defaultLeeway            = 30 * time.Second
	defaultTokenCacheTTL     = time.Minute
	jwksTimeout              = 10 * time.Second
	maxJWKSBytes             = 1 << 20
	maxCachedTokens          = 4096
	maxClaimBytes            = 128
)

// algorithms are the signing algorithms accepted: asymmetric only, so that a JWKS public key can
// never be used as an HMAC secret.
var algorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// verifier checks JWTs against the issuer's JWKS, which keyfunc caches and refreshes. The first
// fetch runs in the background: until the JWKS has been fetched with keys in it, a token that
// needs a key gets ErrKeysUnavailable, not ErrInvalid.
type verifier struct {
	// keys is nil until the first fetch has been tried (tried is closed then).
	keys  atomic.Pointer[keyfunc.Keyfunc]
	tried chan struct{}
	// ready is closed once the JWKS has been fetched with keys in it.
	ready     chan struct{}
	readyOnce sync.Once

	parser *jwt.Parser
	claims Claims
	now    func() time.Time
	ttl    time.Duration // of cached tokens; <= 0: no cache
	cache  tokenCache
}

// newVerifier returns a verifier of c's tokens at once, and fetches the JWKS in the background,
// then every JWKSRefresh until ctx ends.
func newVerifier(ctx context.Context, c JWT, o Options) *verifier {
	if c.Claims == (Claims{}) {
		c.Claims = DefaultClaims()
	}
	client := &http.Client{Timeout: jwksTimeout}
	if o.HTTPClient != nil {
		copied := *o.HTTPClient
		client = &copied
	}
	rt := client.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	client.Transport = limitBody{rt: rt, max: maxJWKSBytes}
	log := slog.New(redact.ForServer(c.JWKSURL, nil, nil).Handler(o.Logger.Handler()))
	v := &verifier{
		tried: make(chan struct{}),
		ready: make(chan struct{}),
		parser: jwt.NewParser(
			jwt.WithValidMethods(algorithms),
			jwt.WithIssuer(c.Issuer),
			jwt.WithAudience(c.Audience),
			jwt.WithExpirationRequired(),
			jwt.WithLeeway(max(orDefault(o.Leeway, defaultLeeway), 0)),
			jwt.WithTimeFunc(o.Now),
		),
		claims: c.Claims,
		now:    o.Now,
		ttl:    orDefault(o.TokenCacheTTL, defaultTokenCacheTTL),
		cache:  tokenCache{m: map[[sha256.Size]byte]cachedToken{}},
	}
	// keyfunc fetches the JWKS before it returns (for up to jwksTimeout): the server does not wait
	// for it.
	go func() {
		defer close(v.tried)
		keys, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{c.JWKSURL}, keyfunc.Override{
			Client:            client,
			HTTPTimeout:       jwksTimeout,
			RefreshInterval:   orDefault(o.JWKSRefresh, defaultJWKSRefresh),
			RefreshUnknownKID: rate.NewLimiter(rate.Every(orDefault(o.UnknownKeyRefresh, defaultUnknownKeyRefresh)), 1),
			// Also the bound of the fetch an unknown key ID causes. A request that would wait longer
			// for the limiter fails at once.
			RateLimitWaitMax: jwksTimeout,
			RefreshErrorHandlerFunc: func(u string) func(context.Context, error) {
				return func(ctx context.Context, err error) {
					log.WarnContext(ctx, "fetching the JWKS", "url", u, "err", err)
				}
			},
		})
		if err != nil {
			log.Error("JWKS: tokens will be refused until the configuration is fixed", "url", c.JWKSURL, "err", err)
			return
		}
		v.keys.Store(&keys)
		v.available(ctx)
	}()
	return v
}

// available reports whether the JWKS has been fetched with keys in it, looking at what keyfunc
// holds until it has: a fetch that failed leaves it empty.
func (v *verifier) available(ctx context.Context) bool {
	select {
	case <-v.ready:
		return true
	default:
	}
	keys := v.keys.Load()
	if keys == nil {
		return false
	}
	if all, err := (*keys).Storage().KeyReadAll(ctx); err != nil || len(all) == 0 {
		return false
	}
	v.readyOnce.Do(func() { close(v.ready) })
	return true
}

// keyfunc finds a token's key: ErrKeysUnavailable while the first fetch runs, keyfunc's answer
// then (which fetches the JWKS again for an unknown key ID, at most once per UnknownKeyRefresh).
func (v *verifier) keyfunc(ctx context.Context) jwt.Keyfunc {
	return func(t *jwt.Token) (any, error) {
		keys := v.keys.Load()
		if keys == nil {
			return nil, ErrKeysUnavailable
		}
		return (*keys).KeyfuncCtx(ctx)(t)
	}
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// verify returns the identity of a token, from the cache when it was verified lately.
func (v *verifier) verify(ctx context.Context, token string) (Identity, error) {
	var sum [sha256.Size]byte
	if v.ttl > 0 {
		sum = sha256.Sum256([]byte(token))
		if id, ok := v.cache.get(sum, v.now()); ok {
			return id, nil
		}
	}
	claims := jwt.MapClaims{}
	if _, err := v.parser.ParseWithClaims(token, claims, v.keyfunc(ctx)); err != nil {
		// Only finding the key fails as unverifiable: the token may be good.
		if errors.Is(err, jwt.ErrTokenUnverifiable) && !v.available(ctx) {
			return Identity{}, fmt.Errorf("%w: the issuer's keys (auth.jwt.jwks_url) have not been fetched yet", ErrKeysUnavailable)
		}
		return Identity{}, fail(ErrInvalid, "%s", tokenReason(err))
	}
	id, err := v.identity(claims)
	if err != nil {
		return Identity{}, err
	}
	if v.ttl > 0 {
		now := v.now()
		until := now.Add(v.ttl)
		if exp, err := claims.GetExpirationTime(); err == nil && exp != nil && exp.Before(until) {
			until = exp.Time
		}
		v.cache.put(sum, cachedToken{id: id, until: until}, now)
	}
	return id, nil
}

// tokenReason says why a token was refused, in words that quote nothing from it.
func tokenReason(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "malformed token"
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return "token signed by an unknown key or with an unaccepted algorithm"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return "bad token signature"
	case errors.Is(err, jwt.ErrTokenExpired):
		return "token expired"
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return "token not valid yet"
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return "token is for another audience"
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return "token from another issuer"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return "token without an expiry"
	}
	return "token refused"
}

// identity maps a verified token's claims to an Identity.
func (v *verifier) identity(claims jwt.MapClaims) (Identity, error) {
	var id Identity
	for _, f := range []struct {
		claim string
		dst   *string
	}{{v.claims.Org, &id.Org}, {v.claims.Team, &id.Team}, {v.claims.Agent, &id.Agent}} {
		if f.claim == "" {
			continue
		}
		raw, ok := claims[f.claim]
		if !ok {
			continue
		}
		s, ok := raw.(string)
		if !ok || !claimValue(s) {
			return Identity{}, fail(ErrInvalid, "token claim %q is not a name (a string of at most %d characters without '/')", f.claim, maxClaimBytes)
		}
		*f.dst = s
	}
	if id.Org == "" {
		return Identity{}, fail(ErrInvalid, "token without the org claim %q", v.claims.Org)
	}
	if id.Team == "" {
		id.Agent = "" // agents exist only within teams
	}
	if sub, err := claims.GetSubject(); err == nil && utf8.ValidString(sub) {
		id.Name = clip(sub)
	}
	return id, nil
}

// claimValue reports whether s can be one level of an identity path.
func claimValue(s string) bool {
	if s == "" || len(s) > maxClaimBytes || !utf8.ValidString(s) || strings.Contains(s, "/") {
		return false
	}
	return !strings.ContainsFunc(s, unicode.IsControl)
}

// clip shortens a subject kept for logs.
func clip(s string) string {
	if len(s) <= maxClaimBytes {
		return s
	}
	return strings.ToValidUTF8(s[:maxClaimBytes], "")
}

// tokenCache holds verified tokens by their SHA-256.
type tokenCache struct {
	mu sync.RWMutex // guards m
	m  map[[sha256.Size]byte]cachedToken
}

type cachedToken struct {
	id    Identity
	until time.Time // accepted before this
}

func (c *tokenCache) get(sum [sha256.Size]byte, now time.Time) (Identity, bool) {
	c.mu.RLock()
	t, ok := c.m[sum]
	c.mu.RUnlock()
	if !ok || !now.Before(t.until) {
		return Identity{}, false
	}
	return t.id, true
}

// put keeps a token; when the cache is full it first drops expired tokens, then all of them. Only
// tokens that verified are put, so a client cannot fill it with garbage.
func (c *tokenCache) put(sum [sha256.Size]byte, t cachedToken, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxCachedTokens {
		for k, old := range c.m {
			if !now.Before(old.until) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= maxCachedTokens {
			clear(c.m)
		}
	}
	c.m[sum] = t
}

// limitBody refuses JWKS responses over max bytes.
type limitBody struct {
	rt  http.RoundTripper
	max int64
}

func (l limitBody) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.rt.RoundTrip(r)
	if err == nil {
		resp.Body = http.MaxBytesReader(nil, resp.Body, l.max)
	}
	return resp, err
}
