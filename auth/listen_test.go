package auth

import (
	"strings"
	"testing"
)

func TestAnonymousAllowed(t *testing.T) {
	keys := Config{Keys: []Key{{Name: "k", SHA256: sha("k"), Org: "acme"}}}
	jwtOnly := Config{JWT: JWT{Issuer: "https://id.example", Audience: "toolrouter", JWKSURL: "https://id.example/jwks"}}
	tests := []struct {
		name    string
		listen  string
		cfg     Config
		want    bool
		wantErr bool
	}{
		{"loopback without auth", "127.0.0.1:8080", Config{}, true, false},
		{"IPv6 loopback without auth", "[::1]:8080", Config{}, true, false},
		{"localhost without auth", "localhost:8080", Config{}, true, false},
		{"every interface without auth", ":8080", Config{}, false, true},
		{"public address without auth", "10.0.0.5:8080", Config{}, false, true},
		{"a host name is not trusted", "toolrouter.internal:8080", Config{}, false, true},
		{"every interface, allowed", "0.0.0.0:8080", Config{AllowAnonymous: true}, true, false},
		{"keys: credentials required, even on loopback", "127.0.0.1:8080", keys, false, false},
		{"keys on every interface", ":8080", keys, false, false},
		{"JWT on every interface", ":8080", jwtOnly, false, false},
		{"keys, and anonymous allowed too", ":8080", Config{Keys: keys.Keys, AllowAnonymous: true}, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AnonymousAllowed(tc.listen, tc.cfg)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Fatalf("got %v, %v, want %v and error %v", got, err, tc.want, tc.wantErr)
			}
			if err != nil {
				for _, key := range []string{"auth.keys", "auth.jwt", "auth.allow_anonymous", tc.listen} {
					if !strings.Contains(err.Error(), key) {
						t.Errorf("got %q, want it to name %s", err, key)
					}
				}
			}
		})
	}
}
