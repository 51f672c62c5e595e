package server

import (
	"context"
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"

	"toolrouter/council"
	"toolrouter/provider"
	"toolrouter/router"
)

// Councillor runs the council on a query and the tool evidence; *council.Council satisfies it.
type Councillor interface {
	Run(ctx context.Context, in council.Input, emit func(council.Event)) (*council.Result, error)
}

// Synthesize says when the council writes the answer.
type Synthesize string

// Values of answerRequest.synthesize.
const (
	// SynthesizeAuto: direct tool results answer by themselves; everything else goes to the council.
	SynthesizeAuto Synthesize = "auto"
	// SynthesizeAlways: the council answers, with the tool results as evidence.
	SynthesizeAlways Synthesize = "always"
	// SynthesizeNever: the tool output is the answer.
	SynthesizeNever Synthesize = "never"
)

// answerRequest is the body of POST /v1/answer.
type answerRequest struct {
	routeRequest
	Synthesize *Synthesize `json:"synthesize"`
}

const answerFields = routeFields + ", synthesize"

// AnsweredBy values beside the council's own.
const answeredByTool = "tool"

// answerResponse is what /v1/answer returns.
type answerResponse struct {
	Final      string          `json:"final"`
	AnsweredBy string          `json:"answered_by"`
	Note       string          `json:"note,omitempty"`
	Routing    *router.Outcome `json:"routing"`
	Council    *council.Result `json:"council,omitempty"`
	Usage      answerUsage     `json:"usage"`
}

// answerUsage is the routing's model use and the total with the council's (whose own breakdown,
// per stage and member, is in council.usage).
type answerUsage struct {
	Routing router.Usage `json:"routing"`
	Total   totalUsage   `json:"total"`
}

type totalUsage struct {
	LLMCalls         int      `json:"llm_calls"`
	PromptTokens     int      `json:"prompt_tokens"`
	CompletionTokens int      `json:"completion_tokens"`
	CostUSD          *float64 `json:"cost_usd,omitempty"`
}

// decodeAnswer parses and checks a /v1/answer body; every problem is a 400 naming it. It returns
// the body's caller apart, as decodeRoute does.
func (h *handlers) decodeAnswer(body []byte) (router.Request, string, Synthesize, error) {
	var req answerRequest
	if err := decodeBody(body, &req, answerFields); err != nil {
		return router.Request{}, "", "", err
	}
	mode := SynthesizeAuto
	if req.Synthesize != nil {
		mode = *req.Synthesize
	}
	if mode != SynthesizeAuto && mode != SynthesizeAlways && mode != SynthesizeNever {
		return router.Request{}, "", "", badRequest("bad_synthesize", fmt.Sprintf(`synthesize must be "auto", "always" or "never", got %q`, mode))
	}
	rr, err := h.checkRoute(req.routeRequest)
	return rr, req.Caller, mode, err
}

// decodeAnswerFor decodes a /v1/answer body and the identity it acts for.
func (h *handlers) decodeAnswerFor(c *fiber.Ctx) (router.Request, Synthesize, error) {
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
	if err := h.councilReady(mode); err != nil {
		return err
	}
	ctx, end, err := h.request(c.UserContext(), c.Context().Conn())
	if err != nil {
		return err
	}
	defer end()
	out, err := h.runAnswer(ctx, req, mode, nil)
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
	if err := h.councilReady(mode); err != nil {
		return err
	}
	return h.stream(c, func(ctx context.Context, send sendFunc) (any, error) {
		return h.runAnswer(ctx, req, mode, send)
	})
}

// councilReady refuses synthesize=always when no council is configured.
func (h *handlers) councilReady(mode Synthesize) error {
	if mode == SynthesizeAlways && h.d.Council == nil {
		return &apiError{status: fiber.StatusServiceUnavailable, code: "no_council",
			msg: `synthesize is "always" but no council is configured (council.members in the configuration)`}
	}
	return nil
}

// runAnswer routes the query and decides who answers: the tool (direct results, or "never"), or the
// council. send, if not nil, receives every routing and council event.
func (h *handlers) runAnswer(ctx context.Context, req router.Request, mode Synthesize, send sendFunc) (*answerResponse, error) {
	if send != nil {
		req.OnEvent = func(ev router.Event) { send(string(ev.Type), ev) }
	}
	out, err := h.d.Router.Route(ctx, req)
	if err != nil {
		return nil, err
	}
	resp := &answerResponse{Routing: out, Usage: answerUsage{Routing: out.Usage}}
	switch {
	case mode == SynthesizeNever:
		resp.Final, resp.AnsweredBy = toolText(out), answeredByTool
	case mode == SynthesizeAuto && out.Direct:
		resp.Final, resp.AnsweredBy = toolText(out), answeredByTool
	case h.d.Council == nil:
		resp.Final, resp.AnsweredBy = toolText(out), answeredByTool
		resp.Note = "no council is configured: the answer is the tool output"
	default:
		in := council.Input{Query: req.Query, Evidence: evidence(out)}
		for _, m := range req.History {
			in.History = append(in.History, councilMessage(m))
		}
		emit := func(council.Event) {}
		if send != nil {
			emit = func(ev council.Event) { send(string(ev.Type), ev) }
		}
		res, err := h.d.Council.Run(ctx, in, emit)
		if err != nil {
			return nil, fmt.Errorf("council: %w", err)
		}
		resp.Council, resp.Final, resp.AnsweredBy = res, res.Final, string(res.AnsweredBy)
	}
	resp.Usage.Total = total(resp)
	return resp, nil
}

// toolText is the answer made of the calls' outputs: each successful result's text, in order.
func toolText(out *router.Outcome) string {
	var parts []string
	for _, c := range out.Calls {
		if c.Result != nil && !c.Result.IsError && c.Result.Text != "" {
			parts = append(parts, c.Result.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// evidence is what the council is told of the tool calls.
func evidence(out *router.Outcome) []council.Evidence {
	var ev []council.Evidence
	for _, c := range out.Calls {
		e := council.Evidence{Server: c.Server, Tool: c.Tool, Arguments: c.Arguments}
		if c.Result != nil {
			e.Text, e.IsError = c.Result.Text, c.Result.IsError
		}
		if c.Error != nil {
			e.Error = c.Error.Code + ": " + c.Error.Message
		}
		ev = append(ev, e)
	}
	return ev
}

func total(r *answerResponse) totalUsage {
	u := r.Usage.Routing
	t := totalUsage{LLMCalls: u.LLMCalls, PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens}
	if r.Council != nil {
		c := r.Council.Usage.Total
		t.LLMCalls += c.Calls
		t.PromptTokens += c.PromptTokens
		t.CompletionTokens += c.CompletionTokens
		t.CostUSD = c.CostUSD
	}
	return t
}

// councilMessage converts a history message for the council.
func councilMessage(m router.Message) provider.Message {
	return provider.Message{Role: m.Role, Content: m.Content}
}
