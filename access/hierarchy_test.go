package access

import (
	"testing"
)

func TestPolicy(t *testing.T) {
	h, err := New(testOrgs(t))
	if err != nil {
		t.Fatal(err)
	}
	id := func(s string) Identity {
		id, err := ParseIdentity(s)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	tests := []struct {
		name   string
		id     Identity
		tool   string
		want   bool
		policy string
	}{
		{"org allows all", id("acme"), "fs.read_file", true, "acme"},
		{"org deny glob", id("acme"), "memory.delete_entities", false, "acme"},
		{"team narrows org", id("acme/research"), "fs.read_file", false, "acme/research"},
		{"team allows a server by name", id("acme/research"), "clock.current_time", true, "acme/research"},
		{"team allows by exact name", id("acme/research"), "memory.read_graph", true, "acme/research"},
		{"org deny wins over team allow", id("acme/research"), "memory.delete_entities", false, "acme/research"},
		{"agent narrows team", id("acme/research/summariser"), "clock.current_time", false, "acme/research/summariser"},
		{"agent allow within team", id("acme/research/summariser"), "calculator.add", true, "acme/research/summariser"},
		{"agent deny wins over its allow", id("acme/research/summariser"), "calculator.divide", false, "acme/research/summariser"},
		{"agent without lists shares its team's policy", id("acme/research/reader"), "clock.current_time", true, "acme/research"},
		{"team deny of a server", id("acme/ops"), "calculator.add", false, "acme/ops"},
		{"team without allow inherits org", id("acme/ops"), "fs.read_file", true, "acme/ops"},
		{"agent allow within org and team", id("acme/ops/pager"), "clock.current_time", true, "acme/ops/pager"},
		{"agent allow cannot undo team deny", id("acme/ops/pager"), "calculator.add", false, "acme/ops/pager"},
		{"agent allow bounded by org deny", id("acme/ops/pager"), "memory.delete_entities", false, "acme/ops/pager"},
		{"child allow outside parent has no effect", id("globex/lab"), "calculator.add", false, "globex/lab"},
		{"child allow inside parent", id("globex/lab"), "clock.current_time", true, "globex/lab"},
		{"org without lists permits all", id("open"), "fs.write_file", true, AllName},
		{"unknown org permits nothing", id("initech"), "clock.current_time", false, unknownName},
		{"unknown team permits nothing", id("acme/sales"), "clock.current_time", false, unknownName},
		{"unknown agent permits nothing", id("acme/research/writer"), "calculator.add", false, unknownName},
		{"zero identity permits nothing", Identity{}, "clock.current_time", false, unknownName},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name, permits := h.Policy(tc.id)
			if got := permits(tc.tool); got != tc.want {
				t.Errorf("%s may call %s: got %v, want %v", tc.id, tc.tool, got, tc.want)
			}
			if name != tc.policy {
				t.Errorf("policy name: got %q, want %q", name, tc.policy)
			}
		})
	}
}

func TestPolicyWithoutOrgs(t *testing.T) {
	for _, h := range []*Hierarchy{nil, mustNew(t, nil), mustNew(t, Orgs{})} {
		name, permits := h.Policy(Identity{Org: "anyone"})
		if name != AllName || !permits("fs.write_file") {
			t.Errorf("no orgs: got policy %q permits %v, want %q and every tool", name, permits("fs.write_file"), AllName)
		}
		if !h.Has(Identity{Org: "anyone", Team: "t"}) || h.Has(Identity{}) {
			t.Errorf("no orgs: got Has %v for a team and %v for the zero identity, want true and false",
				h.Has(Identity{Org: "anyone", Team: "t"}), h.Has(Identity{}))
		}
	}
}

func mustNew(t *testing.T, orgs Orgs) *Hierarchy {
	t.Helper()
	h, err := New(orgs)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestHas(t *testing.T) {
	h := mustNew(t, testOrgs(t))
	tests := []struct {
		id   string
		want bool
	}{
		{"acme", true},
		{"acme/research", true},
		{"acme/research/summariser", true},
		{"acme/research/pager", false}, // an agent of another team
		{"acme/sales", false},
		{"initech", false},
		{"globex/lab", true},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			id, err := ParseIdentity(tc.id)
			if err != nil {
				t.Fatal(err)
			}
			if got := h.Has(id); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMatcher(t *testing.T) {
	tests := []struct {
		pattern, tool string
		want          bool
	}{
		{"*", "calculator.add", true},
		{"clock", "clock.current_time", true},
		{"clock", "clockwork.tick", false},
		{"clock.*", "clock.current_time", true},
		{"clock.*", "clockwork.tick", false},
		{"clock.current_time", "clock.current_time", true},
		{"clock.current_time", "clock.current_timezone", false},
		{"*.read_*", "fs.read_file", true},
		{"*.read_*", "fs.write_file", false},
		{"fs.read_?ile", "fs.read_file", true},
		{"calc*", "calculator.add", true},
		{"fs.[rw]*", "fs.write_file", true},
	}
	for _, tc := range tests {
		t.Run(tc.pattern+" "+tc.tool, func(t *testing.T) {
			if got := compile([]string{tc.pattern}).match(tc.tool); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
