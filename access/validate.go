package access

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// FieldError is one invalid configuration value: Key is the koanf key
// ("orgs.acme.teams.research.allow[2]"), Reason what is wrong with it. Package auth reports its
// configuration's problems with it too.
type FieldError struct {
	Key    string
	Reason string
}

func (e *FieldError) Error() string { return e.Key + ": " + e.Reason }

// Validate checks every name and pattern and returns all problems as *FieldError values joined
// with errors.Join, sorted by message; nil when o is valid.
func (o Orgs) Validate() error {
	var errs []error
	add := func(key, reason string) { errs = append(errs, &FieldError{Key: key, Reason: reason}) }
	lists := func(key string, allow, deny []string) {
		for i, p := range allow {
			if r := checkPattern(p); r != "" {
				add(fmt.Sprintf("%s.allow[%d]", key, i), r)
			}
		}
		for i, p := range deny {
			if r := checkPattern(p); r != "" {
				add(fmt.Sprintf("%s.deny[%d]", key, i), r)
			}
		}
	}
	limits := func(key string, l Limits) {
		errs = append(errs, l.problems(key+".limits")...)
	}
	shares := func(key string, s HeldShare, w ApprovalWait) {
		errs = append(errs, s.problems(key)...)
		errs = append(errs, w.problems(key)...)
	}
	auto := func(key string, a AutoExecute) {
		if r := validAutoExecute(a); r != "" {
			add(key+".auto_execute", r)
		}
	}
	names := func(key, n string) {
		if !name.MatchString(n) {
			add(key, nameRule(n))
		}
	}
	for o, org := range o {
		key := "orgs." + o
		names(key, o)
		lists(key, org.Allow, org.Deny)
		limits(key, org.Limits)
		auto(key, org.AutoExecute)
		shares(key, org.HeldShare, org.ApprovalWait)
		errs = append(errs, org.ApprovalWebhook.Problems(key+".approval_webhook")...)
		errs = append(errs, org.Approvers.problems(key)...)
		for t, team := range org.Teams {
			key := key + ".teams." + t
			names(key, t)
			lists(key, team.Allow, team.Deny)
			limits(key, team.Limits)
			auto(key, team.AutoExecute)
			shares(key, team.HeldShare, team.ApprovalWait)
			errs = append(errs, team.Approvers.problems(key)...)
			for a, agent := range team.Agents {
				key := key + ".agents." + a
				names(key, a)
				lists(key, agent.Allow, agent.Deny)
				limits(key, agent.Limits)
				auto(key, agent.AutoExecute)
				shares(key, agent.HeldShare, agent.ApprovalWait)
				errs = append(errs, agent.Approvers.problems(key)...)
			}
		}
	}
	return sortedJoin(errs)
}

// sortedJoin joins errs with errors.Join sorted by message, so that a report does not change
// from run to run with map order; nil for none.
func sortedJoin(errs []error) error {
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}
