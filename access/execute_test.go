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

// TestHeldShare: an identity's share of the held calls is safety's, each field replaced by the
// deepest level of its chain that sets it; an identity outside orgs gets safety's; a negative
// share is a configuration error naming its key.
func TestHeldShare(t *testing.T) {
	orgs := Orgs{"acme": {HeldShare: HeldShare{Calls: 500}, Teams: map[string]Team{
		"ops": {HeldShare: HeldShare{Bytes: 1 << 10}, Agents: map[string]Agent{"bot": {HeldShare: HeldShare{Calls: 5}}}},
	}}}
	h, err := New(orgs)
	if err != nil {
		t.Fatal(err)
	}
	top := HeldShare{Calls: 100, Bytes: 1 << 20}
	for _, tc := range []struct {
		id   Identity
		want HeldShare
	}{
		{Identity{Org: "acme"}, HeldShare{Calls: 500, Bytes: 1 << 20}},
		{Identity{Org: "acme", Team: "ops"}, HeldShare{Calls: 500, Bytes: 1 << 10}},
		{Identity{Org: "acme", Team: "ops", Agent: "bot"}, HeldShare{Calls: 5, Bytes: 1 << 10}},
		{Identity{Org: "globex"}, top},
	} {
		if got := h.HeldShare(tc.id, top); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.id, got, tc.want)
		}
	}
	_, err = New(Orgs{"acme": {HeldShare: HeldShare{Calls: -1}}})
	if err == nil || !strings.Contains(err.Error(), "orgs.acme.max_held_per_identity") {
		t.Errorf("a negative share: got %v, want an error naming orgs.acme.max_held_per_identity", err)
	}
}
