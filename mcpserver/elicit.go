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
// MCP client when the client declared elicitation: accepted, it runs at once (router.Router.Approve
// with its token); declined, cancelled or unanswered within elicitTimeout, it stays held and the
// result names it with its token, as for a client without elicitation.

// elicitTimeout bounds the wait for a person's answer to one held call.
const elicitTimeout = 2 * time.Minute

// elicits reports whether the client of ctx's session declared elicitation.
func elicits(ctx context.Context) bool {
	sess, ok := mcpgo.ClientSessionFromContext(ctx).(mcpgo.SessionWithClientInfo)
	return ok && sess.GetClientCapabilities().Elicitation != nil
}

// elicit asks the person whether the held call c may run, and runs it when they accept: the
// approved call replaces c. Anything else leaves c held.
func (s *Server) elicit(ctx context.Context, id access.Identity, c *router.Call) *router.Call {
	if !elicits(ctx) {
		return c
	}
	p := c.Pending
	args, _ := json.Marshal(p.Arguments)
	ectx, cancel := context.WithTimeout(ctx, elicitTimeout)
	defer cancel()
	res, err := s.mcp.RequestElicitation(ectx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{
		Message:         fmt.Sprintf("toolrouter holds a call for your approval: %s.%s with %s (%s). Run it?", p.Server, p.Tool, args, p.Reason),
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
	}})
	if err != nil {
		s.o.Logger.Info("asking the client to approve a held call", "tool", p.Server+"."+p.Tool, "err", err)
		return c
	}
	if res.Action != mcp.ElicitationResponseActionAccept {
		return c
	}
	approved, _, err := s.d.Router.Approve(ctx, id, p.Token)
	if err != nil {
		s.o.Logger.Warn("running an approved call", "tool", p.Server+"."+p.Tool, "err", err)
		return c
	}
	approved.Step, approved.Round = c.Step, c.Round
	return approved
}

// elicitAll puts each held call of a routing to the person, and moves the ones they approve from
// Pending to run calls. The routing does not go on to another round.
func (s *Server) elicitAll(ctx context.Context, id access.Identity, out *router.Outcome) {
	if !elicits(ctx) {
		return
	}
	var still []router.Pending
	for i := range out.Calls {
		c := &out.Calls[i]
		if c.Pending == nil {
			continue
		}
		if done := s.elicit(ctx, id, c); done != c {
			*c = *done
			continue
		}
		still = append(still, *c.Pending)
	}
	out.Pending = still
	if len(still) == 0 {
		out.Stopped = router.StopDone
	}
	if len(out.Calls) > 0 {
		first := out.Calls[0]
		out.Result, out.Error = first.Result, first.Error
	}
}

// pendingText is the text of a held call's result for a client without elicitation, or whose
// person did not approve it: what waits and how to approve it.
func pendingText(p *router.Pending) string {
	args, _ := json.Marshal(p.Arguments)
	return fmt.Sprintf("%s.%s %s awaits approval: %s. To run it, POST /v1/approve {\"token\": %q} before %s.",
		p.Server, p.Tool, args, p.Reason, p.Token, p.ExpiresAt.Format(time.RFC3339))
}
