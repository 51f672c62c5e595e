package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"toolrouter/access"
	"toolrouter/answer"
	"toolrouter/approval"
	"toolrouter/router"
)

// Queue is the console's queue of held calls: those a viewer may decide, the decision itself,
// and the decisions made; *router.Router satisfies it.
type Queue interface {
	Held(ctx context.Context, viewer access.Identity, admin bool) ([]approval.Listed, error)
	Decide(ctx context.Context, viewer access.Identity, admin bool, id string, d approval.Decision) (*router.Call, approval.Call, error)
	Decisions(ctx context.Context, limit int) ([]approval.Decided, error)
}

const pathApprovals = pathConsole + "/api/approvals"

// maxDecisionsShown is how many of the newest decisions GET /ui/api/approvals shows admins.
const maxDecisionsShown = 100

// consoleApprovals answers GET /ui/api/approvals: the held calls the viewer may decide (see
// router.Router.Held), with the server's clock for their time left; admins also get the newest
// decisions. It is logged, not observed.
func (h *handlers) consoleApprovals(c *fiber.Ctx) error {
	reportOf(c).unobserved = true
	if h.d.Queue == nil {
		return router.ErrNoQueue
	}
	viewer, ok := identity(c)
	if !ok {
		return fmt.Errorf("the request has no identity: %w", router.ErrNotApprover)
	}
	admin := h.admin(c)
	ctx, cancel := context.WithTimeout(c.UserContext(), h.o.RequestTimeout)
	defer cancel()
	held, err := h.d.Queue.Held(ctx, viewer, admin)
	if err != nil {
		return err
	}
	out := struct {
		Now       time.Time           `json:"now"`
		Approvals []approval.Listed   `json:"approvals"`
		Decisions *[]approval.Decided `json:"decisions,omitempty"` // admins only
	}{Now: time.Now().UTC().Truncate(time.Millisecond), Approvals: held}
	if admin {
		ds, err := h.d.Queue.Decisions(ctx, maxDecisionsShown)
		if err != nil {
			return err
		}
		out.Decisions = &ds
	}
	return c.JSON(out)
}

// Decided is the answer of POST /ui/api/approvals/{id}/approve and …/decline: the decision, the
// call that was held and, for an approval, what running it gave; when the route that held it
// waits for the decision, no call and that request's id in Resumed (the route runs it).
type Decided struct {
	Decision approval.Decision `json:"decision"`
	Held     approval.Call     `json:"held"`
	Call     *router.Call      `json:"call,omitempty"`
	Resumed  string            `json:"resumed,omitempty"`
}

// consoleDecide answers POST /ui/api/approvals/{id}/approve and …/decline, the console's
// buttons: the viewer's decision on the held call, with POST /v1/approve's checks and who may
// decide (router.Router.Decide). A page of another origin is refused before this runs (guard),
// and its body must be JSON (accepts), which no form can send.
func (h *handlers) consoleDecide(c *fiber.Ctx) error {
	if h.d.Queue == nil {
		return router.ErrNoQueue
	}
	id, action, ok := strings.Cut(c.Params("*"), "/")
	var d approval.Decision
	switch {
	case !ok:
	case action == "approve":
		d = approval.Approved
	case action == "decline":
		d = approval.Declined
	}
	if d == "" {
		return &answer.Problem{Status: fiber.StatusNotFound, Code: "not_found",
			Message: "no route " + c.Method() + " " + clipHeader(c.Path()) + "; use " + pathApprovals + "/{id}/approve or …/decline"}
	}
	id = strings.Clone(id)
	viewer, ok := identity(c)
	if !ok {
		return fmt.Errorf("the request has no identity: %w", router.ErrNotApprover)
	}
	admin := h.admin(c)
	rep := reportOf(c)
	return h.serve(c, func(ctx context.Context) (any, error) {
		call, held, err := h.d.Queue.Decide(ctx, viewer, admin, id, d)
		if err != nil {
			return nil, err
		}
		out := Decided{Decision: d, Held: held, Call: call}
		switch {
		case call != nil:
			reportRoute(rep, &router.Outcome{Identity: held.Identity, UseTool: true, Server: call.Server, Tool: call.Tool,
				Calls: []router.Call{*call}, Stopped: router.StopDone})
		case d == approval.Approved:
			out.Resumed = held.RequestID
			fallthrough
		default:
			reportRoute(rep, &router.Outcome{Identity: held.Identity, Stopped: router.StopDone})
		}
		return out, nil
	})
}
