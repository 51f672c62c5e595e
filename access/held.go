package access

import "fmt"

// HeldShare is one level's share of the calls held for approval (keys max_held_per_identity and
// max_held_bytes_per_identity of safety and of each level of orgs): what each identity at or
// below the level may keep awaiting approval at once, so that one caller fills its own share and
// not the store. Unlike auto_execute, a level may widen the share above it as well as narrow it:
// the deepest level that sets a field wins; 0 leaves it to the level above.
type HeldShare struct {
	// Calls is how many calls an identity may have awaiting approval at once.
	Calls int `koanf:"max_held_per_identity" json:"max_held_per_identity,omitempty"`
	// Bytes is how many bytes their held records (arguments included) may take together.
	Bytes int64 `koanf:"max_held_bytes_per_identity" json:"max_held_bytes_per_identity,omitempty"`
}

// Under returns s with the fields that level sets replaced by level's.
func (s HeldShare) Under(level HeldShare) HeldShare {
	if level.Calls > 0 {
		s.Calls = level.Calls
	}
	if level.Bytes > 0 {
		s.Bytes = level.Bytes
	}
	return s
}

// problems are the *FieldError values of a level's share; key is the level's koanf key.
func (s HeldShare) problems(key string) []error {
	var errs []error
	if s.Calls < 0 {
		errs = append(errs, &FieldError{Key: key + ".max_held_per_identity", Reason: fmt.Sprintf("must be >= 0 (0: the level above's), got %d", s.Calls)})
	}
	if s.Bytes < 0 {
		errs = append(errs, &FieldError{Key: key + ".max_held_bytes_per_identity", Reason: fmt.Sprintf("must be >= 0 (0: the level above's), got %d", s.Bytes)})
	}
	return errs
}

// HeldShare is id's share of the held calls under top (safety's): the deepest level of its chain
// that sets each field wins. An identity the hierarchy does not define gets top.
func (h *Hierarchy) HeldShare(id Identity, top HeldShare) HeldShare {
	if h == nil {
		return top
	}
	org, ok := h.orgs[id.Org]
	if !ok {
		return top
	}
	s := top.Under(org.HeldShare)
	if team, ok := org.Teams[id.Team]; ok && id.Team != "" {
		s = s.Under(team.HeldShare)
		if agent, ok := team.Agents[id.Agent]; ok && id.Agent != "" {
			s = s.Under(agent.HeldShare)
		}
	}
	return s
}
