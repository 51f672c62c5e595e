package access

import (
	"strings"
	"testing"
)

// TestAutoExecute: an identity's level is the strictest of the top level and its chain's; Runs
// follows MCP's hints; a level that is not one of the three is a configuration error naming its key.
func TestAutoExecute(t *testing.T) {
	h, err := New(Orgs{"acme": {AutoExecute: NotDestructive, Teams: map[string]Team{
		"ops":   {AutoExecute: All, Agents: map[string]Agent{"bot": {AutoExecute: ReadOnly}}},
		"plain": {},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id   Identity
		top  AutoExecute
		want AutoExecute
	}{
		{Identity{Org: "acme", Team: "ops"}, All, NotDestructive}, // a team cannot widen its org
		{Identity{Org: "acme", Team: "ops", Agent: "bot"}, All, ReadOnly},
		{Identity{Org: "acme", Team: "plain"}, ReadOnly, ReadOnly}, // nor the org the top level
		{Identity{Org: "other"}, NotDestructive, NotDestructive},
		{Identity{Org: "other"}, "", All},
	} {
		if got := h.AutoExecute(tc.id, tc.top); got != tc.want {
			t.Errorf("AutoExecute(%s, %q) = %q, want %q", tc.id, tc.top, got, tc.want)
		}
	}
	for _, tc := range []struct {
		level                 AutoExecute
		readOnly, destructive bool
		want                  bool
	}{
		{ReadOnly, true, true, true},
		{ReadOnly, false, false, false},
		{NotDestructive, false, false, true},
		{NotDestructive, false, true, false},
		{All, false, true, true},
	} {
		if got, reason := tc.level.Runs(tc.readOnly, tc.destructive); got != tc.want || (got == (reason != "")) {
			t.Errorf("%q.Runs(readOnly %v, destructive %v) = %v, %q; want %v with a reason when held", tc.level, tc.readOnly, tc.destructive, got, reason, tc.want)
		}
	}
	err = Orgs{"acme": {Teams: map[string]Team{"ops": {AutoExecute: "sometimes"}}}}.Validate()
	if err == nil || !strings.Contains(err.Error(), "orgs.acme.teams.ops.auto_execute") {
		t.Errorf("got %v, want an error naming orgs.acme.teams.ops.auto_execute", err)
	}
}
