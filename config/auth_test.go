package config

import (
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"

	"toolrouter/access"
	"toolrouter/auth"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestLoadAuthAndOrgs loads the documented shapes of auth and orgs.
func TestLoadAuthAndOrgs(t *testing.T) {
	clearEnv(t)
	hash := sha("tr_the-ci-bot-key-0123456789")
	t.Setenv("TOOLROUTER_OPS_KEY", "ops-key-from-the-environment") // named by auth.keys: not a setting
	path := writeFile(t, `{
	  "auth": {"keys": [{"name": "ci-bot", "sha256": "`+hash+`", "org": "acme", "team": "research", "agent": "summariser"},
	                    {"name": "ops", "env": "TOOLROUTER_OPS_KEY", "org": "acme"}],
	           "allow_anonymous": false, "admins": ["acme"]},
	  "orgs": {"acme": {"allow": ["*"], "deny": [], "teams": {"research": {"allow": ["calculator.*", "clock.*"],
	           "agents": {"summariser": {"allow": ["calculator.*"]}}}}}},
	  "http": {"allowed_hosts": ["toolrouter.internal:8090", "toolrouter.internal"]}
	}`)
	got, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantAuth := auth.Config{Keys: []auth.Key{
		{Name: "ci-bot", SHA256: hash, Org: "acme", Team: "research", Agent: "summariser"},
		{Name: "ops", Env: "TOOLROUTER_OPS_KEY", Org: "acme"},
	}, Admins: []string{"acme"}}
	if !reflect.DeepEqual(got.Auth, wantAuth) {
		t.Errorf("auth: got %+v, want %+v", got.Auth, wantAuth)
	}
	wantOrgs := access.Orgs{"acme": {Allow: []string{"*"}, Deny: []string{}, Teams: map[string]access.Team{
		"research": {Allow: []string{"calculator.*", "clock.*"}, Agents: map[string]access.Agent{"summariser": {Allow: []string{"calculator.*"}}}},
	}}}
	if !reflect.DeepEqual(got.Orgs, wantOrgs) {
		t.Errorf("orgs: got %+v, want %+v", got.Orgs, wantOrgs)
	}
	if want := []string{"toolrouter.internal:8090", "toolrouter.internal"}; !reflect.DeepEqual(got.HTTP.AllowedHosts, want) {
		t.Errorf("http.allowed_hosts: got %v, want %v", got.HTTP.AllowedHosts, want)
	}
}

// TestKeyEnvIsNotASetting: the environment layer rejects unknown TOOLROUTER_ variables, except
// those that auth.keys[*].env name, which hold keys.
func TestKeyEnvIsNotASetting(t *testing.T) {
	file := `{"auth": {"keys": [{"name": "ops", "env": "TOOLROUTER_OPS_KEY", "org": "acme"}]}}`
	tests := []struct {
		name    string
		file    string
		env     map[string]string
		wantErr string
	}{
		{"named by auth.keys", file, map[string]string{"TOOLROUTER_OPS_KEY": "ops-key-from-the-environment"}, ""},
		{"not named", `{}`, map[string]string{"TOOLROUTER_OPS_KEY": "ops-key-from-the-environment"}, `environment variable TOOLROUTER_OPS_KEY: unknown key "ops_key"`},
		{"another variable still checked", file, map[string]string{"TOOLROUTER_OPS_KEY": "x", "TOOLROUTER_OPS_KEYS": "y"}, `environment variable TOOLROUTER_OPS_KEYS: unknown key "ops_keys"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, err := Load(writeFile(t, tc.file), nil)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("got %v, want no error", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "ops-key-from-the-environment") {
				t.Errorf("got %q, which shows the key", err)
			}
		})
	}
}

// TestCallersMigration: the flat callers lists are refused with one line that says what replaces
// them and gives the orgs to paste.
func TestCallersMigration(t *testing.T) {
	clearEnv(t)
	_, err := Load(writeFile(t, `{"callers": {"kiosk": {"allow": ["calculator.*"]}, "*": {"deny": ["memory.*"]}}}`), nil)
	if err == nil {
		t.Fatal("got nil, want the callers migration error")
	}
	for _, want := range []string{
		"callers is replaced by orgs",
		`"orgs": {"default":{"deny":["memory.*"],"teams":{"kiosk":{"allow":["calculator.*"]}}}}`,
		"docs/configuration.md#callers",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got %q, want it to contain %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "unknown key") {
		t.Errorf("got %q, want the migration alone, not unknown keys", err)
	}
	// The pasted orgs load.
	if _, err := Load(writeFile(t, `{"orgs": {"default":{"deny":["memory.*"],"teams":{"kiosk":{"allow":["calculator.*"]}}}}}`), nil); err != nil {
		t.Errorf("the migrated orgs: got %v, want them to load", err)
	}
}

func TestValidateAuthAndOrgs(t *testing.T) {
	tests := []validationCase{
		{"bad pattern in orgs", func(c *Config) { c.Orgs = access.Orgs{"acme": {Allow: []string{"calc[.*"}}} }, "orgs.acme.allow[0]", `orgs.acme.allow[0]: bad pattern "calc[.*"`},
		{"bad org name", func(c *Config) { c.Orgs = access.Orgs{"ac/me": {}} }, "orgs.ac/me", `orgs.ac/me: name "ac/me" must be letters`},
		{"key outside orgs", func(c *Config) {
			c.Orgs = access.Orgs{"acme": {}}
			c.Auth.Keys = []auth.Key{{Name: "k", SHA256: sha("k"), Org: "globex"}}
		}, "auth.keys[0]", `auth.keys[0]: globex is not in orgs`},
		{"key without sha256 or env", func(c *Config) { c.Auth.Keys = []auth.Key{{Name: "k", Org: "acme"}} }, "auth.keys[0]", `auth.keys[0]: set one of sha256`},
		{"admin outside orgs", func(c *Config) { c.Orgs = access.Orgs{"acme": {}}; c.Auth.Admins = []string{"acme/ops"} }, "auth.admins[0]", `auth.admins[0]: acme/ops is not in orgs`},
		{"jwt without audience", func(c *Config) {
			c.Auth.JWT = auth.JWT{Issuer: "https://id.example", JWKSURL: "https://id.example/jwks"}
		}, "auth.jwt.audience", `auth.jwt.audience: must be set`},
		{"allowed host with a scheme", func(c *Config) { c.HTTP.AllowedHosts = []string{"https://h.example"} }, "http.allowed_hosts[0]", `http.allowed_hosts[0]: must be a host as the Host header carries it`},
		{"allowed host upper case", func(c *Config) { c.HTTP.AllowedHosts = []string{"H.example:8090"} }, "http.allowed_hosts[0]", `http.allowed_hosts[0]: must be a host`},
		{"allowed host bad port", func(c *Config) { c.HTTP.AllowedHosts = []string{"h.example:0"} }, "http.allowed_hosts[0]", `http.allowed_hosts[0]: port must be a number from 1 to 65535, got "0"`},
		{"allowed host wildcard", func(c *Config) { c.HTTP.AllowedHosts = []string{"*"} }, "http.allowed_hosts[0]", `http.allowed_hosts[0]: must be a host`},
	}
	checkValidation(t, tests)
	for _, ok := range []string{"h.example", "h.example:8090", "10.0.0.5:8090", "[::1]:8090", "[fd00::1]"} {
		c := Default()
		c.HTTP.AllowedHosts = []string{ok}
		if err := c.Validate(); err != nil {
			t.Errorf("http.allowed_hosts %q: got %v, want valid", ok, err)
		}
	}
}

func TestAuthKeyInConfigIsRefused(t *testing.T) {
	clearEnv(t)
	_, err := Load(writeFile(t, `{"auth": {"keys": [{"name": "k", "key": "tr_secret-value-0123456789", "org": "acme"}]}}`), nil)
	if err == nil || !strings.Contains(err.Error(), `"auth.keys[0].key" is not allowed`) || !strings.Contains(err.Error(), "auth.keys[N].sha256") {
		t.Fatalf("got %v, want the key refused with a pointer to auth.keys[N].sha256", err)
	}
	if strings.Contains(err.Error(), "tr_secret-value") {
		t.Errorf("got %q, which shows the key", err)
	}
}
