package retrieve_test

import (
	"testing"

	"toolrouter/access"
	"toolrouter/retrieve"
)

// TestPinnedMatchAsAccessLists: a tool is pinned exactly when an access list of the same patterns
// allows it (access.Hierarchy is the reference).
func TestPinnedMatchAsAccessLists(t *testing.T) {
	tools := []string{"calculator.add", "calculator.multiply", "clock.current_time", "fs.read_file",
		"fs.write_file", "github.read_issue", "calc.add", "a.b.c"}
	tests := []struct {
		name     string
		patterns []string
	}{
		{"server", []string{"calculator"}},
		{"server and star", []string{"calculator.*"}},
		{"one tool", []string{"clock.current_time"}},
		{"glob over tools", []string{"*.read_*"}},
		{"glob over servers", []string{"calc*"}},
		{"every tool", []string{"*"}},
		{"dotted tool name", []string{"a.b.c"}},
		{"several", []string{"clock.current_time", "fs", "*.read_issue"}},
		{"none", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pinned := retrieve.NewPinned(tc.patterns)
			allow := func(string) bool { return false }
			if len(tc.patterns) > 0 {
				h, err := access.New(access.Orgs{"o": {Allow: tc.patterns}})
				if err != nil {
					t.Fatal(err)
				}
				_, allow = h.Policy(access.Identity{Org: "o"})
			}
			for _, tool := range tools {
				if got, want := pinned.Match(tool), allow(tool); got != want {
					t.Errorf("%v: Match(%s) got %v, want %v (as the access list)", tc.patterns, tool, got, want)
				}
			}
			if got, want := pinned.Empty(), len(tc.patterns) == 0; got != want {
				t.Errorf("Empty: got %v, want %v", got, want)
			}
		})
	}
}
