package auth

import (
	"strings"

	"toolrouter/access"
)

// Narrow returns the identity a request acts for: id, the credential's, narrowed by the request's
// caller field. The caller may name id itself, or an identity below it, absolutely
// ("acme/research/summariser") or relative to id ("summariser" for team acme/research,
// "research" or "research/summariser" for org acme); an agent may also give its own name. The
// result must be in h. Anything else fails with ErrForbidden, and so does an id that h does not
// define. Messages name only id and what the caller sent, so they reveal nothing about teams or
// agents beyond id.
func Narrow(id Identity, caller string, h *access.Hierarchy) (Identity, error) {
	if !h.Has(id) {
		if id.Anonymous {
			return Identity{}, fail(ErrForbidden, "requests without a credential act for org %q, which orgs does not define", id.Org)
		}
		return Identity{}, fail(ErrForbidden, "your identity %s is not in the access hierarchy", id)
	}
	self := id.String()
	if caller == "" || caller == self || (id.Depth() == 3 && caller == id.Agent) {
		return id, nil
	}
	rel, ok := strings.CutPrefix(caller, self+"/")
	if !ok {
		rel = caller
	}
	target, err := access.ParseIdentity(self + "/" + rel)
	if err == nil && h.Has(target) {
		target.Name, target.Anonymous = id.Name, id.Anonymous
		return target, nil
	}
	var may string
	switch id.Depth() {
	case 1:
		may = "one of its teams (TEAM) or their agents (TEAM/AGENT)"
	case 2:
		may = "one of its agents (AGENT or " + self + "/AGENT)"
	default:
		may = "only itself"
	}
	return Identity{}, fail(ErrForbidden, "caller %q does not narrow your identity %s: it may name %s", caller, self, may)
}
