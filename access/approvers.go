package access

import (
	"fmt"
	pathpkg "path"
	"regexp"
	"strings"
)

// Approvers names who may decide on the calls held for an identity at or below a level (key
// approvers of safety and of each level of orgs), beside the identity that asked, which always
// may. Each entry is an identity ("acme", "acme/ops": it and every identity below it), an
// identity glob ("acme/*/lead", path.Match's syntax, matched against the whole path), or an API
// key's name or token's subject ("alice@acme"). The deepest level that sets a list wins; with
// none set anywhere, admins decide (auth.admins).
type Approvers struct {
	Approvers []string `koanf:"approvers" json:"approvers,omitempty"`
}

// approverName is the form of a key's name or a token's subject an approver entry may give.
var approverName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$`)

// CheckApprover says what is wrong with an approvers entry; "" when nothing is.
func CheckApprover(p string) string {
	switch {
	case p == "":
		return "must not be empty"
	case strings.ContainsAny(p, globMeta):
		if _, err := pathpkg.Match(p, ""); err != nil {
			return fmt.Sprintf("bad identity glob %q: %v", p, err)
		}
		return ""
	case strings.Contains(p, "/"):
		if _, err := ParseIdentity(p); err != nil {
			return fmt.Sprintf("must be an identity, an identity glob or a key's name: %v", err)
		}
		return ""
	case !approverName.MatchString(p):
		return fmt.Sprintf("%q must be an identity, an identity glob or a key's name (letters, digits, '_', '.', '@' or '-')", p)
	}
	return ""
}

// Names reports whether the list names viewer: its identity is within an identity of the list or
// matches a glob, or its key's name (token's subject) is in it. An anonymous viewer is named only
// through its identity.
func (a Approvers) Names(viewer Identity) bool { return a.names(viewer, true) }

// NamesFor reports whether the list names viewer as an approver of owner's held calls: as Names,
// but a key's name (token's subject) counts only for a viewer of owner's org, so that a key of
// another org that happens to bear a listed name decides nothing here.
func (a Approvers) NamesFor(viewer, owner Identity) bool {
	return a.names(viewer, viewer.Org == owner.Org)
}

func (a Approvers) names(viewer Identity, byName bool) bool {
	path := viewer.String()
	for _, p := range a.Approvers {
		switch {
		case strings.ContainsAny(p, globMeta):
			if ok, _ := pathpkg.Match(p, path); ok {
				return true
			}
		case !viewer.Anonymous && viewer.Name != "" && p == viewer.Name:
			if byName {
				return true
			}
		default:
			if id, err := ParseIdentity(p); err == nil && viewer.Within(id) {
				return true
			}
		}
	}
	return false
}

// problems are the *FieldError values of a level's approvers; key is the level's koanf key.
func (a Approvers) problems(key string) []error {
	var errs []error
	for i, p := range a.Approvers {
		if r := CheckApprover(p); r != "" {
			errs = append(errs, &FieldError{Key: fmt.Sprintf("%s.approvers[%d]", key, i), Reason: r})
		}
	}
	return errs
}

// Approvers is who may decide on id's held calls beside id itself: the deepest level of its chain
// that sets a list, else top (safety's). An empty result leaves it to admins. An identity the
// hierarchy does not define gets top.
func (h *Hierarchy) Approvers(id Identity, top []string) Approvers {
	a := Approvers{Approvers: top}
	if h == nil {
		return a
	}
	org, ok := h.orgs[id.Org]
	if !ok {
		return a
	}
	set := func(l Approvers) {
		if len(l.Approvers) > 0 {
			a = l
		}
	}
	set(org.Approvers)
	if team, ok := org.Teams[id.Team]; ok && id.Team != "" {
		set(team.Approvers)
		if agent, ok := team.Agents[id.Agent]; ok && id.Agent != "" {
			set(agent.Approvers)
		}
	}
	return a
}

// NamesApprover reports whether any level of the hierarchy names viewer among its approvers.
func (h *Hierarchy) NamesApprover(viewer Identity) bool {
	if h == nil {
		return false
	}
	for _, org := range h.orgs {
		if org.Approvers.Names(viewer) {
			return true
		}
		for _, team := range org.Teams {
			if team.Approvers.Names(viewer) {
				return true
			}
			for _, agent := range team.Agents {
				if agent.Approvers.Names(viewer) {
					return true
				}
			}
		}
	}
	return false
}
