package server

import (
	"context"
	"fmt"

	"github.com/gofiber/fiber/v2"

	"toolrouter/answer"
	"toolrouter/council"
	"toolrouter/router"
)

// Councillor runs the council on a query and the tool evidence; *council.Council satisfies it.
type Councillor interface {
	Run(ctx context.Context, in council.Input, emit func(council.Event)) (*council.Result, error)
}

// answerRequest is the body of POST /v1/answer.
type answerRequest struct {
	routeRequest
	Synthesize *answer.Synthesize `json:"synthesize"`
}

const answerFields = routeFields + ", synthesize"

// decodeAnswer parses and checks a /v1/answer body; every problem is a 400 naming it. It returns
// the body's caller apart, as decodeRoute does.
func (h *handlers) decodeAnswer(body []byte) (router.Request, string, answer.Synthesize, error) {
	var req answerRequest
	if err := decodeBody(body, &req, answerFields); err != nil {
		return router.Request{}, "", "", err
	}
	mode := answer.Auto
	if req.Synthesize != nil {
		mode = *req.Synthesize
	}
	if !mode.Valid() {
		return router.Request{}, "", "", badRequest("bad_synthesize", fmt.Sprintf(`synthesize must be "auto", "always" or "never", got %q`, mode))
	}
	rr, err := h.checkRoute(req.routeRequest)
	return rr, req.Caller, mode, err
}

// decodeAnswerFor decodes a /v1/answer body and the identity it acts for.
func (h *handlers) decodeAnswerFor(c *fiber.Ctx) (router.Request, answer.Synthesize, error) {
	req, caller, mode, err := h.decodeAnswer(c.Body())
	if err != nil {
		return req, mode, err
	}
	req.Identity, err = h.actingAs(c, caller)
	return req, mode, err
}

// answer serves POST /v1/answer: route, then answer from the tool or convene the council.
func (h *handlers) answer(c *fiber.Ctx) error {
	req, mode, err := h.decodeAnswerFor(c)
	if err != nil {
		return err
	}
	if err := h.ans.Check(mode); err != nil {
		return err
	}
	ctx, end, err := h.request(c.UserContext(), c.Context().Conn())
	if err != nil {
		return err
	}
	defer end()
	out, err := h.ans.Run(ctx, req, mode, nil)
	reportAnswer(reportOf(c), out)
	if cause := interrupted(ctx); cause != nil {
		return cause // not the partial answer made of cancelled calls
	}
	if err != nil {
		return err
	}
	return c.JSON(out)
}

// answerStream serves POST /v1/answer/stream: the routing events, the council's stage events, then
// complete (the /v1/answer response) or error.
func (h *handlers) answerStream(c *fiber.Ctx) error {
	req, mode, err := h.decodeAnswerFor(c)
	if err != nil {
		return err
	}
	if err := h.ans.Check(mode); err != nil {
		return err
	}
	rep := reportOf(c)
	return h.stream(c, func(ctx context.Context, send sendFunc) (any, error) {
		out, err := h.ans.Run(ctx, req, mode, func(ev answer.Event) { send(ev.Type, ev.Data) })
		reportAnswer(rep, out)
		return out, err
	})
}
