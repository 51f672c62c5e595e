package server

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"toolrouter/access"
	"toolrouter/answer"
	"toolrouter/approval"
	"toolrouter/router"
)

// CallApprover runs a held call for its token; *router.Router satisfies it.
type CallApprover interface {
	Approve(ctx context.Context, id access.Identity, token string) (*router.Call, approval.Call, error)
}

// pathApproveCall is the endpoint that runs a call held for approval.
const pathApproveCall = "/v1/approve"

// Approved is POST /v1/approve's answer: the call that was held and what running it gave, or,
// when the route that held it waits for the decision (safety.approval_wait), no call and that
// request's id in Resumed: the route runs it and answers with its result.
type Approved struct {
	Held    approval.Call `json:"held"`
	Call    *router.Call  `json:"call"`
	Resumed string        `json:"resumed,omitempty"`
}

// approveCall answers POST /v1/approve {"token": "…"}: it runs the call held under the token,
// exactly as held, once, for the identity it was held for (see router.Router.Approve). A token
// never issued is 404, another identity's 403, a used one 409, an expired one 410.
func (h *handlers) approveCall(c *fiber.Ctx) error {
	token, caller, err := answer.DecodeApprove(c.Body())
	if err != nil {
		return err
	}
	if h.d.Calls == nil {
		return approval.ErrUnknownToken
	}
	id, err := h.actingAs(c, caller)
	if err != nil {
		return err
	}
	rep := reportOf(c)
	return h.serve(c, func(ctx context.Context) (any, error) {
		call, held, err := h.d.Calls.Approve(ctx, id, token)
		if err != nil {
			return nil, err
		}
		if call == nil {
			reportRoute(rep, &router.Outcome{Identity: id.String(), Stopped: router.StopDone})
			return Approved{Held: held, Resumed: held.RequestID}, nil
		}
		reportRoute(rep, &router.Outcome{Identity: id.String(), UseTool: true, Server: call.Server, Tool: call.Tool,
			Calls: []router.Call{*call}, Stopped: router.StopDone})
		return Approved{Held: held, Call: call}, nil
	})
}
