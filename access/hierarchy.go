package access

// Orgs is the hierarchy as configured (config key orgs), by org name.
type Orgs map[string]Org

// Org is one org: its lists bound every team and agent in it.
type Org struct {
	Allow []string        `koanf:"allow" json:"allow,omitempty"`
	Deny  []string        `koanf:"deny" json:"deny,omitempty"`
	Teams map[string]Team `koanf:"teams" json:"teams,omitempty"`
	// Limits are the org's rate limits, shared by every team and agent in it.
	Limits Limits `koanf:"limits" json:"limits,omitzero"`
	// AutoExecute narrows safety.auto_execute for the org ("" leaves it).
	AutoExecute AutoExecute `koanf:"auto_execute" json:"auto_execute,omitempty"`
	// HeldShare replaces safety's share of the held calls for each identity of the org.
	HeldShare `koanf:",squash"`
	// ApprovalWait replaces safety's approval_wait for the org.
	ApprovalWait `koanf:",squash"`
	// ApprovalWebhook replaces safety's approval_webhook for the org.
	ApprovalWebhook Webhook `koanf:"approval_webhook" json:"approval_webhook,omitzero"`
	// Approvers replaces safety's approvers for the org's held calls.
	Approvers `koanf:",squash"`
}

// Team is one team of an org: its lists narrow the org's.
type Team struct {
	Allow  []string         `koanf:"allow" json:"allow,omitempty"`
	Deny   []string         `koanf:"deny" json:"deny,omitempty"`
	Agents map[string]Agent `koanf:"agents" json:"agents,omitempty"`
	// Limits are the team's rate limits, shared by every agent in it.
	Limits Limits `koanf:"limits" json:"limits,omitzero"`
	// AutoExecute narrows the org's auto_execute for the team ("" leaves it).
	AutoExecute AutoExecute `koanf:"auto_execute" json:"auto_execute,omitempty"`
	// HeldShare replaces the org's share of the held calls for each identity of the team.
	HeldShare `koanf:",squash"`
	// ApprovalWait replaces the org's approval_wait for the team.
	ApprovalWait `koanf:",squash"`
	// Approvers replaces the org's approvers for the team's held calls.
	Approvers `koanf:",squash"`
}

// Agent is one agent of a team: its lists narrow the team's.
type Agent struct {
	Allow []string `koanf:"allow" json:"allow,omitempty"`
	Deny  []string `koanf:"deny" json:"deny,omitempty"`
	// Limits are the agent's rate limits.
	Limits Limits `koanf:"limits" json:"limits,omitzero"`
	// AutoExecute narrows the team's auto_execute for the agent ("" leaves it).
	AutoExecute AutoExecute `koanf:"auto_execute" json:"auto_execute,omitempty"`
	// HeldShare replaces the team's share of the held calls for the agent.
	HeldShare `koanf:",squash"`
	// ApprovalWait replaces the team's approval_wait for the agent.
	ApprovalWait `koanf:",squash"`
	// Approvers replaces the team's approvers for the agent's held calls.
	Approvers `koanf:",squash"`
}

// Has reports whether the hierarchy defines id's org, team and agent. With no orgs at all every
// identity is known (there is nothing to check it against); the zero Identity never is.
func (o Orgs) Has(id Identity) bool {
	if id.Depth() == 0 {
		return false
	}
	if len(o) == 0 {
		return true
	}
	org, ok := o[id.Org]
	if !ok || id.Team == "" {
		return ok
	}
	team, ok := org.Teams[id.Team]
	if !ok || id.Agent == "" {
		return ok
	}
	_, ok = team.Agents[id.Agent]
	return ok
}

// Hierarchy is the compiled hierarchy: the policy of every org, team and agent, built once. It is
// safe for concurrent use; a nil *Hierarchy has no orgs.
type Hierarchy struct {
	orgs     Orgs
	policies map[node]policy
}

// node is a path in the hierarchy.
type node struct{ org, team, agent string }

// policy is what one node may call.
type policy struct {
	name    string
	permits func(qualified string) bool
}

// AllName is the name of the policy that permits every tool: the only one with no restriction
// on any level of its chain.
const AllName = ""

// unknownName names the policy of an identity the hierarchy does not define: it permits nothing.
// Parentheses cannot occur in a path, so it names no node.
const unknownName = "(not in orgs)"

func permitAll(string) bool  { return true }
func permitNone(string) bool { return false }

// New validates orgs and compiles its policies; the error is Validate's.
func New(orgs Orgs) (*Hierarchy, error) {
	if err := orgs.Validate(); err != nil {
		return nil, err
	}
	h := &Hierarchy{orgs: orgs, policies: map[node]policy{}}
	for o, org := range orgs {
		orgLevel := newLevel(Identity{Org: o}, org.Allow, org.Deny)
		h.add(node{org: o}, orgLevel)
		for t, team := range org.Teams {
			teamLevel := newLevel(Identity{Org: o, Team: t}, team.Allow, team.Deny)
			h.add(node{org: o, team: t}, orgLevel, teamLevel)
			for a, agent := range team.Agents {
				h.add(node{o, t, a}, orgLevel, teamLevel, newLevel(Identity{Org: o, Team: t, Agent: a}, agent.Allow, agent.Deny))
			}
		}
	}
	return h, nil
}

// level is one node's own lists, compiled; nil matchers do not restrict.
type level struct {
	id    Identity
	allow *matcher // nil: no allow list, or one that allows everything
	deny  *matcher // nil: no deny list
}

func newLevel(id Identity, allow, deny []string) level {
	l := level{id: id}
	if m := compile(allow); m != nil && !m.all {
		l.allow = m
	}
	l.deny = compile(deny)
	return l
}

// add compiles the policy of the node whose chain, top first, is levels. The policy is named after
// the deepest level that restricts anything, so that identities with the same effective lists
// (an agent without lists of its own and its team) share a name, and a policy that restricts
// nothing is AllName.
func (h *Hierarchy) add(n node, levels ...level) {
	var (
		allows []*matcher
		denies []string
		name   = AllName
	)
	for _, l := range levels {
		if l.allow != nil {
			allows = append(allows, l.allow)
		}
		if l.deny != nil {
			denies = append(denies, l.deny.patterns...)
		}
		if l.allow != nil || l.deny != nil {
			name = l.id.String()
		}
	}
	if name == AllName {
		h.policies[n] = policy{name: AllName, permits: permitAll}
		return
	}
	deny := compile(denies)
	h.policies[n] = policy{name: name, permits: func(tool string) bool {
		if deny != nil && deny.match(tool) {
			return false
		}
		for _, a := range allows {
			if !a.match(tool) {
				return false
			}
		}
		return true
	}}
}

// Policy names the policy of id and says whether it permits a qualified tool name. The name is
// stable per identity path and shared by paths with the same effective lists, so prompts can be
// cached by it; AllName permits every tool. With no orgs every identity may call every tool; an
// identity the hierarchy does not define may call none.
func (h *Hierarchy) Policy(id Identity) (name string, permits func(qualified string) bool) {
	if h == nil || len(h.orgs) == 0 {
		return AllName, permitAll
	}
	p, ok := h.policies[node{id.Org, id.Team, id.Agent}]
	if !ok {
		return unknownName, permitNone
	}
	return p.name, p.permits
}

// Has reports whether the hierarchy defines id (see Orgs.Has).
func (h *Hierarchy) Has(id Identity) bool {
	if h == nil {
		return id.Depth() > 0
	}
	return h.orgs.Has(id)
}
