package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func sha(key string) string {
	s := sha256.Sum256([]byte(key))
	return hex.EncodeToString(s[:])
}

const (
	ciKey  = "tr_ci-bot-key-0123456789abcdef"
	opsKey = "ops-key-from-the-environment"
)

func keysConfig() Config {
	return Config{Keys: []Key{
		{Name: "ci-bot", SHA256: sha(ciKey), Org: "acme", Team: "research", Agent: "summariser"},
		{Name: "ops", Env: "TOOLROUTER_OPS_KEY", Org: "acme"},
	}, Admins: []string{"acme/ops"}}
}

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func newKeys(t *testing.T, anonymous bool) *Authenticator {
	t.Helper()
	a, err := New(t.Context(), keysConfig(), Options{Anonymous: anonymous, LookupEnv: env(map[string]string{"TOOLROUTER_OPS_KEY": opsKey})})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAuthenticateKeys(t *testing.T) {
	summariser := Identity{Org: "acme", Team: "research", Agent: "summariser", Name: "ci-bot"}
	ops := Identity{Org: "acme", Name: "ops"}
	tests := []struct {
		name      string
		anonymous bool
		h         headers
		want      Identity
		wantErr   error
		reason    string
	}{
		{name: "bearer key", h: bearer(ciKey), want: summariser},
		{name: "bearer scheme in any case", h: headers{"Authorization": "bearer " + ciKey}, want: summariser},
		{name: "x-api-key", h: headers{"X-Api-Key": ciKey}, want: summariser},
		{name: "key from the environment", h: bearer(opsKey), want: ops},
		{name: "no credential", h: headers{}, wantErr: ErrMissing},
		{name: "no credential, anonymous served", anonymous: true, h: headers{}, want: Anonymous()},
		{name: "a wrong key is not anonymous", anonymous: true, h: bearer("tr_nope"), wantErr: ErrInvalid, reason: "unknown API key"},
		{name: "unknown key", h: headers{"X-Api-Key": ciKey + "x"}, wantErr: ErrInvalid, reason: "unknown API key"},
		{name: "the hash is not the key", h: bearer(sha(ciKey)), wantErr: ErrInvalid, reason: "unknown API key"},
		{name: "basic auth", h: headers{"Authorization": "Basic " + ciKey}, wantErr: ErrInvalid, reason: "must be \"Bearer\""},
		{name: "empty bearer", h: headers{"Authorization": "Bearer "}, wantErr: ErrInvalid, reason: "must be \"Bearer\""},
		{name: "both headers", h: headers{"Authorization": "Bearer " + ciKey, "X-Api-Key": ciKey}, wantErr: ErrInvalid, reason: "not both"},
		{name: "a JWT without auth.jwt", h: bearer("eyJh.eyJz.c2ln"), wantErr: ErrInvalid, reason: "unknown API key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := newKeys(t, tc.anonymous).Authenticate(t.Context(), tc.h.get)
			if !errors.Is(err, tc.wantErr) || (err == nil && got != tc.want) {
				t.Fatalf("got %+v, %v, want %+v, %v", got, err, tc.want, tc.wantErr)
			}
			if err != nil {
				if !strings.Contains(err.Error(), tc.reason) {
					t.Errorf("got %q, want it to contain %q", err, tc.reason)
				}
				if strings.Contains(err.Error(), ciKey) || strings.Contains(err.Error(), opsKey) {
					t.Errorf("got %q, which shows a key", err)
				}
			}
		})
	}
}

func TestNewKeyErrors(t *testing.T) {
	tests := []struct {
		name   string
		lookup map[string]string
		cfg    Config
		want   string
	}{
		{"unset variable", nil, keysConfig(), "auth.keys[1].env: environment variable TOOLROUTER_OPS_KEY is not set"},
		{"short key", map[string]string{"TOOLROUTER_OPS_KEY": "abc"}, keysConfig(), "auth.keys[1].env: the key in TOOLROUTER_OPS_KEY is shorter than 16 characters"},
		{"same key twice", map[string]string{"TOOLROUTER_OPS_KEY": ciKey}, keysConfig(), "auth.keys[1]: the same key as auth.keys[0]"},
		{"invalid config", nil, Config{Keys: []Key{{Name: "x", Org: "acme"}}}, "auth.keys[0]: set one of sha256"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(t.Context(), tc.cfg, Options{LookupEnv: env(tc.lookup)})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestChallenge(t *testing.T) {
	a := newKeys(t, false)
	_, missing := a.Authenticate(t.Context(), headers{}.get)
	_, invalid := a.Authenticate(t.Context(), bearer("tr_nope").get)
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"missing", missing, `Bearer realm="toolrouter"`},
		{"invalid", invalid, `Bearer realm="toolrouter", error="invalid_token", error_description="unknown API key"`},
		{"forbidden is not a 401", fail(ErrForbidden, "no"), `Bearer realm="toolrouter"`},
		{"quotes are kept out", fail(ErrInvalid, `a "b" \c`), `Bearer realm="toolrouter", error="invalid_token", error_description="a 'b' /c"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Challenge(tc.err); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestIsAdmin(t *testing.T) {
	a := newKeys(t, true)
	tests := []struct {
		id   Identity
		want bool
	}{
		{Identity{Org: "acme", Team: "ops"}, true},
		{Identity{Org: "acme", Team: "ops", Agent: "pager"}, true},
		{Identity{Org: "acme"}, false}, // the org is above the admin team
		{Identity{Org: "acme", Team: "research"}, false},
		{Identity{Org: "acme", Team: "ops", Anonymous: true}, false},
	}
	for _, tc := range tests {
		t.Run(tc.id.String(), func(t *testing.T) {
			if got := a.IsAdmin(tc.id); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestNothingToVerify: with no key and no JWT configured, on an anonymous listen, a credential
// sent is ignored (OpenAI clients always send one); without anonymous use it is still refused.
func TestNothingToVerify(t *testing.T) {
	for _, tc := range []struct {
		name      string
		anonymous bool
		h         headers
		wantErr   error
	}{
		{"a key sent, anonymous", true, bearer("sk-anything"), nil},
		{"x-api-key sent, anonymous", true, headers{"X-Api-Key": "ollama"}, nil},
		{"a key sent, not anonymous", false, bearer("sk-anything"), ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := New(t.Context(), Config{}, Options{Anonymous: tc.anonymous})
			if err != nil {
				t.Fatal(err)
			}
			got, err := a.Authenticate(t.Context(), tc.h.get)
			if !errors.Is(err, tc.wantErr) || (err == nil && got != Anonymous()) {
				t.Fatalf("got %+v, %v, want anonymous or %v", got, err, tc.wantErr)
			}
		})
	}
}
