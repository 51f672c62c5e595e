package auth

import (
	"errors"
	"strings"
	"testing"

	"toolrouter/access"
)

func testHierarchy(t *testing.T) *access.Hierarchy {
	t.Helper()
	h, err := access.New(access.Orgs{
		"acme": {Teams: map[string]access.Team{
			"research": {Agents: map[string]access.Agent{"summariser": {}, "writer": {}}},
			"ops":      {Agents: map[string]access.Agent{"pager": {}}},
		}},
		"default": {Teams: map[string]access.Team{"kiosk": {}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestNarrow(t *testing.T) {
	h := testHierarchy(t)
	org := Identity{Org: "acme", Name: "k"}
	team := Identity{Org: "acme", Team: "research", Name: "k"}
	agent := Identity{Org: "acme", Team: "research", Agent: "summariser", Name: "k"}
	tests := []struct {
		name   string
		id     Identity
		caller string
		want   string // the identity, or the error's text
	}{
		{"no caller", team, "", "acme/research"},
		{"team names an agent", team, "summariser", "acme/research/summariser"},
		{"team names an agent by path", team, "acme/research/summariser", "acme/research/summariser"},
		{"team names itself", team, "acme/research", "acme/research"},
		{"team names an agent of another team", team, "pager", `caller "pager" does not narrow your identity acme/research: it may name one of its agents (AGENT or acme/research/AGENT)`},
		{"team names another team's agent by path", team, "acme/ops/pager", `caller "acme/ops/pager" does not narrow your identity acme/research`},
		{"team names its org", team, "acme", `caller "acme" does not narrow your identity acme/research`},
		{"team names an agent that does not exist", team, "ghost", `caller "ghost" does not narrow your identity acme/research`},
		{"org names a team", org, "ops", "acme/ops"},
		{"org names an agent", org, "ops/pager", "acme/ops/pager"},
		{"org names an agent by path", org, "acme/ops/pager", "acme/ops/pager"},
		{"org names another org", org, "default", `caller "default" does not narrow your identity acme: it may name one of its teams (TEAM) or their agents (TEAM/AGENT)`},
		{"agent by its own name", agent, "summariser", "acme/research/summariser"},
		{"agent names a sibling", agent, "writer", `caller "writer" does not narrow your identity acme/research/summariser: it may name only itself`},
		{"anonymous names a team of the default org", Anonymous(), "kiosk", "default/kiosk"},
		{"anonymous cannot leave the default org", Anonymous(), "acme/research", `caller "acme/research" does not narrow your identity default`},
		{"identity not in orgs", Identity{Org: "acme", Team: "sales"}, "", "your identity acme/sales is not in the access hierarchy"},
		{"garbage", team, "../../x", `caller "../../x" does not narrow your identity acme/research`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Narrow(tc.id, tc.caller, h)
			if err != nil {
				if !errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("got %v, want ErrForbidden containing %q", err, tc.want)
				}
				return
			}
			if got.String() != tc.want || got.Name != tc.id.Name || got.Anonymous != tc.id.Anonymous {
				t.Errorf("got %+v, want %s keeping name %q and anonymous %v", got, tc.want, tc.id.Name, tc.id.Anonymous)
			}
		})
	}
}

func TestNarrowWithoutOrgs(t *testing.T) {
	tests := []struct {
		name   string
		h      *access.Hierarchy
		id     Identity
		caller string
		want   string
	}{
		{"anonymous names any team of the default org", nil, Anonymous(), "cli", "default/cli"},
		{"a key's team names an agent", nil, Identity{Org: "acme", Team: "t"}, "bot", "acme/t/bot"},
		{"still only below", nil, Identity{Org: "acme", Team: "t", Agent: "bot"}, "other", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Narrow(tc.id, tc.caller, tc.h)
			if tc.want == "" {
				if !errors.Is(err, ErrForbidden) {
					t.Errorf("got %+v, %v, want ErrForbidden", got, err)
				}
				return
			}
			if err != nil || got.String() != tc.want {
				t.Errorf("got %+v, %v, want %s", got, err, tc.want)
			}
		})
	}

	h, err := access.New(access.Orgs{"acme": {}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Narrow(Anonymous(), "", h); !errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), `act for org "default"`) {
		t.Errorf("anonymous without a default org: got %v, want ErrForbidden naming org default", err)
	}
}
