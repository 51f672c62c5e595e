package auth

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestNewKey(t *testing.T) {
	g, err := NewKey("", Identity{Org: "acme", Team: "research", Agent: "summariser"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(g.Key, KeyPrefix) || len(g.Key) != len(KeyPrefix)+43 {
		t.Errorf("got key of %d characters, want %s and 43 base64url characters", len(g.Key), KeyPrefix)
	}
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"key":"` + g.Key + `","entry":{"name":"acme-research-summariser","sha256":"` + sha(g.Key) +
		`","org":"acme","team":"research","agent":"summariser"}}`
	if string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}

	// The entry, pasted into auth.keys, accepts the key.
	a, err := New(t.Context(), Config{Keys: []Key{g.Entry}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	id, err := a.Authenticate(t.Context(), bearer(g.Key).get)
	if err != nil || id.String() != "acme/research/summariser" || id.Name != "acme-research-summariser" {
		t.Errorf("got %+v, %v, want acme/research/summariser named acme-research-summariser", id, err)
	}

	if other, _ := NewKey("x", Identity{Org: "acme"}); other.Key == g.Key {
		t.Error("got the same key twice")
	}
}

func TestNewKeyRefuses(t *testing.T) {
	tests := []struct {
		name, key string
		id        Identity
	}{
		{"no org", "", Identity{}},
		{"agent without team", "", Identity{Org: "acme", Agent: "x"}},
		{"bad name", "", Identity{Org: "ac/me"}},
		{"bad key name", "my key", Identity{Org: "acme"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if g, err := NewKey(tc.key, tc.id); err == nil {
				t.Errorf("got %+v, want an error", g.Entry)
			}
		})
	}
}
