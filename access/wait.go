package access

import (
	"fmt"
	"time"

	"toolrouter/config/duration"
)

// ApprovalWait is how long a route waits for a person's decision on a call it holds (key
// approval_wait of safety and of each level of orgs): approved, the call runs and the route goes
// on with its result; declined or unanswered, it goes on without it. 0 answers at once with the
// call held. Like the shares, the deepest level that sets it (above 0) wins.
type ApprovalWait struct {
	Wait duration.Duration `koanf:"approval_wait" json:"approval_wait,omitempty"`
}

// problems are the *FieldError values of a level's wait; key is the level's koanf key.
func (w ApprovalWait) problems(key string) []error {
	if w.Wait < 0 {
		return []error{&FieldError{Key: key + ".approval_wait", Reason: fmt.Sprintf("must be >= 0 (0: the level above's), got %s", w.Wait)}}
	}
	return nil
}

// ApprovalWait is id's approval wait under top (safety's): the deepest level of its chain that
// sets one wins. An identity the hierarchy does not define gets top.
func (h *Hierarchy) ApprovalWait(id Identity, top time.Duration) time.Duration {
	if h == nil {
		return top
	}
	org, ok := h.orgs[id.Org]
	if !ok {
		return top
	}
	w := top
	set := func(l ApprovalWait) {
		if l.Wait > 0 {
			w = l.Wait.D()
		}
	}
	set(org.ApprovalWait)
	if team, ok := org.Teams[id.Team]; ok && id.Team != "" {
		set(team.ApprovalWait)
		if agent, ok := team.Agents[id.Agent]; ok && id.Agent != "" {
			set(agent.ApprovalWait)
		}
	}
	return w
}
