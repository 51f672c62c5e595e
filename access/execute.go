package access

import "fmt"

// AutoExecute is which tool calls run without a person's approval (safety.auto_execute, and
// auto_execute on each level of orgs): a call its level does not cover is held until approved.
// The levels narrow as the lists do: an identity gets the strictest of the top level and every
// level of its chain.
type AutoExecute string

// Levels of AutoExecute, strictest first.
const (
	// ReadOnly runs only tools whose annotations say readOnlyHint.
	ReadOnly AutoExecute = "read_only"
	// NotDestructive also runs tools that say destructiveHint false (MCP's default for an absent
	// destructiveHint is true, so a tool that says nothing is held).
	NotDestructive AutoExecute = "not_destructive"
	// All runs every call.
	All AutoExecute = "all"
)

// AutoExecutes are the levels, strictest first.
var AutoExecutes = []AutoExecute{ReadOnly, NotDestructive, All}

// rank orders the levels, strictest first; -1 for "" (unset) and unknown values.
func (a AutoExecute) rank() int {
	for i, l := range AutoExecutes {
		if l == a {
			return i
		}
	}
	return -1
}

// Narrow returns the strictest of levels, ignoring unset ones; All when every one is unset.
func Narrow(levels ...AutoExecute) AutoExecute {
	out := All
	for _, l := range levels {
		if r := l.rank(); r >= 0 && r < out.rank() {
			out = l
		}
	}
	return out
}

// Runs reports whether a tool with these hints (as the inventory resolves them, MCP's defaults
// applied) runs unattended under a; when it does not, reason says why, for the caller.
func (a AutoExecute) Runs(readOnly, destructive bool) (ok bool, reason string) {
	switch {
	case readOnly || a == All:
		return true, ""
	case a == NotDestructive && !destructive:
		return true, ""
	case a == NotDestructive:
		return false, fmt.Sprintf("the tool may be destructive (destructiveHint) and auto_execute is %q", a)
	default:
		return false, fmt.Sprintf("the tool is not read-only (readOnlyHint) and auto_execute is %q", a)
	}
}

// validAutoExecute is the reason a configured level is wrong, "" when it is valid or unset.
func validAutoExecute(a AutoExecute) string {
	if a == "" || a.rank() >= 0 {
		return ""
	}
	return fmt.Sprintf("must be one of %q, got %q", AutoExecutes, a)
}

// AutoExecute is the level of id's chain in the hierarchy under top (safety.auto_execute): the
// strictest of top and each level's own. An identity the hierarchy does not define gets top.
func (h *Hierarchy) AutoExecute(id Identity, top AutoExecute) AutoExecute {
	if h == nil {
		return Narrow(top)
	}
	org, ok := h.orgs[id.Org]
	if !ok {
		return Narrow(top)
	}
	levels := []AutoExecute{top, org.AutoExecute}
	if team, ok := org.Teams[id.Team]; ok && id.Team != "" {
		levels = append(levels, team.AutoExecute)
		if agent, ok := team.Agents[id.Agent]; ok && id.Agent != "" {
			levels = append(levels, agent.AutoExecute)
		}
	}
	return Narrow(levels...)
}
