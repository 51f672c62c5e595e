package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"toolrouter/access"
	"toolrouter/approval"
	"toolrouter/internal/errtext"
	"toolrouter/inventory"
	"toolrouter/redact"
)

// Approvals holds the calls an identity's auto_execute level does not run, and gives a held call
// back for its token; *approval.Keeper satisfies it.
type Approvals interface {
	Hold(ctx context.Context, c approval.Call, share approval.Share) (token string, expires time.Time, err error)
	Take(ctx context.Context, token, identity string, check func(approval.Call) error) (approval.Call, error)
	// Withdraw uses up the token of the call held under key, unrun.
	Withdraw(ctx context.Context, key string) (bool, error)
}

// Pending is a call that was validated but not run: it waits for a person's approval. Token,
// presented once to POST /v1/approve by the same identity before ExpiresAt, runs exactly this
// call with these arguments.
type Pending struct {
	Step      int            `json:"step"`
	Server    string         `json:"server"`
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
	Reason    string         `json:"reason"`
	Token     string         `json:"token"`
	ExpiresAt time.Time      `json:"expires_at"`
}

// Codes of the calls the safety checks stop.
const (
	// CodeApprovalRequired: the call awaits approval (see Outcome.Pending).
	CodeApprovalRequired = "approval_required"
	// CodeSecretInArguments: the arguments carry a credential and the tool does not accept one.
	CodeSecretInArguments = "secret_in_arguments"
	// CodeNotOffered: a round after the first chose a tool round 1 was not offered, and
	// safety.results_may_widen is off.
	CodeNotOffered = "not_offered"
	// CodeApprovalsFull: the call needs approval, but approval.MaxHeld calls already await it,
	// or the identity's own calls awaiting approval fill its share (approval.Share).
	CodeApprovalsFull = "approvals_full"
	// CodeHeldArgumentsTooLarge: the call needs approval, but its arguments are larger than a held
	// call may keep (safety.max_held_argument_bytes).
	CodeHeldArgumentsTooLarge = "held_arguments_too_large"
	// CodeApprovalUnavailable: the call needs approval, but the store of held calls failed.
	CodeApprovalUnavailable = "approval_unavailable"
	// CodeDeclined: a person declined the held call; it did not run.
	CodeDeclined = "declined"
	// CodeApprovalTimeout: the route waited safety.approval_wait for a decision and got none; the
	// call did not run, and stays held (see Outcome.Pending).
	CodeApprovalTimeout = "approval_timeout"
	// CodeWithdrawn: the client went away while the route waited for a decision; the call's
	// token is used up, and it never runs.
	CodeWithdrawn = "withdrawn"
)

// Trace steps of the safety checks.
const (
	StepHeld     StepKind = "held"     // a call awaits approval
	StepRefused  StepKind = "refused"  // a call was refused: a secret in its arguments, or a tool outside round 1's
	StepApproved StepKind = "approved" // a person approved a held call while its route waited
	StepDeclined StepKind = "declined" // a person declined a held call while its route waited, or its client left
)

// EventApprovalRequired is streamed when a call is held; its Pending says what awaits approval.
const EventApprovalRequired EventType = "approval_required"

// autoExecute is the identity's auto_execute level: the configured top level narrowed by its
// chain in the hierarchy.
func (r *Router) autoExecute(id access.Identity) access.AutoExecute {
	if r.set.Access == nil {
		return access.Narrow(r.set.AutoExecute)
	}
	return r.set.Access.AutoExecute(id, r.set.AutoExecute)
}

// heldShare is the identity's share of the held calls: the configured one, its calls and bytes
// as its chain in the hierarchy sets them.
func (r *Router) heldShare(id access.Identity) approval.Share {
	s := r.set.HeldShare
	if r.set.Access != nil {
		h := r.set.Access.HeldShare(id, access.HeldShare{Calls: s.Calls, Bytes: s.Bytes})
		s.Calls, s.Bytes = h.Calls, h.Bytes
	}
	return s
}

// admit applies the checks a call with arguments goes through before it runs: a secret in its
// arguments refuses it, and a level that does not run it unattended holds it. It reports whether
// the call may run now; otherwise c.Error says why (and a held call is in the outcome's Pending).
func (r *Router) admit(ctx context.Context, j *journal, id access.Identity, tool *inventory.Tool, c *Call) bool {
	if r.refuseSecret(j, tool, c) {
		j.callEvent(EventToolResult, c.Round, c)
		return false
	}
	return r.hold(ctx, j, id, tool, c)
}

// refuseSecret refuses a call whose arguments carry a credential its tool does not accept: it
// sets c.Error, masks the arguments and traces the refusal (the caller reports the result). The
// arguments go on to the response, the console, the trajectory, the events and the next round's
// prompt: none of them may carry the credential, in any form it was found in.
func (r *Router) refuseSecret(j *journal, tool *inventory.Tool, c *Call) bool {
	if tool.AcceptsSecrets {
		return false
	}
	kind, path, found := r.secretIn(c.Arguments)
	if !found {
		return false
	}
	if masked, ok := r.set.Redactor.CredentialsValue(c.Arguments).(map[string]any); ok {
		c.Arguments = masked
	}
	c.Error = &Error{Code: CodeSecretInArguments, Message: fmt.Sprintf("the arguments carry %s at %s, and %s does not accept secrets (servers.%s.tools.%s.accepts_secrets)",
		kind, path, tool.Qualified, tool.Server, tool.Name)}
	j.step(Step{Kind: StepRefused, Round: c.Round, Call: c.Step, Tool: tool.Qualified, StartMS: j.since(time.Now()), Error: c.Error.Message})
	return true
}

// hold holds a call the identity's auto_execute level does not run unattended, reporting whether
// the call may run now.
func (r *Router) hold(ctx context.Context, j *journal, id access.Identity, tool *inventory.Tool, c *Call) bool {
	if r.set.Approvals == nil {
		return true
	}
	level := r.autoExecute(id)
	ok, reason := level.Runs(tool.Annotations.ReadOnlyHint, tool.Annotations.DestructiveHint)
	if ok && tool.PinChanged && level != access.All {
		// The hints that would run it are the changed definition's, which nobody approved.
		ok, reason = false, fmt.Sprintf("the tool's definition changed since it was pinned, and auto_execute %q does not trust "+
			"its hints until an admin approves the new definition (POST /v1/admin/tools/approve)", level)
	}
	if ok {
		return true
	}
	held := approval.Call{RequestID: j.id, Step: c.Step, Identity: id.String(), Query: approval.ClipQuery(r.set.Redactor.Text(j.query)),
		Server: tool.Server, Tool: tool.Name, Arguments: c.Arguments, Pin: tool.Pin, Reason: reason}
	token, expires, err := r.set.Approvals.Hold(ctx, held, r.heldShare(id))
	if err != nil {
		r.log.Warn("holding a call for approval", "tool", tool.Qualified, "err", err, "request_id", j.id)
		// The sidecar's own failure, or a bound of the caller's: the call did not run.
		code := CodeApprovalUnavailable
		switch {
		case errors.Is(err, approval.ErrFull), errors.Is(err, approval.ErrShareFull):
			code = CodeApprovalsFull
		case errors.Is(err, approval.ErrTooLarge):
			code = CodeHeldArgumentsTooLarge
		}
		c.Error = &Error{Code: code, Message: "the call needs approval but could not be held, and did not run: " + errtext.OneLine(err.Error())}
		j.step(Step{Kind: StepHeld, Round: c.Round, Call: c.Step, Tool: tool.Qualified, StartMS: j.since(time.Now()), Error: c.Error.Message})
		j.callEvent(EventToolResult, c.Round, c)
		return false
	}
	p := Pending{Step: c.Step, Server: tool.Server, Tool: tool.Name, Arguments: c.Arguments, Reason: reason, Token: token, ExpiresAt: expires}
	c.Error = &Error{Code: CodeApprovalRequired, Message: "the call awaits approval: " + reason}
	c.Pending = &p
	j.update(func(o *Outcome) { o.Pending = append(o.Pending, p) })
	j.step(Step{Kind: StepHeld, Round: c.Round, Call: c.Step, Tool: tool.Qualified, StartMS: j.since(time.Now()), Detail: reason})
	// The wait starts before anyone hears of the call, so that no decision can come before it.
	key := approval.Key(token)
	wait := r.approvalWait(id)
	var (
		decided <-chan approval.Decision
		stop    func() (approval.Decision, bool)
	)
	if wait > 0 {
		if decided, stop, err = r.waiting.Add(key); err != nil {
			r.log.Warn("answering at once with the call held", "tool", tool.Qualified, "err", err, "request_id", j.id)
			wait = 0
		} else {
			defer stop()
		}
	}
	held.ExpiresAt = expires
	r.count(OutcomeHeld, key, held)
	if j.listening() {
		j.event(Event{Type: EventApprovalRequired, Round: c.Round, Call: copyCall(c), Pending: &p})
	}
	if wait == 0 {
		return false
	}
	return r.await(ctx, j, tool, c, key, wait, decided, stop)
}

// await waits for the decision on the held call c, at most wait and no longer than ctx, and
// reports whether the call may run now. Approved, the call leaves Pending and runs in the route;
// declined, it leaves Pending and the route goes on without it (CodeDeclined); unanswered, it
// stays held, token and all, and the route goes on without it (CodeApprovalTimeout). A client
// that goes away (ctx's cause ErrClientGone) withdraws the call: its token is used up, so it
// never runs; a request ended otherwise (a shutdown) leaves it held. stop ends the wait first
// whenever the wait ends other than by a decision, and a decision it returns, made just then,
// is acted on as if it had come first: a decider told that this route runs the call is right.
func (r *Router) await(ctx context.Context, j *journal, tool *inventory.Tool, c *Call, key string, wait time.Duration,
	decided <-chan approval.Decision, stop func() (approval.Decision, bool)) bool {
	t0 := time.Now()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	decide := func(kind StepKind, detail string) {
		p := c.Pending
		c.Pending = nil
		j.update(func(o *Outcome) {
			o.Pending = slices.DeleteFunc(o.Pending, func(q Pending) bool { return q.Token == p.Token })
		})
		j.step(Step{Kind: kind, Round: c.Round, Call: c.Step, Tool: tool.Qualified, StartMS: j.since(t0), DurationMS: ms(time.Since(t0)), Detail: detail})
	}
	// onDecision acts on a decision: approved, the call runs now (reported true).
	onDecision := func(d approval.Decision) bool {
		if d == approval.Approved {
			decide(StepApproved, "a person approved the call; it runs in this request")
			c.Error = nil
			return true
		}
		decide(StepDeclined, "a person declined the call")
		c.Error = &Error{Code: CodeDeclined, Message: "a person declined the call; it did not run"}
		return false
	}
	select {
	case d := <-decided:
		if onDecision(d) {
			return true
		}
	case <-timer.C:
		if d, ok := stop(); ok {
			if onDecision(d) {
				return true
			}
			break
		}
		c.Error = &Error{Code: CodeApprovalTimeout, Message: fmt.Sprintf("no decision within approval_wait (%s): the call did not run, "+
			"and it stays held until %s (its pending token)", wait, c.Pending.ExpiresAt.Format(time.RFC3339))}
		j.step(Step{Kind: StepHeld, Round: c.Round, Call: c.Step, Tool: tool.Qualified, StartMS: j.since(t0), DurationMS: ms(time.Since(t0)),
			Error: c.Error.Message})
	case <-ctx.Done():
		if d, ok := stop(); ok {
			// Decided as the request ended: approved, it is run as the route goes on (and fails on
			// the ended request, which the outcome says); declined, it is reported declined.
			if onDecision(d) {
				return true
			}
			break
		}
		if !errors.Is(context.Cause(ctx), ErrClientGone) {
			break // a shutdown or a deadline: the call stays held, its token valid
		}
		// The client went away: nobody is left to use the call's result.
		burn, cancel := context.WithTimeout(context.WithoutCancel(ctx), withdrawTimeout)
		defer cancel()
		won, err := r.set.Approvals.Withdraw(burn, key)
		switch {
		case err != nil:
			r.log.Warn("withdrawing a held call whose client left; its token stays valid until it expires",
				"tool", tool.Qualified, "err", err, "request_id", j.id)
		case won:
			r.decided(burn, key, approval.Call{RequestID: j.id, Identity: j.identity, Server: tool.Server, Tool: tool.Name},
				access.Identity{}, approval.Withdrawn)
			decide(StepDeclined, "the client left while the call waited for approval: withdrawn")
			c.Error = &Error{Code: CodeWithdrawn, Message: "the client left before a decision: the call was withdrawn and did not run"}
		default:
			// A person decided after the wait ended: the decider ran (or declined) the call.
			decide(StepHeld, "the client left as a person decided the call: the decider acted on it")
		}
	}
	j.callEvent(EventToolResult, c.Round, c)
	return false
}

// ErrClientGone is the cause (context.Cause) of a request's end when its client closed the
// connection: a call the route waits for a decision on is then withdrawn. The HTTP doors cancel
// with it (answer.ErrClientGone is this error).
var ErrClientGone = errors.New("the client closed the connection")

// withdrawTimeout bounds using up the token of a call whose client left.
const withdrawTimeout = 5 * time.Second

// approvalWait is how long the identity's routes wait for a decision on a call they hold.
func (r *Router) approvalWait(id access.Identity) time.Duration {
	if r.set.Access == nil {
		return r.set.ApprovalWait
	}
	return r.set.Access.ApprovalWait(id, r.set.ApprovalWait)
}

// resume hands the decision on the call held under key to the route that waits for it, and
// reports whether one did: it then runs the call (or goes on without it), not the decider.
func (r *Router) resume(key string, d approval.Decision) bool {
	return r.waiting.Decide(key, d)
}

// secretIn finds a credential in the string values of args (keys sorted, so the report is
// stable): its kind and its JSON pointer.
func (r *Router) secretIn(args map[string]any) (kind, path string, found bool) {
	w := secretWalk{red: r.set.Redactor}
	w.stack = w.room[:0]
	if !w.walk(args) {
		return "", "", false
	}
	var b strings.Builder
	for _, s := range w.stack {
		b.WriteByte('/')
		if s.index >= 0 {
			b.WriteString(strconv.Itoa(s.index))
		} else {
			b.WriteString(pointerEscape(s.key))
		}
	}
	path = b.String()
	if path == "" {
		path = "/"
	}
	if w.inKey {
		// The report names the object, not the key, which is the secret.
		path += " (a key of the object)"
	}
	return w.kind, path, true
}

// secretWalk looks for a secret in decoded arguments, depth first in key order, keeping the path
// it is at on a stack so that a path is written only for the secret found.
type secretWalk struct {
	red   *redact.Redactor
	room  [8]pathSegment
	stack []pathSegment
	kind  string
	inKey bool // the secret is a key of the object at stack
}

// pathSegment is an object's key, or an array's index when index ≥ 0.
type pathSegment struct {
	key   string
	index int
}

func (w *secretWalk) found(s string) bool {
	var ok bool
	w.kind, ok = w.red.Secret(s)
	return ok
}

func (w *secretWalk) walk(v any) bool {
	switch v := v.(type) {
	case string:
		return w.found(v)
	case json.Number:
		return w.found(string(v))
	case map[string]any:
		var small [8]string
		keys := small[:0]
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			// The key too: a free-form object may carry a secret as a name.
			if w.found(k) {
				w.inKey = true
				return true
			}
			w.stack = append(w.stack, pathSegment{key: k, index: -1})
			if w.walk(v[k]) {
				return true
			}
			w.stack = w.stack[:len(w.stack)-1]
		}
	case []any:
		for i, e := range v {
			w.stack = append(w.stack, pathSegment{index: i})
			if w.walk(e) {
				return true
			}
			w.stack = w.stack[:len(w.stack)-1]
		}
	}
	return false
}

func pointerEscape(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// redactResult masks credentials in a result before any model or caller sees it: configured
// credentials and URL credentials in its text, in every string and key of its structured content
// (decoded, so that no escaping hides one), and in the URIs and names of its resource links and
// resources.
func (r *Router) redactResult(res *Result) {
	if res == nil {
		return
	}
	red := r.set.Redactor
	res.Text = red.Text(res.Text)
	res.Structured = red.Value(res.Structured)
	for i := range res.Content {
		res.Content[i].URI = red.String(res.Content[i].URI)
		res.Content[i].Name = red.String(res.Content[i].Name)
	}
}

// notOffered refuses the calls of a round after the first that name a tool round 1 was not
// offered, when results may not widen the choice (safety.results_may_widen off): a result that
// asks for another tool cannot get it. offered is nil when round 1 was offered every tool.
func notOffered(j *journal, offered map[string]bool, calls []Call) {
	if offered == nil {
		return
	}
	for i := range calls {
		c := &calls[i]
		if c.Error != nil || c.Round <= 1 || offered[qualified(c)] {
			continue
		}
		c.Error = &Error{Code: CodeNotOffered, Message: fmt.Sprintf("%s was not offered in round 1, and safety.results_may_widen is off", qualified(c))}
		j.step(Step{Kind: StepRefused, Round: c.Round, Call: c.Step, Tool: qualified(c), StartMS: j.since(time.Now()), Error: c.Error.Message})
	}
}
