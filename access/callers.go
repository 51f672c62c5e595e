package access

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// DefaultOrg is the org that requests without a credential act for, and the one that the flat
// callers lists move to.
const DefaultOrg = "default"

// Rules is an allow and a deny list: the shape of an entry of the callers map that orgs replaces
// (config.ToolFilter converts to it).
type Rules struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// FromCallers returns the orgs that replace the flat callers lists: callers.NAME becomes team NAME
// of org DefaultOrg, and callers."*" (the lists of callers without an entry) the lists of that org.
// One difference: the org's lists now also bound every team, where "*" applied only to callers
// without an entry.
func FromCallers(callers map[string]Rules) Orgs {
	org := Org{}
	for _, n := range slices.Sorted(maps.Keys(callers)) {
		r := callers[n]
		if n == "*" {
			org.Allow, org.Deny = r.Allow, r.Deny
			continue
		}
		if org.Teams == nil {
			org.Teams = map[string]Team{}
		}
		org.Teams[n] = Team{Allow: r.Allow, Deny: r.Deny}
	}
	return Orgs{DefaultOrg: org}
}

// CallersError is the error for a configuration that still has the flat callers lists: it says
// what replaces them and gives the orgs to paste (FromCallers).
func CallersError(callers map[string]Rules) error {
	orgs, _ := json.Marshal(FromCallers(callers)) // maps of strings and lists: cannot fail
	return &FieldError{Key: "callers", Reason: fmt.Sprintf(
		`callers is replaced by orgs: move callers.NAME to orgs.%[1]s.teams.NAME and callers."*" to orgs.%[1]s, `+
			`whose lists now bound every team; a request without a credential acts for org %[1]s, and its "caller" `+
			`picks a team of it (see docs/configuration.md#callers). For this configuration: "orgs": %[2]s`,
		DefaultOrg, orgs)}
}
