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
	_, err := r.set.Approvals.Take(ctx, token, id.String(), nil)
	return err
}

// ErrToolChanged is Approve's error for a tool whose definition changed since its call was held.
var ErrToolChanged = errors.New("the tool's definition changed since the call was held")

// Approve runs the call held under token for id, exactly as it was held, once (see approval.Keeper
// for the token's refusals). The tool must still be one the identity may use, with the definition
// it had when the call was held (ErrToolChanged otherwise); the arguments are validated again.
// The call is reported as Call reports one; held is what was approved.
func (r *Router) Approve(ctx context.Context, id access.Identity, token string) (c *Call, held approval.Call, err error) {
	if r.set.Approvals == nil {
		return nil, held, approval.ErrUnknownToken
	}
	var (
		snap = r.inv.Snapshot()
		tool *inventory.Tool
	)
	// The tool is checked before the token is used: a refusal leaves the token for a later try.
	held, err = r.set.Approvals.Take(ctx, token, id.String(), func(h approval.Call) error {
		qualified := inventory.Qualify(h.Server, h.Tool)
		if r.set.Access != nil {
			if _, permits := r.set.Access.Policy(id); !permits(qualified) {
				return fmt.Errorf("%w %q", ErrUnknownTool, qualified)
			}
		}
		t, ok := snap.Tool(qualified)
		switch {
		case !ok:
			return fmt.Errorf("%w %q", ErrUnknownTool, qualified)
		case t.Pin != h.Pin:
			return fmt.Errorf("%w: %s", ErrToolChanged, qualified)
		}
		tool = t
		return nil
	})
	if err != nil {
		return nil, held, err
	}
	return r.run(ctx, newJournal(r.set.Model, id.String(), r.set.Recorder, r.set.Redactor, nil), id, snap, tool, held.Arguments, false), held, nil
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
