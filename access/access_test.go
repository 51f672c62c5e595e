package access

import (
	"encoding/json"
	"errors"
	"os"
	"testing"
)

// testOrgs is testdata/orgs.json.
func testOrgs(t testing.TB) Orgs {
	t.Helper()
	b, err := os.ReadFile("testdata/orgs.json")
	if err != nil {
		t.Fatal(err)
	}
	var orgs Orgs
	if err := json.Unmarshal(b, &orgs); err != nil {
		t.Fatal(err)
	}
	return orgs
}

func TestIdentity(t *testing.T) {
	tests := []struct {
		name  string
		id    Identity
		str   string
		depth int
	}{
		{"zero", Identity{}, "", 0},
		{"org", Identity{Org: "acme"}, "acme", 1},
		{"team", Identity{Org: "acme", Team: "research", Name: "k"}, "acme/research", 2},
		{"agent", Identity{Org: "acme", Team: "research", Agent: "summariser"}, "acme/research/summariser", 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.id.String(); got != tc.str {
				t.Errorf("String: got %q, want %q", got, tc.str)
			}
			if got := tc.id.Depth(); got != tc.depth {
				t.Errorf("Depth: got %d, want %d", got, tc.depth)
			}
		})
	}
}

func TestWithin(t *testing.T) {
	agent := Identity{Org: "acme", Team: "ops", Agent: "bot"}
	tests := []struct {
		name   string
		id     Identity
		prefix Identity
		want   bool
	}{
		{"org covers agent", agent, Identity{Org: "acme"}, true},
		{"team covers agent", agent, Identity{Org: "acme", Team: "ops"}, true},
		{"agent covers itself", agent, agent, true},
		{"other team", agent, Identity{Org: "acme", Team: "research"}, false},
		{"other org, same team name", agent, Identity{Org: "globex", Team: "ops"}, false},
		{"agent does not cover its team", Identity{Org: "acme", Team: "ops"}, agent, false},
		{"zero prefix covers nothing", agent, Identity{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.id.Within(tc.prefix); got != tc.want {
				t.Errorf("%s within %q: got %v, want %v", tc.id, tc.prefix, got, tc.want)
			}
		})
	}
}

func TestParseIdentity(t *testing.T) {
	tests := []struct {
		in      string
		want    Identity
		wantErr bool
	}{
		{in: "acme", want: Identity{Org: "acme"}},
		{in: "acme/research", want: Identity{Org: "acme", Team: "research"}},
		{in: "acme/research/summariser", want: Identity{Org: "acme", Team: "research", Agent: "summariser"}},
		{in: "Acme_1/r-2/x", want: Identity{Org: "Acme_1", Team: "r-2", Agent: "x"}},
		{in: "", wantErr: true},
		{in: "acme/", wantErr: true},
		{in: "acme//x", wantErr: true},
		{in: "a/b/c/d", wantErr: true},
		{in: "acme.corp", wantErr: true},
		{in: "-acme", wantErr: true},
		{in: "acme/re search", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseIdentity(tc.in)
			if tc.wantErr {
				if !errors.Is(err, ErrBadIdentity) {
					t.Errorf("got %+v, %v, want ErrBadIdentity", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %+v, %v, want %+v", got, err, tc.want)
			}
		})
	}
}

func TestValid(t *testing.T) {
	tests := []struct {
		name string
		id   Identity
		want bool
	}{
		{"org", Identity{Org: "acme"}, true},
		{"agent", Identity{Org: "acme", Team: "r", Agent: "a"}, true},
		{"zero", Identity{}, false},
		{"slash in a name", Identity{Org: "ac/me"}, false},
		{"agent without team", Identity{Org: "acme", Agent: "a"}, false},
		{"team without org", Identity{Team: "r"}, false},
		{"bad agent", Identity{Org: "acme", Team: "r", Agent: "a b"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.id.Valid(); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
