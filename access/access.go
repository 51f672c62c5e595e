// Package access owns the org/team/agent hierarchy and the tool policy each identity in it gets.
//
// An Identity is a path in the hierarchy: an org, a team of that org, or an agent of that team,
// written "org", "org/team" or "org/team/agent". Each level has allow and deny lists of qualified
// tool names ("clock.current_time"), path.Match globs ("calculator.*", "*") or server names alone
// ("clock", every tool of that server). What an identity may call is the intersection down its
// chain: a tool must pass the org's lists, then the team's, then the agent's, so a child can only
// narrow its parent. At each level deny wins over allow, and an empty allow list leaves that level
// unrestricted (it inherits its parent's).
//
// The package does not establish identities (package auth does) and does not decide which HTTP
// status a refusal becomes.
package access

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Identity is who a request acts for: a path in the hierarchy (Org, Team within it, Agent within
// that), a prefix of which may be empty from the right, and how it was established.
type Identity struct {
	Org   string
	Team  string
	Agent string
	// Name is the API key's name or the token's subject: for logs, never for policy.
	Name string
	// Anonymous is set for a request that came without a credential.
	Anonymous bool
}

// String returns the identity's path, "org", "org/team" or "org/team/agent"; "" for the zero
// Identity. It names the identity in logs, traces and usage.
func (id Identity) String() string {
	switch {
	case id.Agent != "":
		return id.Org + "/" + id.Team + "/" + id.Agent
	case id.Team != "":
		return id.Org + "/" + id.Team
	}
	return id.Org
}

// Depth is the number of levels of the path: 1 for an org, 2 for a team, 3 for an agent.
func (id Identity) Depth() int {
	switch {
	case id.Agent != "":
		return 3
	case id.Team != "":
		return 2
	case id.Org != "":
		return 1
	}
	return 0
}

// Within reports whether id is prefix or below it in the hierarchy ("acme/ops/bot" is within
// "acme" and "acme/ops"). The zero prefix contains nothing.
func (id Identity) Within(prefix Identity) bool {
	switch prefix.Depth() {
	case 1:
		return id.Org == prefix.Org
	case 2:
		return id.Org == prefix.Org && id.Team == prefix.Team
	case 3:
		return id.Org == prefix.Org && id.Team == prefix.Team && id.Agent == prefix.Agent
	}
	return false
}

// Valid reports whether id is a path of valid names: an org, optionally a team of it, and
// optionally an agent of that team (see ParseIdentity for the form of a name).
func (id Identity) Valid() bool {
	switch {
	case !name.MatchString(id.Org):
		return false
	case id.Team == "":
		return id.Agent == ""
	}
	return name.MatchString(id.Team) && (id.Agent == "" || name.MatchString(id.Agent))
}

// name is the form of an org, team or agent name in configuration: it is a koanf key, so it has
// no dot, and a path segment, so no slash.
var name = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// ErrBadIdentity is returned by ParseIdentity for a string that is not an identity path.
var ErrBadIdentity = errors.New("bad identity")

// ParseIdentity parses "org", "org/team" or "org/team/agent"; each name is letters, digits, '_'
// and '-' (64 at most, starting with a letter or digit).
func ParseIdentity(s string) (Identity, error) {
	parts := strings.Split(s, "/")
	if len(parts) > 3 {
		return Identity{}, fmt.Errorf("%w %q: want org, org/team or org/team/agent", ErrBadIdentity, s)
	}
	for _, p := range parts {
		if !name.MatchString(p) {
			return Identity{}, fmt.Errorf("%w %q: %s", ErrBadIdentity, s, nameRule(p))
		}
	}
	id := Identity{Org: parts[0]}
	if len(parts) > 1 {
		id.Team = parts[1]
	}
	if len(parts) > 2 {
		id.Agent = parts[2]
	}
	return id, nil
}

// nameRule says why p is not a valid name.
func nameRule(p string) string {
	if p == "" {
		return "a name is empty"
	}
	return fmt.Sprintf("name %q must be letters, digits, '_' or '-' (at most 64, starting with a letter or digit)", p)
}
