package access

import (
	"errors"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		orgs Orgs
		want []string // each FieldError's text, sorted
	}{
		{"valid", testOrgs(t), nil},
		{"bad pattern names its key path", Orgs{"acme": {Teams: map[string]Team{
			"research": {Allow: []string{"calculator.*", "clock", "[x"}},
		}}}, []string{`orgs.acme.teams.research.allow[2]: bad pattern "[x": syntax error in pattern`}},
		{"every problem, sorted", Orgs{
			"acme": {Deny: []string{""}, Teams: map[string]Team{
				"re.search": {Agents: map[string]Agent{"bot": {Allow: []string{"a/b"}}}},
			}},
			"bad name": {},
			"lim": {Limits: Limits{RequestsPerMinute: -1}, Teams: map[string]Team{
				"t": {Limits: Limits{Concurrent: -2}, Agents: map[string]Agent{"a": {Limits: Limits{TokensPerDay: -3, TokensPerMinute: 5}}}},
			}},
		}, []string{
			`orgs.acme.deny[0]: must not be empty`,
			`orgs.acme.teams.re.search.agents.bot.allow[0]: bad pattern "a/b": tool names have no '/'`,
			`orgs.acme.teams.re.search: name "re.search" must be letters, digits, '_' or '-' (at most 64, starting with a letter or digit)`,
			`orgs.bad name: name "bad name" must be letters, digits, '_' or '-' (at most 64, starting with a letter or digit)`,
			`orgs.lim.limits.requests_per_minute: must be >= 0 (0: no limit), got -1`,
			`orgs.lim.teams.t.agents.a.limits.tokens_per_day: must be >= 0 (0: no limit), got -3`,
			`orgs.lim.teams.t.limits.concurrent: must be >= 0 (0: no limit), got -2`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.orgs.Validate()
			got := fieldErrors(t, err)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if _, nerr := New(tc.orgs); (nerr == nil) != (err == nil) {
				t.Errorf("New: got %v, want Validate's error", nerr)
			}
		})
	}
}

// fieldErrors returns the texts of the *FieldError values joined in err.
func fieldErrors(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("got %T, want joined errors", err)
	}
	var out []string
	for _, e := range joined.Unwrap() {
		var fe *FieldError
		if !errors.As(e, &fe) {
			t.Fatalf("got %T (%v), want *FieldError", e, e)
		}
		out = append(out, fe.Error())
	}
	return out
}
