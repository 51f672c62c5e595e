package router

import (
	"context"

	"toolrouter/access"
)

// Phase1Prompt builds what phase 1 would be shown for query (whole inventory or shortlist), for
// benchmarks, and returns the system prompt's size and the shown tools' count.
func (r *Router) Phase1Prompt(ctx context.Context, query string) (bytes, tools int, err error) {
	snap := r.inv.Snapshot()
	ps := r.allowed(snap, access.Identity{})
	v, err := r.phase1View(ctx, snap, ps, query)
	if err != nil {
		return 0, 0, err
	}
	return len(v.text), len(v.tools), nil
}
