package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpgo "github.com/mark3labs/mcp-go/server"

	"toolrouter/access"
	"toolrouter/router"
)

// A call the caller's auto_execute level holds (router.Pending) is put to the person behind the
// MCP client when the client declared elicitation, whether an inventory tool's call or one the
// route or answer tool's routing chose (the answer tool asks before its answer is written, so the
// answer is made of what ran). Accepted, it runs at once (router.Router.Approve with its token).
// Declined, its token is used up (router.Router.Decline) and the call is reported refused: nobody
// may approve it later. Cancelled or unanswered within elicitTimeout (one wait for all the held
// calls of a request), it stays held and the result names it with its token, as for a client
// without elicitation.

// elicitTimeout bounds the wait for a person's answers to the held calls of one request.
const elicitTimeout = 2 * time.Minute

// declineTimeout bounds using up a declined call's token.
const declineTimeout = 5 * time.Second

// CodeDeclined is the error code of a held call the person declined.
const CodeDeclined = router.CodeDeclined

// elicits reports whether the client of ctx's session declared elicitation and speaks a version
// that lets the server send elicitation/create (before 2026-07-28; see asksInput for the others).
func elicits(ctx context.Context) bool {
	if modern(ctx) {
		return false
	}
	sess, ok := mcpgo.ClientSessionFromContext(ctx).(mcpgo.SessionWithClientInfo)
	return ok && sess.GetClientCapabilities().Elicitation != nil
}

// elicit asks the person whether the held call c may run, within ask's deadline, and returns what
// became of it: the approved call run, c declined (its token used up), or c still held.
func (s *Server) elicit(ctx, ask context.Context, id access.Identity, c *router.Call) *router.Call {
	p := c.Pending
	res, err := s.mcp.RequestElicitation(ask, mcp.ElicitationRequest{Params: question(p)})
	if err != nil {
		s.o.Logger.Info("asking the client to approve a held call", "tool", p.Server+"."+p.Tool, "err", err)
		return c
	}
	return s.decide(ctx, id, c, res.Action)
}

// question is what the person is asked of the held call p.
func question(p *router.Pending) mcp.ElicitationParams {
	args, _ := json.Marshal(p.Arguments)
	return mcp.ElicitationParams{
		Message:         fmt.Sprintf("toolrouter holds a call for your approval: %s.%s with %s (%s). Run it?", p.Server, p.Tool, args, p.Reason),
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
	}
}

// decide does what the person answered of the held call c (action) and returns what became of
// it: the approved call run, c declined (its token used up), or c still held (cancelled, or no
// answer).
func (s *Server) decide(ctx context.Context, id access.Identity, c *router.Call, action mcp.ElicitationResponseAction) *router.Call {
	p := c.Pending
	switch action {
	case mcp.ElicitationResponseActionAccept:
		approved, _, err := s.d.Router.Approve(ctx, id, p.Token)
		if err == nil && approved == nil {
			return c // a route that waits runs it; none does once a routing has answered
		}
		if err != nil {
			s.o.Logger.Warn("running an approved call", "tool", p.Server+"."+p.Tool, "err", err)
			return c
		}
		approved.Step, approved.Round = c.Step, c.Round
		return approved
	case mcp.ElicitationResponseActionDecline:
		// The person said no: whatever happens to the token, the result neither runs the call nor
		// names the token. Using it up outlives the request's own end, briefly.
		burn, cancel := context.WithTimeout(context.WithoutCancel(ctx), declineTimeout)
		defer cancel()
		if err := s.d.Router.Decline(burn, id, p.Token); err != nil {
			s.o.Logger.Warn("using up a declined call's token; it stays valid until it expires", "tool", p.Server+"."+p.Tool,
				"expires_at", p.ExpiresAt, "err", err)
		}
		declined := *c
		declined.Pending = nil
		declined.Error = &router.Error{Code: CodeDeclined, Message: "the person declined the call; it did not run"}
		return &declined
	}
	return c
}

// routeAsking routes req and puts its held calls to the person: the routing of the route tool
// and, through answer.Service, of the answer tool. A client of 2026-07-28 or later is asked
// through input requests: the routing is parked and errInput carries the tool result that asks
// (askInput); its retry resumes the parked routing with the answers instead of routing again.
// An older client that declared elicitation is asked with elicitation/create (elicitAll).
func (s *Server) routeAsking(ctx context.Context, req router.Request) (*router.Outcome, error) {
	if r := roundOf(ctx); r != nil && r.resumed != nil {
		out := r.resumed.outcome
		s.settle(out, func(c *router.Call) *router.Call { return s.answered(ctx, req.Identity, r, c) })
		return out, nil
	}
	out, err := s.d.Router.Route(ctx, req)
	if err == nil && len(out.Pending) > 0 {
		if res := s.askInput(ctx, req.Identity, out.Pending, &parked{outcome: out}); res != nil {
			return out, &errInput{res: res, outcome: out}
		}
		s.elicitAll(ctx, req.Identity, out)
	}
	return out, err
}

// routeFunc is a function as an answer.Router.
type routeFunc func(ctx context.Context, req router.Request) (*router.Outcome, error)

func (f routeFunc) Route(ctx context.Context, req router.Request) (*router.Outcome, error) {
	return f(ctx, req)
}

// elicitAll puts each held call of a routing to the person with elicitation/create, within one
// shared deadline, and moves the ones they answer out of Pending (settle).
func (s *Server) elicitAll(ctx context.Context, id access.Identity, out *router.Outcome) {
	if !elicits(ctx) {
		return
	}
	ask, cancel := context.WithTimeout(ctx, elicitTimeout)
	defer cancel()
	s.settle(out, func(c *router.Call) *router.Call { return s.elicit(ctx, ask, id, c) })
}

// settle replaces each held call of a routing with what decide made of it and moves the ones
// decided out of Pending. The routing does not go on to another round.
func (s *Server) settle(out *router.Outcome, decide func(c *router.Call) *router.Call) {
	var still []router.Pending
	for i := range out.Calls {
		c := &out.Calls[i]
		if c.Pending == nil {
			continue
		}
		if done := decide(c); done != c {
			*c = *done
			continue
		}
		still = append(still, *c.Pending)
	}
	out.Pending = still
	if len(still) == 0 && out.Stopped == router.StopApprovalRequired {
		out.Stopped = router.StopDone
	}
	if len(out.Calls) > 0 {
		first := out.Calls[0]
		out.Result, out.Error = first.Result, first.Error
	}
}

// elicitOne is elicit for one call of its own request, within elicitTimeout.
func (s *Server) elicitOne(ctx context.Context, id access.Identity, c *router.Call) *router.Call {
	if !elicits(ctx) {
		return c
	}
	ask, cancel := context.WithTimeout(ctx, elicitTimeout)
	defer cancel()
	return s.elicit(ctx, ask, id, c)
}

// pendingText is the text of a held call's result for a client without elicitation, or whose
// person did not answer: what waits and how to approve it. Over stdio there is no HTTP listener
// to approve on: the operator runs `toolrouter approve TOKEN` with the same configuration, a
// command no model behind the host can call.
func pendingText(ctx context.Context, p *router.Pending) string {
	args, _ := json.Marshal(p.Arguments)
	how := fmt.Sprintf("POST /v1/approve {\"token\": %q}", p.Token)
	if overStdio(ctx) {
		how = fmt.Sprintf("run `toolrouter approve %s` (with the same -config) in a shell", p.Token)
	}
	return fmt.Sprintf("%s.%s %s awaits approval: %s. To run it, %s before %s.",
		p.Server, p.Tool, args, p.Reason, how, p.ExpiresAt.Format(time.RFC3339))
}

// stdioKey marks the context of a request ServeStdio serves.
type stdioKey struct{}

// overStdio reports whether ctx is a request ServeStdio serves.
func overStdio(ctx context.Context) bool { return ctx.Value(stdioKey{}) != nil }
