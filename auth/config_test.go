package auth

import (
	"errors"
	"strings"
	"testing"

	"toolrouter/access"
)

func TestValidate(t *testing.T) {
	orgs := access.Orgs{"acme": {Teams: map[string]access.Team{"research": {Agents: map[string]access.Agent{"summariser": {}}}}}}
	jwtOK := JWT{Issuer: "https://id.example", Audience: "toolrouter", JWKSURL: "https://id.example/jwks"}
	tests := []struct {
		name string
		cfg  Config
		orgs access.Orgs
		want []string
	}{
		{"valid", Config{Keys: keysConfig().Keys, Admins: []string{"acme"}, JWT: jwtOK}, orgs, nil},
		{"without orgs, any identity", Config{Keys: []Key{{Name: "k", SHA256: sha("k"), Org: "initech", Team: "x"}}}, nil, nil},
		{"unknown references name the key path", Config{
			Keys:   []Key{{Name: "k", SHA256: sha("k"), Org: "acme", Team: "research", Agent: "writer"}},
			Admins: []string{"acme/ops"},
		}, orgs, []string{
			"auth.admins[0]: acme/ops is not in orgs",
			"auth.keys[0]: acme/research/writer is not in orgs",
		}},
		{"bad entries", Config{Keys: []Key{
			{Name: "k", SHA256: "abc", Org: "acme"},
			{Name: "k", SHA256: sha("x"), Env: "X", Org: "acme"},
			{Name: "bad name", Env: "1X", Org: "acme", Agent: "a"},
			{Name: "j", SHA256: strings.ToUpper(sha("x")), Org: "ac/me"},
		}, Admins: []string{"acme/"}}, nil, []string{
			`auth.admins[0]: must be an org, org/team or org/team/agent of valid names, got "acme/"`,
			`auth.keys[0].sha256: must be 64 hex digits (a SHA-256), got 3 characters`,
			`auth.keys[1].name: "k" is also the name of auth.keys[0]`,
			`auth.keys[1]: set one of sha256 (the key's SHA-256 in hex) or env (the variable holding the key)`,
			`auth.keys[2].env: "1X" is not an environment variable name`,
			`auth.keys[2].name: must be letters, digits, '_', '.', '@' or '-' (at most 64), got "bad name"`,
			`auth.keys[2].team: must be set with agent: agents exist only within teams`,
			`auth.keys[3]: must be an org, org/team or org/team/agent of valid names, got "ac/me"`,
		}},
		{"duplicate hash in any case", Config{Keys: []Key{
			{Name: "a", SHA256: sha("x"), Org: "acme"},
			{Name: "b", SHA256: strings.ToUpper(sha("x")), Org: "acme"},
		}}, nil, []string{"auth.keys[1].sha256: the same key as auth.keys[0]"}},
		{"incomplete JWT", Config{JWT: JWT{Issuer: "https://id.example", Claims: Claims{Agent: "sub"}}}, nil, []string{
			"auth.jwt.audience: must be set: the aud that tokens must carry",
			"auth.jwt.claims.org: must name the claim holding the org",
			"auth.jwt.claims.team: must be set with claims.agent: agents exist only within teams",
			"auth.jwt.jwks_url: must be set: where the issuer publishes its keys",
		}},
		{"JWKS in the clear", Config{JWT: JWT{Issuer: "i", Audience: "a", JWKSURL: "http://id.example/jwks"}}, nil, []string{
			"auth.jwt.jwks_url: must be https (http only on a loopback host): keys fetched in the clear could be replaced",
		}},
		{"JWKS over http on loopback", Config{JWT: JWT{Issuer: "i", Audience: "a", JWKSURL: "http://127.0.0.1:9/jwks"}}, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := fieldErrors(t, tc.cfg.Validate(tc.orgs))
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// fieldErrors returns the texts of the *access.FieldError values joined in err.
func fieldErrors(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("got %T, want joined errors", err)
	}
	var out []string
	for _, e := range joined.Unwrap() {
		var fe *access.FieldError
		if !errors.As(e, &fe) {
			t.Fatalf("got %T (%v), want *access.FieldError", e, e)
		}
		out = append(out, fe.Error())
	}
	return out
}
