package router

import (
	"context"
	"errors"
	"fmt"
	"time"

	"toolrouter/access"
	"toolrouter/approval"
	"toolrouter/inventory"
)

// Queue lists the held calls for the people who decide them, takes one by its public id
// (approval.Key) and records decisions; *approval.Keeper satisfies it.
type Queue interface {
	List(ctx context.Context, identity string, limit int, keep func(approval.Call) bool) ([]approval.Listed, error)
	TakeKey(ctx context.Context, key string, whose, check func(approval.Call) error) (approval.Call, error)
	Record(ctx context.Context, d approval.Decided) error
	Decisions(ctx context.Context, limit int) ([]approval.Decided, error)
}

// OutcomeHeld is what Settings.OnHeld is told when a call is held.
const OutcomeHeld approval.Decision = "held"

// ErrNotApprover is Decide's error for a viewer who may not decide on the call: neither the
// identity that asked, nor named in its approvers (nor an admin, when none are named).
var ErrNotApprover = errors.New("you may not decide on this call")

// ErrNoQueue is the error of Held, Decide and Decisions when no call is ever held, or the held
// calls cannot be listed.
var ErrNoQueue = errors.New("no calls are held for approval here")

// MaxListed bounds the held calls Held returns.
const MaxListed = 200

// Held returns the held calls viewer may decide (see Decide), unexpired and unused, soonest to
// expire first, at most MaxListed. admin is whether viewer has admin scope.
func (r *Router) Held(ctx context.Context, viewer access.Identity, admin bool) ([]approval.Listed, error) {
	q := r.queue()
	if q == nil {
		return nil, ErrNoQueue
	}
	only := viewer.String() // a viewer who approves nobody else's reads only its own
	if admin || r.approvesOthers(viewer) {
		only = ""
	}
	ls, err := q.List(ctx, only, MaxListed, func(c approval.Call) bool { return r.mayDecide(viewer, admin, c) })
	if err != nil {
		return nil, err
	}
	if ls == nil {
		ls = []approval.Listed{}
	}
	// A tool that accepts secrets may have been held with a credential in its arguments: only
	// the identity that asked sees it; approvers see it masked (the call runs as held).
	for i := range ls {
		if ls[i].Call.Identity != viewer.String() {
			if masked, ok := r.set.Redactor.CredentialsValue(ls[i].Call.Arguments).(map[string]any); ok {
				ls[i].Call.Arguments = masked
			}
		}
	}
	return ls, nil
}

// Decide approves or declines the call held under id (its public id, approval.Key) for viewer,
// as a person in the console does. Who may: the identity the call was held for, and the
// approvers its chain names (access.Approvers; admins when none is named); anyone else is
// ErrNotApprover. An approval makes the checks Approve makes, all before the call's record is
// used (a refused one leaves it for a later try), and runs the call on a deadline of its own, as
// the identity it was held for; when its route waits for the decision, that route runs it and c
// is nil. A decline uses the record up unrun. The decision is recorded, with who made it.
func (r *Router) Decide(ctx context.Context, viewer access.Identity, admin bool, id string, d approval.Decision) (c *Call, held approval.Call, err error) {
	q := r.queue()
	if q == nil {
		return nil, held, ErrNoQueue
	}
	if d != approval.Approved && d != approval.Declined {
		return nil, held, fmt.Errorf("deciding %q: want %q or %q", d, approval.Approved, approval.Declined)
	}
	var (
		snap  = r.inv.Snapshot()
		tool  *inventory.Tool
		owner access.Identity
	)
	held, err = q.TakeKey(ctx, id, func(h approval.Call) error {
		if !r.mayDecide(viewer, admin, h) {
			return ErrNotApprover
		}
		return nil
	}, func(h approval.Call) error {
		var err error
		if owner, err = access.ParseIdentity(h.Identity); err != nil && h.Identity != "" {
			return fmt.Errorf("reading the held call's identity: %w", err)
		}
		if d == approval.Declined {
			return nil
		}
		tool, err = r.approvable(snap, owner, h)
		return err
	})
	if err != nil {
		if errors.Is(err, approval.ErrExpired) {
			r.count(approval.Expired, id, held)
		}
		return nil, held, err
	}
	r.decided(ctx, id, held, viewer, d)
	if r.resume(id, d) || d == approval.Declined {
		return nil, held, nil // the route that held it waits, and runs it (or goes on without it)
	}
	own, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.approvedTimeout())
	defer cancel()
	j := newJournal(r.set.Model, owner.String(), r.set.Recorder, r.set.Redactor, nil)
	c = r.run(own, j, owner, snap, tool, held.Arguments, false)
	if c.Error != nil && c.Result == nil {
		r.log.Warn("an approved call did not run; its record is used", "tool", tool.Qualified, "identity", owner.String(),
			"decided_by", viewer.String(), "held_in", held.RequestID, "code", c.Error.Code, "err", c.Error.Message)
	}
	return c, held, nil
}

// Decisions returns the newest decisions on held calls, at most limit, newest first, with the
// calls that expired undecided. Admins only: they name every identity's calls.
func (r *Router) Decisions(ctx context.Context, limit int) ([]approval.Decided, error) {
	q := r.queue()
	if q == nil {
		return nil, ErrNoQueue
	}
	ds, err := q.Decisions(ctx, limit)
	if err != nil {
		return nil, err
	}
	if ds == nil {
		ds = []approval.Decided{}
	}
	return ds, nil
}

// approvable checks that the held call h may run now for id, as Approve does before it uses a
// token: the tool is one id may use, offered, with the definition it had when held, its server
// up and its schema usable.
func (r *Router) approvable(snap *inventory.Snapshot, id access.Identity, h approval.Call) (*inventory.Tool, error) {
	qualified := inventory.Qualify(h.Server, h.Tool)
	if r.set.Access != nil {
		if _, permits := r.set.Access.Policy(id); !permits(qualified) {
			return nil, fmt.Errorf("%w %q", ErrUnknownTool, qualified)
		}
	}
	t, ok := snap.Tool(qualified)
	switch {
	case !ok:
		return nil, fmt.Errorf("%w %q", ErrUnknownTool, qualified)
	case t.Pin != h.Pin:
		return nil, fmt.Errorf("%w: %s", ErrToolChanged, qualified)
	case !t.Available || t.Schema == nil:
		return nil, fmt.Errorf("%w: %s: %s", ErrToolUnavailable, qualified, t.Unavailable)
	case !serverUp(snap, t.Server):
		return nil, fmt.Errorf("%w: %s: server %s is not up", ErrToolUnavailable, qualified, t.Server)
	}
	return t, nil
}

// mayDecide reports whether viewer may decide on the held call c: it is the identity that asked,
// or named among the approvers of c's identity, or, when none are named, an admin.
func (r *Router) mayDecide(viewer access.Identity, admin bool, c approval.Call) bool {
	if viewer.String() == c.Identity {
		return true
	}
	owner, err := access.ParseIdentity(c.Identity)
	if err != nil {
		return admin && len(r.set.Approvers) == 0
	}
	a := access.Approvers{Approvers: r.set.Approvers}
	if r.set.Access != nil {
		a = r.set.Access.Approvers(owner, r.set.Approvers)
	}
	if len(a.Approvers) == 0 {
		return admin
	}
	return a.NamesFor(viewer, owner)
}

// approvesOthers reports whether viewer is named among any approvers: then its listing reads
// every held call, and keeps those it may decide.
func (r *Router) approvesOthers(viewer access.Identity) bool {
	if (access.Approvers{Approvers: r.set.Approvers}).Names(viewer) {
		return true
	}
	return r.set.Access != nil && r.set.Access.NamesApprover(viewer)
}

// decided records d on the held call under key, made by who (the zero Identity: nobody, for a
// call withdrawn), and counts it. A failure to record is logged: the decision stands.
func (r *Router) decided(ctx context.Context, key string, held approval.Call, who access.Identity, d approval.Decision) {
	r.count(d, key, held)
	q := r.queue()
	if q == nil {
		return
	}
	by := who.String()
	if who.Name != "" && !who.Anonymous {
		by += " " + who.Name
	}
	rec, cancel := context.WithTimeout(context.WithoutCancel(ctx), withdrawTimeout)
	defer cancel()
	err := q.Record(rec, approval.Decided{ID: key, Outcome: d, By: by, RequestID: held.RequestID, Identity: held.Identity,
		Server: held.Server, Tool: held.Tool, At: time.Now().UTC().Truncate(time.Millisecond)})
	if err != nil {
		r.log.Warn("recording a decision on a held call", "err", err, "decision", d, "tool", inventory.Qualify(held.Server, held.Tool))
	}
}

// count tells Settings.OnHeld of a held call's outcome.
func (r *Router) count(d approval.Decision, key string, held approval.Call) {
	if r.set.OnHeld != nil {
		r.set.OnHeld(d, key, held)
	}
}

// queue is Approvals as a Queue (*approval.Keeper is both); nil when it is not one.
func (r *Router) queue() Queue {
	q, _ := r.set.Approvals.(Queue)
	return q
}
