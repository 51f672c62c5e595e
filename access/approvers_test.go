package access

import (
	"strings"
	"testing"
)

// TestApprovers: an approvers list names an identity within one of its identities, one its glob
// matches (one level per "*"), or a key of the name it gives; an anonymous caller is named only
// through its identity. The deepest level of an identity's chain that names any wins, and the
// hierarchy knows who it names anywhere.
func TestApprovers(t *testing.T) {
	list := Approvers{Approvers: []string{"acme/ops", "acme/*/lead", "alice@acme"}}
	tests := []struct {
		name   string
		viewer Identity
		want   bool
	}{
		{"the team named", Identity{Org: "acme", Team: "ops"}, true},
		{"an agent within it", Identity{Org: "acme", Team: "ops", Agent: "bot"}, true},
		{"the org above it", Identity{Org: "acme"}, false},
		{"another team", Identity{Org: "acme", Team: "dev"}, false},
		{"the glob", Identity{Org: "acme", Team: "dev", Agent: "lead"}, true},
		{"the glob is one level", Identity{Org: "acme", Team: "lead"}, false},
		{"a key's name", Identity{Org: "beta", Name: "alice@acme"}, true},
		{"an anonymous caller of that name", Identity{Org: "beta", Name: "alice@acme", Anonymous: true}, false},
		{"another org's team of the same name", Identity{Org: "beta", Team: "ops"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := list.Names(tc.viewer); got != tc.want {
				t.Errorf("Names(%s %q): got %v, want %v", tc.viewer, tc.viewer.Name, got, tc.want)
			}
		})
	}
	// For a held call of acme's, a key's name counts only within acme: a key of beta that bears
	// the listed name decides nothing there.
	acme := Identity{Org: "acme", Team: "dev"}
	for _, tc := range []struct {
		viewer Identity
		want   bool
	}{
		{Identity{Org: "acme", Name: "alice@acme"}, true},
		{Identity{Org: "beta", Name: "alice@acme"}, false},
		{Identity{Org: "acme", Team: "ops"}, true},
	} {
		if got := list.NamesFor(tc.viewer, acme); got != tc.want {
			t.Errorf("NamesFor(%s %q, %s): got %v, want %v", tc.viewer, tc.viewer.Name, acme, got, tc.want)
		}
	}

	h, err := New(Orgs{
		"acme": {Approvers: Approvers{Approvers: []string{"acme/ops"}}, Teams: map[string]Team{
			"dev": {Approvers: Approvers{Approvers: []string{"acme/dev/lead"}}, Agents: map[string]Agent{"bot": {}}},
			"ops": {},
		}},
		"beta": {},
	})
	if err != nil {
		t.Fatal(err)
	}
	top := []string{"root"}
	for _, tc := range []struct {
		id   Identity
		want string
	}{
		{Identity{Org: "acme", Team: "ops"}, "acme/ops"},
		{Identity{Org: "acme", Team: "dev", Agent: "bot"}, "acme/dev/lead"},
		{Identity{Org: "beta"}, "root"},
		{Identity{Org: "unknown"}, "root"},
	} {
		if got := strings.Join(h.Approvers(tc.id, top).Approvers, ","); got != tc.want {
			t.Errorf("Approvers(%s): got %q, want %q", tc.id, got, tc.want)
		}
	}
	if !h.NamesApprover(Identity{Org: "acme", Team: "dev", Agent: "lead"}) || h.NamesApprover(Identity{Org: "beta"}) {
		t.Error("NamesApprover: want acme/dev/lead named, beta not")
	}
}

// TestApproversValidated: an approvers entry that is neither an identity, an identity glob nor a
// key's name is refused with its key.
func TestApproversValidated(t *testing.T) {
	for _, tc := range []struct {
		entry string
		bad   bool
	}{
		{"acme/ops", false}, {"acme/*/lead", false}, {"alice@acme", false}, {"acme", false},
		{"", true}, {"acme/ops/bot/extra", true}, {"acme/[", true}, {"has space", true}, {"acme//ops", true},
	} {
		err := Orgs{"acme": {Approvers: Approvers{Approvers: []string{tc.entry}}}}.Validate()
		if (err != nil) != tc.bad {
			t.Errorf("%q: got %v, want refused: %v", tc.entry, err, tc.bad)
		}
		if err != nil && !strings.Contains(err.Error(), "orgs.acme.approvers[0]") {
			t.Errorf("%q: got %v, want it to name orgs.acme.approvers[0]", tc.entry, err)
		}
	}
}
