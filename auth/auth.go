// Package auth establishes who a request comes from: an API key (stored only as its SHA-256) or
// a JWT verified against an issuer's JWKS, sent as "Authorization: Bearer …" or "x-api-key: …".
// The result is an Identity, a path in the org/team/agent hierarchy of package access; a
// request's "caller" may then only narrow it (Narrow). Admin scope (IsAdmin) and the decision to
// serve requests without a credential (AnonymousAllowed) live here too.
//
// The package decides nothing about tools (package access does) and nothing about HTTP: it
// returns ErrMissing, ErrInvalid and ErrForbidden, which the server maps to 401 (with Challenge
// as WWW-Authenticate) and 403, and ErrKeysUnavailable (503) while a token cannot be checked for
// want of the issuer's keys. Its errors never contain a credential.
package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"toolrouter/access"
)

// Identity is who a request acts for (see access.Identity): written org/team/agent by its
// String method, with the key's name or the token's subject as Name.
type Identity = access.Identity

// Anonymous is the identity of a request without a credential, when those are served: org
// access.DefaultOrg, so that its "caller" may narrow it to a team or agent of that org.
func Anonymous() Identity {
	return Identity{Org: access.DefaultOrg, Name: "anonymous", Anonymous: true}
}

// Sentinels that the server maps to HTTP statuses.
var (
	// ErrMissing: the request carries no credential (401).
	ErrMissing = errors.New("no credential")
	// ErrInvalid: the request's credential is not accepted (401).
	ErrInvalid = errors.New("invalid credential")
	// ErrForbidden: the credential is good but does not allow what the request asks (403).
	ErrForbidden = errors.New("forbidden")
	// ErrKeysUnavailable: the request's token needs the issuer's keys, and the JWKS has not been
	// fetched yet (503): at start, or while the issuer does not answer. Retrying later helps.
	ErrKeysUnavailable = errors.New("the issuer's keys are not available")
)

// credentialError is one of the sentinels with the reason, safe to show to the client.
type credentialError struct {
	kind   error
	reason string
}

func (e *credentialError) Error() string { return e.kind.Error() + ": " + e.reason }
func (e *credentialError) Unwrap() error { return e.kind }

func fail(kind error, format string, args ...any) error {
	return &credentialError{kind: kind, reason: fmt.Sprintf(format, args...)}
}

// Realm is the realm of WWW-Authenticate challenges.
const Realm = "toolrouter"

// Challenge is the WWW-Authenticate value for a 401 caused by err (RFC 6750): the bare challenge
// for a missing credential, with error="invalid_token" and the reason for an invalid one.
func Challenge(err error) string {
	c := `Bearer realm="` + Realm + `"`
	var ce *credentialError
	if errors.As(err, &ce) && errors.Is(ce.kind, ErrInvalid) {
		c += `, error="invalid_token", error_description="` + quoteSafe.Replace(ce.reason) + `"`
	}
	return c
}

// quoteSafe keeps a reason inside a quoted-string.
var quoteSafe = strings.NewReplacer(`"`, `'`, `\`, `/`, "\r", " ", "\n", " ")

// Options configure an Authenticator; the zero value works.
type Options struct {
	// Anonymous serves a request without a credential as Anonymous(); decide it with
	// AnonymousAllowed. Off, such a request fails with ErrMissing.
	Anonymous bool
	// LookupEnv reads the environment variables that auth.keys[*].env name; os.LookupEnv if nil.
	LookupEnv func(string) (string, bool)
	// HTTPClient fetches the JWKS; a client with a 10 s timeout if nil. Responses over 1 MiB are
	// refused either way.
	HTTPClient *http.Client
	// Logger receives JWKS refresh failures (URLs and errors redacted); slog.Default() if nil.
	Logger *slog.Logger
	// JWKSRefresh is how often the JWKS is fetched again (default 1 h).
	JWKSRefresh time.Duration
	// UnknownKeyRefresh is the least time between two fetches caused by a token signed with an
	// unknown key ID, the way a rotated key is picked up (default 1 min; the first is immediate).
	UnknownKeyRefresh time.Duration
	// Leeway is the clock skew tolerated for exp and nbf (default 30 s; negative: none).
	Leeway time.Duration
	// TokenCacheTTL is how long a verified token is accepted again without verifying its
	// signature, never past its expiry (default 1 min; negative: no cache). A key removed from
	// the JWKS thus stops being accepted within JWKSRefresh plus this.
	TokenCacheTTL time.Duration
	// Now is the clock; time.Now if nil.
	Now func() time.Time
}

// Authenticator turns a request's credential into an Identity. It is safe for concurrent use.
type Authenticator struct {
	keys      map[uint64][]apiKey // by the first 8 bytes of the key's SHA-256
	jwt       *verifier           // nil without auth.jwt
	admins    []Identity
	anonymous bool
}

// apiKey is one configured key: its digest and whom it identifies.
type apiKey struct {
	sum [sha256.Size]byte
	id  Identity
}

// New returns an Authenticator for c. When c has a JWT issuer it starts fetching the JWKS in the
// background and returns without waiting for it: until a fetch succeeds, a token gets
// ErrKeysUnavailable (a failure is logged, and the JWKS fetched again when a token needs a key,
// at most once per UnknownKeyRefresh). It keeps refreshing the JWKS until ctx ends. Environment
// variables named by keys are read now; their values are kept only as hashes.
func New(ctx context.Context, c Config, o Options) (*Authenticator, error) {
	if err := c.Validate(nil); err != nil {
		return nil, err
	}
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	a := &Authenticator{keys: map[uint64][]apiKey{}, anonymous: o.Anonymous}
	var errs []error
	seen := map[[sha256.Size]byte]int{}
	for i, k := range c.Keys {
		key := fmt.Sprintf("auth.keys[%d]", i)
		sum, err := k.digest(o.LookupEnv)
		if err != nil {
			errs = append(errs, &access.FieldError{Key: key + ".env", Reason: err.Error()})
			continue
		}
		if j, dup := seen[sum]; dup {
			errs = append(errs, &access.FieldError{Key: key, Reason: fmt.Sprintf("the same key as auth.keys[%d]", j)})
			continue
		}
		seen[sum] = i
		idx := binary.BigEndian.Uint64(sum[:8])
		a.keys[idx] = append(a.keys[idx], apiKey{sum: sum, id: k.Identity()})
	}
	if err := sortedJoin(errs); err != nil {
		return nil, err
	}
	for _, s := range c.Admins {
		id, _ := access.ParseIdentity(s) // Validate checked it
		a.admins = append(a.admins, id)
	}
	if c.JWT.Enabled() {
		a.jwt = newVerifier(ctx, c.JWT, o)
	}
	return a, nil
}

// WaitKeys waits until the issuer's keys (auth.jwt.jwks_url) have been fetched, or ctx ends (its
// error). Without auth.jwt it returns nil at once. A caller that would rather hold a new
// Authenticator back than answer ErrKeysUnavailable meanwhile (a reload replacing one that has
// its keys) waits on it.
func (a *Authenticator) WaitKeys(ctx context.Context) error {
	if a.jwt == nil {
		return nil
	}
	select {
	case <-a.jwt.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Authenticate returns the identity of a request's credential. header returns a request header
// by name ("" when absent), e.g. fiber's c.Get or http.Header.Get; the values it returns are not
// retained. ctx bounds a JWKS fetch for a token signed with an unknown key.
//
// Errors wrap ErrMissing (no credential, and anonymous requests are not served), ErrInvalid, or
// ErrKeysUnavailable (a token, before the JWKS has been fetched); a credential that is sent but
// wrong is never taken as no credential.
func (a *Authenticator) Authenticate(ctx context.Context, header func(string) string) (Identity, error) {
	if a.anonymous && len(a.keys) == 0 && a.jwt == nil {
		// Nothing could verify a credential: one sent is ignored, as Ollama ignores it. OpenAI
		// clients always send a key, and refusing it would refuse every one of them.
		return Anonymous(), nil
	}
	authz, apiKey := header("Authorization"), header("X-Api-Key")
	var token string
	switch {
	case authz != "" && apiKey != "":
		return Identity{}, fail(ErrInvalid, "send one credential, in Authorization or in x-api-key, not both")
	case authz != "":
		scheme, t, _ := strings.Cut(strings.TrimSpace(authz), " ")
		token = strings.TrimSpace(t)
		if !strings.EqualFold(scheme, "Bearer") || token == "" {
			return Identity{}, fail(ErrInvalid, "the Authorization header must be \"Bearer\" and a key or token")
		}
	case apiKey != "":
		token = strings.TrimSpace(apiKey)
	case a.anonymous:
		return Anonymous(), nil
	default:
		return Identity{}, fail(ErrMissing, "send an API key as \"Authorization: Bearer KEY\" or \"x-api-key: KEY\"")
	}
	if id, ok := a.key(token); ok {
		return id, nil
	}
	if a.jwt != nil && authz != "" && strings.Count(token, ".") == 2 {
		return a.jwt.verify(ctx, token)
	}
	return Identity{}, fail(ErrInvalid, "unknown API key")
}

// key finds the configured key whose SHA-256 is that of token. The index is the digest's first
// bytes, so lookup time depends only on the digest of what the client sent (which it knows
// already), never on a stored key; the digests are then compared in constant time.
func (a *Authenticator) key(token string) (Identity, bool) {
	if len(a.keys) == 0 {
		return Identity{}, false
	}
	sum := sha256.Sum256([]byte(token))
	for _, k := range a.keys[binary.BigEndian.Uint64(sum[:8])] {
		if subtle.ConstantTimeCompare(k.sum[:], sum[:]) == 1 {
			return k.id, true
		}
	}
	return Identity{}, false
}

// IsAdmin reports whether id is within one of auth.admins ("acme" covers every identity of org
// acme, "acme/ops" those of its team ops). An anonymous identity never is.
func (a *Authenticator) IsAdmin(id Identity) bool {
	if id.Anonymous {
		return false
	}
	for _, p := range a.admins {
		if id.Within(p) {
			return true
		}
	}
	return false
}
