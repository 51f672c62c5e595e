package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"toolrouter/access"
)

// Config is caller authentication as configured (config key auth).
type Config struct {
	// Keys are the API keys, each identifying an org, team or agent.
	Keys []Key `koanf:"keys" json:"keys,omitempty"`
	// JWT, when its issuer is set, accepts JWTs from that issuer.
	JWT JWT `koanf:"jwt" json:"jwt,omitzero"`
	// Admins are the identities with admin scope, as paths or prefixes ("acme", "acme/ops").
	Admins []string `koanf:"admins" json:"admins,omitempty"`
	// AllowAnonymous serves requests without a credential even when keys or a JWT issuer are
	// configured, or when listening beyond loopback without them (see AnonymousAllowed).
	AllowAnonymous bool `koanf:"allow_anonymous" json:"allow_anonymous"`
}

// Configured reports whether any credential can be checked: keys or a JWT issuer.
func (c Config) Configured() bool { return len(c.Keys) > 0 || c.JWT.Enabled() }

// Key is one API key: its SHA-256 (hex), or the environment variable holding the key itself,
// and the identity it stands for.
type Key struct {
	// Name identifies the key in logs and usage.
	Name string `koanf:"name" json:"name"`
	// SHA256 is the hex SHA-256 of the key.
	SHA256 string `koanf:"sha256" json:"sha256,omitempty"`
	// Env names the environment variable holding the key, read at start.
	Env   string `koanf:"env" json:"env,omitempty"`
	Org   string `koanf:"org" json:"org"`
	Team  string `koanf:"team" json:"team,omitempty"`
	Agent string `koanf:"agent" json:"agent,omitempty"`
}

// Identity is whom the key identifies.
func (k Key) Identity() Identity {
	return Identity{Org: k.Org, Team: k.Team, Agent: k.Agent, Name: k.Name}
}

// MinKeyLen is the shortest key accepted from the environment.
const MinKeyLen = 16

// digest is the key's SHA-256, from SHA256 or from the environment.
func (k Key) digest(lookupEnv func(string) (string, bool)) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	if k.Env == "" {
		_, err := hex.Decode(sum[:], []byte(k.SHA256)) // Validate checked it
		return sum, err
	}
	v, ok := lookupEnv(k.Env)
	switch {
	case !ok || v == "":
		return sum, fmt.Errorf("environment variable %s is not set", k.Env)
	case len(v) < MinKeyLen:
		return sum, fmt.Errorf("the key in %s is shorter than %d characters; make one with \"toolrouter keys new\"", k.Env, MinKeyLen)
	}
	return sha256.Sum256([]byte(v)), nil
}

// JWT configures JWT authentication: tokens signed by a key of the issuer's JWKS, for the
// audience, unexpired.
type JWT struct {
	Issuer   string `koanf:"issuer" json:"issuer"`
	Audience string `koanf:"audience" json:"audience"`
	// JWKSURL is where the issuer's keys are (https, or http on a loopback host).
	JWKSURL string `koanf:"jwks_url" json:"jwks_url"`
	// Claims name the claims holding the identity; zero means DefaultClaims.
	Claims Claims `koanf:"claims" json:"claims,omitzero"`
}

// Enabled reports whether any JWT setting is given (Validate then requires all of them).
func (j JWT) Enabled() bool { return j.Issuer != "" || j.Audience != "" || j.JWKSURL != "" }

// Claims name the token claims that hold an identity's org, team and agent; an empty name takes
// nothing from the token. The agent is taken only with a team: agents exist only within teams.
type Claims struct {
	Org   string `koanf:"org" json:"org,omitempty"`
	Team  string `koanf:"team" json:"team,omitempty"`
	Agent string `koanf:"agent" json:"agent,omitempty"`
}

// DefaultClaims is the claims mapping of a JWT configuration that sets none.
func DefaultClaims() Claims { return Claims{Org: "org", Team: "team", Agent: "sub"} }

var (
	keyName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$`)
	envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// Validate checks c and returns all problems as *access.FieldError values (keys "auth.…") joined
// with errors.Join, sorted by message; nil when c is valid. With orgs, the identities of keys and
// admins must be in the hierarchy (a typo would otherwise lock a caller out at its first request).
func (c Config) Validate(orgs access.Orgs) error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, &access.FieldError{Key: key, Reason: fmt.Sprintf(format, args...)})
	}
	identity := func(key string, id Identity) {
		if !id.Valid() {
			add(key, "must be an org, org/team or org/team/agent of valid names, got %q", id.String())
		} else if !orgs.Has(id) {
			add(key, "%s is not in orgs", id)
		}
	}
	names := map[string]int{}
	hashes := map[string]int{}
	for i, k := range c.Keys {
		key := fmt.Sprintf("auth.keys[%d]", i)
		if !keyName.MatchString(k.Name) {
			add(key+".name", "must be letters, digits, '_', '.', '@' or '-' (at most 64), got %q", k.Name)
		} else if j, dup := names[k.Name]; dup {
			add(key+".name", "%q is also the name of auth.keys[%d]", k.Name, j)
		} else {
			names[k.Name] = i
		}
		switch {
		case (k.SHA256 == "") == (k.Env == ""):
			add(key, "set one of sha256 (the key's SHA-256 in hex) or env (the variable holding the key)")
		case k.Env != "" && !envName.MatchString(k.Env):
			add(key+".env", "%q is not an environment variable name", k.Env)
		case k.SHA256 != "":
			if b, err := hex.DecodeString(k.SHA256); err != nil || len(b) != sha256.Size {
				add(key+".sha256", "must be 64 hex digits (a SHA-256), got %d characters", len(k.SHA256))
			} else if j, dup := hashes[strings.ToLower(k.SHA256)]; dup {
				add(key+".sha256", "the same key as auth.keys[%d]", j)
			} else {
				hashes[strings.ToLower(k.SHA256)] = i
			}
		}
		if k.Team == "" && k.Agent != "" {
			add(key+".team", "must be set with agent: agents exist only within teams")
		} else {
			identity(key, k.Identity())
		}
	}
	for i, s := range c.Admins {
		key := fmt.Sprintf("auth.admins[%d]", i)
		id, err := access.ParseIdentity(s)
		if err != nil {
			add(key, "must be an org, org/team or org/team/agent of valid names, got %q", s)
		} else if !orgs.Has(id) {
			add(key, "%s is not in orgs", id)
		}
	}
	if j := c.JWT; j.Enabled() {
		if j.Issuer == "" {
			add("auth.jwt.issuer", "must be set: the iss that tokens must carry")
		}
		if j.Audience == "" {
			add("auth.jwt.audience", "must be set: the aud that tokens must carry")
		}
		if r := jwksURL(j.JWKSURL); r != "" {
			add("auth.jwt.jwks_url", "%s", r)
		}
		if cl := j.Claims; cl != (Claims{}) {
			if cl.Org == "" {
				add("auth.jwt.claims.org", "must name the claim holding the org")
			}
			if cl.Agent != "" && cl.Team == "" {
				add("auth.jwt.claims.team", "must be set with claims.agent: agents exist only within teams")
			}
		}
	}
	return sortedJoin(errs)
}

// jwksURL says what is wrong with a JWKS URL; "" when nothing is.
func jwksURL(raw string) string {
	if raw == "" {
		return "must be set: where the issuer publishes its keys"
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "":
		return "must be an absolute https URL"
	case u.Scheme == "https":
		return ""
	case u.Scheme == "http" && loopbackHost(u.Hostname()):
		return ""
	}
	return "must be https (http only on a loopback host): keys fetched in the clear could be replaced"
}

// sortedJoin joins errs sorted by message, so that a report does not change with map order.
func sortedJoin(errs []error) error {
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}
