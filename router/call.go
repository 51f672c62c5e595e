package router

import (
	"context"
	"errors"
	"fmt"
	"time"

	"toolrouter/access"
	"toolrouter/approval"
	"toolrouter/internal/errtext"
	"toolrouter/inventory"
	"toolrouter/schema"
	"toolrouter/trajectory"
)

// ErrUnknownTool is Call's error for a tool that does not exist or that the identity may not use:
// the two read the same, so nothing confirms that a hidden tool exists.
var ErrUnknownTool = errors.New("unknown tool")

// Call runs one tool call a caller wrote itself, with no model involved: the tool named by its
// qualified name ("server.tool"), with args. It applies what a routed call goes through: the
// identity's access policy, the tool's input schema (as phase 2's arguments are validated) and
// the execution path with its timeout, trace step and trajectory record. A tool the identity may
// not use, or that does not exist, is an error wrapping ErrUnknownTool; everything else (invalid
// arguments, an unavailable server, a failed or timed-out call) is reported in the Call's Error,
// and a tool that answered isError in its Result, as Route reports them.
func (r *Router) Call(ctx context.Context, id access.Identity, qualified string, args map[string]any) (*Call, error) {
	if r.set.Access != nil {
		if _, permits := r.set.Access.Policy(id); !permits(qualified) {
			return nil, fmt.Errorf("%w %q", ErrUnknownTool, qualified)
		}
	}
	snap := r.inv.Snapshot()
	tool, ok := snap.Tool(qualified)
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownTool, qualified)
	}
	return r.run(ctx, newJournal(r.set.Model, id.String(), r.set.Recorder, r.set.Redactor, nil), id, snap, tool, args, true), nil
}

// run validates args against the tool's schema and, when the tool's server is up, runs the call:
// through admit (secrets, auto_execute) when checked, directly for a call already approved.
func (r *Router) run(ctx context.Context, j *journal, id access.Identity, snap *inventory.Snapshot, tool *inventory.Tool,
	args map[string]any, checked bool) *Call {
	if args == nil {
		args = map[string]any{}
	}
	c := &Call{Step: 1, Round: 1, Server: tool.Server, Tool: tool.Name}
	switch {
	case !tool.Available || tool.Schema == nil:
		c.Error = &Error{Code: CodeToolUnavailable, Message: fmt.Sprintf("%s is unavailable: %s", tool.Qualified, tool.Unavailable)}
		return c
	case !serverUp(snap, tool.Server):
		c.Error = &Error{Code: CodeToolUnavailable, Message: fmt.Sprintf("%s is unavailable: server %s is not up", tool.Qualified, tool.Server)}
		return c
	}
	t0 := time.Now()
	if err := tool.Schema.ValidateValue(args); err != nil {
		var verr *schema.ValidationError
		msg := errtext.OneLine(err.Error())
		if errors.As(err, &verr) {
			msg = verr.Error()
		}
		c.Error = &Error{Code: CodeInvalidArguments, Message: "the arguments do not match the tool's input schema: " + msg}
		step := j.step(Step{Kind: StepArguments, Round: 1, Call: 1, Tool: tool.Qualified, StartMS: j.since(t0), Error: c.Error.Message})
		j.record("arguments", step, nil, nil, "", nil, msg, trajectory.Outcome{SchemaValid: boolPtr(false)})
		return c
	}
	c.Arguments = args
	if !checked || r.admit(ctx, j, id, tool, c) {
		r.execute(ctx, j, tool, c)
	}
	return c
}

// Decline uses up the token of a call held for id without running it: a person refused it, so
// nobody may approve it later. Its errors are Approve's.
func (r *Router) Decline(ctx context.Context, id access.Identity, token string) error {
	if r.set.Approvals == nil {
		return approval.ErrUnknownToken
	}
	held, err := r.set.Approvals.Take(ctx, token, id.String(), nil)
	if err != nil {
		if errors.Is(err, approval.ErrExpired) {
			r.count(approval.Expired, approval.Key(token), held)
		}
		return err
	}
	r.decided(ctx, approval.Key(token), held, id, approval.Declined)
	r.resume(approval.Key(token), approval.Declined)
	return nil
}

// ErrToolChanged is Approve's error for a tool whose definition changed since its call was held.
var ErrToolChanged = errors.New("the tool's definition changed since the call was held")

// ErrToolUnavailable is Approve's error for a held call whose tool cannot run now: its server is
// not up, or the tool is listed without a usable schema. The token stays unused, for a later try.
var ErrToolUnavailable = errors.New("the tool is unavailable")

// Approve runs the call held under token for id, exactly as it was held, once (see approval.Keeper
// for the token's refusals). Everything that could keep the call from running is checked before
// the token is used, so that a refused approval leaves it for a later try: the tool must still be
// one the identity may use, offered (not quarantined), with the definition it had when the call
// was held (ErrToolChanged otherwise), its server up and its schema usable (ErrToolUnavailable).
// The approved call then runs on a deadline of its own (router.execute_timeout, else
// router.deadline), not on what is left of ctx's: an approval that comes late in a request (a
// person answering an elicitation) still gets the whole time a call gets. A call that could not
// start even so (its server went down in between) is reported in its Error and logged: its token
// is used. The call is reported as Call reports one; held is what was approved. When the route
// that held the call still waits for the decision (Settings.ApprovalWait), that route runs it:
// c is nil.
func (r *Router) Approve(ctx context.Context, id access.Identity, token string) (c *Call, held approval.Call, err error) {
	if r.set.Approvals == nil {
		return nil, held, approval.ErrUnknownToken
	}
	var (
		snap = r.inv.Snapshot()
		tool *inventory.Tool
	)
	held, err = r.set.Approvals.Take(ctx, token, id.String(), func(h approval.Call) (err error) {
		tool, err = r.approvable(snap, id, h)
		return err
	})
	if err != nil {
		if errors.Is(err, approval.ErrExpired) {
			r.count(approval.Expired, approval.Key(token), held)
		}
		return nil, held, err
	}
	r.decided(ctx, approval.Key(token), held, id, approval.Approved)
	if r.resume(approval.Key(token), approval.Approved) {
		return nil, held, nil // the route that held it waits, and runs it
	}
	own, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.approvedTimeout())
	defer cancel()
	j := newJournal(r.set.Model, id.String(), r.set.Recorder, r.set.Redactor, nil)
	c = r.run(own, j, id, snap, tool, held.Arguments, false)
	if c.Error != nil && c.Result == nil {
		r.log.Warn("an approved call did not run; its token is used", "tool", tool.Qualified, "identity", id.String(),
			"held_in", held.RequestID, "code", c.Error.Code, "err", c.Error.Message)
	}
	return c, held, nil
}

// approvedTimeout is the deadline of an approved call's own: a tool call's timeout, or the
// router's deadline when tool calls have none.
func (r *Router) approvedTimeout() time.Duration {
	if r.set.ExecuteTimeout > 0 {
		return r.set.ExecuteTimeout
	}
	return r.set.Deadline
}

// serverUp reports whether the snapshot's server of that name is up.
func serverUp(snap *inventory.Snapshot, name string) bool {
	for i := range snap.Servers {
		if snap.Servers[i].Name == name {
			return snap.Servers[i].Status == inventory.StateUp
		}
	}
	return false
}
