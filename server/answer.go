package server

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"toolrouter/answer"
	"toolrouter/council"
	"toolrouter/router"
)

// Councillor runs the council on a query and the tool evidence; *council.Council satisfies it.
type Councillor interface {
	Run(ctx context.Context, in council.Input, emit func(council.Event)) (*council.Result, error)
}

// This file serves toolrouter's own doors, POST /v1/route and /v1/answer, and their streams: each
// decodes its body (answer.DecodeRoute, answer.DecodeAnswer), takes the identity the credential
// and caller allow, and runs the router or answer.Service under h.serve or h.stream.

// route serves POST /v1/route: the routing's outcome.
func (h *handlers) route(c *fiber.Ctx) error {
	req, err := h.routeRequest(c)
	if err != nil {
		return err
	}
	rep := reportOf(c)
	return h.serve(c, func(ctx context.Context) (any, error) {
		out, err := h.d.Router.Route(ctx, req)
		reportRoute(rep, out)
		return out, err
	})
}

// routeStream serves POST /v1/route/stream: the same routing as /v1/route, with each step sent as
// a Server-Sent Event as it happens, then complete (the outcome) or error.
func (h *handlers) routeStream(c *fiber.Ctx) error {
	req, err := h.routeRequest(c)
	if err != nil {
		return err
	}
	rep := reportOf(c)
	return h.stream(c, func(ctx context.Context, send sendFunc) (any, error) {
		req.OnEvent = func(ev router.Event) { send(string(ev.Type), ev) }
		out, err := h.d.Router.Route(ctx, req)
		reportRoute(rep, out)
		return out, err
	})
}

// routeRequest decodes a route body and the identity it acts for.
func (h *handlers) routeRequest(c *fiber.Ctx) (router.Request, error) {
	req, caller, err := answer.DecodeRoute(c.Body(), h.limits)
	if err != nil {
		return req, err
	}
	req.Identity, err = h.actingAs(c, caller)
	return req, err
}

// answer serves POST /v1/answer: route, then answer from the tool or convene the council.
func (h *handlers) answer(c *fiber.Ctx) error {
	req, mode, err := h.answerRequest(c)
	if err != nil {
		return err
	}
	rep := reportOf(c)
	return h.serve(c, func(ctx context.Context) (any, error) {
		out, err := h.ans.Run(ctx, req, mode, nil)
		reportAnswer(rep, out)
		return out, err
	})
}

// answerStream serves POST /v1/answer/stream: the routing events, the council's stage events, then
// complete (the /v1/answer response) or error.
func (h *handlers) answerStream(c *fiber.Ctx) error {
	req, mode, err := h.answerRequest(c)
	if err != nil {
		return err
	}
	rep := reportOf(c)
	return h.stream(c, func(ctx context.Context, send sendFunc) (any, error) {
		out, err := h.ans.Run(ctx, req, mode, func(ev answer.Event) { send(ev.Type, ev.Data) })
		reportAnswer(rep, out)
		return out, err
	})
}

// answerRequest decodes an answer body and the identity it acts for, and refuses a mode the
// service cannot answer in before any work.
func (h *handlers) answerRequest(c *fiber.Ctx) (router.Request, answer.Synthesize, error) {
	req, caller, mode, err := answer.DecodeAnswer(c.Body(), h.limits)
	if err != nil {
		return req, mode, err
	}
	if req.Identity, err = h.actingAs(c, caller); err != nil {
		return req, mode, err
	}
	return req, mode, h.ans.Check(mode)
}

// serve runs work for a plain (not streamed) request and answers its result as JSON. work's
// context ends at the request timeout, when the server shuts down and when the client goes away;
// a request cut short for the last two is answered with that cause, not with the partial result
// its cancelled calls made.
func (h *handlers) serve(c *fiber.Ctx, work func(ctx context.Context) (any, error)) error {
	ctx, end, err := h.request(c.UserContext(), c.Context().Conn())
	if err != nil {
		return err
	}
	defer end()
	out, err := work(ctx)
	if cause := answer.Interrupted(ctx); cause != nil {
		return cause
	}
	if err != nil {
		return err
	}
	return h.sendJSON(c, out)
}

// sendJSON answers v as JSON, as c.JSON does, but encodes it straight into the response's body
// with a reused encoder instead of into a new buffer that the body then holds.
func (h *handlers) sendJSON(c *fiber.Ctx, v any) error {
	w, _ := h.bodies.Get().(*bodyWriter)
	if w == nil {
		w = &bodyWriter{}
		w.enc = json.NewEncoder(w)
	}
	defer h.bodies.Put(w)
	w.resp = c.Response()
	defer func() { w.resp = nil }()
	w.resp.ResetBody()
	if a, ok := v.(jsonAppender); ok {
		var err error
		w.scratch, err = a.AppendJSON(w.scratch[:0])
		if err == nil {
			w.resp.AppendBody(w.scratch)
		}
		if cap(w.scratch) > maxScratch {
			w.scratch = nil
		}
		if err != nil {
			return err
		}
	} else if err := w.enc.Encode(v); err != nil {
		return err
	}
	w.resp.Header.SetContentType(fiber.MIMEApplicationJSON)
	return nil
}

// jsonAppender is a value that writes its own JSON without reflection, as *router.Outcome does.
type jsonAppender interface {
	AppendJSON(b []byte) ([]byte, error)
}

// bodyWriter appends what an Encoder writes to a response's body, but for the newline Encode
// ends each value with (json.Marshal, and so c.JSON, writes none).
type bodyWriter struct {
	resp *fasthttp.Response
	enc  *json.Encoder // writes to this bodyWriter
	// scratch holds what a jsonAppender wrote, for the body to copy: the body's own buffer goes
	// back to fasthttp's pool when reset, so nothing may keep a slice of it.
	scratch []byte
}

// maxScratch is the largest scratch buffer a pooled bodyWriter keeps for the next response.
const maxScratch = 64 << 10

func (w *bodyWriter) Write(p []byte) (int, error) {
	w.resp.AppendBody(bytes.TrimSuffix(p, []byte("\n")))
	return len(p), nil
}
