package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"toolrouter/router"
)

// routeRequest is the body of POST /v1/route.
type routeRequest struct {
	Query   *string          `json:"query"`
	History []router.Message `json:"history"`
	Caller  string           `json:"caller"`
	// MaxToolCalls and DeadlineMS lower the configured ceilings for this request.
	MaxToolCalls *int `json:"max_tool_calls"`
	DeadlineMS   *int `json:"deadline_ms"`
}

const maxCallerBytes = 128

// routeFields are the fields a /v1/route body may have.
const routeFields = "query, history, caller, max_tool_calls, deadline_ms"

// decodeRoute parses and checks a /v1/route body; every problem is a 400 naming it. It returns
// the body's caller apart: it may only narrow the credential's identity (actingAs).
func (h *handlers) decodeRoute(body []byte) (router.Request, string, error) {
	var req routeRequest
	if err := decodeBody(body, &req, routeFields); err != nil {
		return router.Request{}, "", err
	}
	out, err := h.checkRoute(req)
	return out, req.Caller, err
}

// decodeBody decodes exactly one UTF-8 JSON object into v (a pointer to a struct), refusing
// unknown fields (allowed lists the known ones for the message) and trailing data.
func decodeBody[T any](body []byte, v *T, allowed string) error {
	if !utf8.Valid(body) {
		return badRequest("bad_encoding", "body must be UTF-8")
	}
	// Decoding into a pointer tells a JSON null (p stays nil) from an object.
	var p *T
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return jsonError(err, allowed)
	}
	if p == nil {
		return badRequest("wrong_type", "body must be a JSON object, got null")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("malformed_json", "body must hold exactly one JSON object")
	}
	*v = *p
	return nil
}

// checkRoute checks the routing fields of a request body.
func (h *handlers) checkRoute(req routeRequest) (router.Request, error) {
	switch {
	case req.Query == nil:
		return router.Request{}, badRequest("missing_query", "query is required")
	case strings.TrimSpace(*req.Query) == "":
		return router.Request{}, badRequest("empty_query", "query must not be empty")
	case len(*req.Query) > h.o.MaxQueryBytes:
		return router.Request{}, badRequest("query_too_long", fmt.Sprintf("query is %d bytes; the limit is %d", len(*req.Query), h.o.MaxQueryBytes))
	case len(req.History) > h.o.MaxHistory:
		return router.Request{}, badRequest("history_too_long", fmt.Sprintf("history has %d messages; the limit is %d", len(req.History), h.o.MaxHistory))
	case len(req.Caller) > maxCallerBytes:
		return router.Request{}, badRequest("caller_too_long", fmt.Sprintf("caller is %d bytes; the limit is %d", len(req.Caller), maxCallerBytes))
	case req.MaxToolCalls != nil && *req.MaxToolCalls < 1:
		return router.Request{}, badRequest("bad_max_tool_calls", fmt.Sprintf("max_tool_calls must be at least 1, got %d", *req.MaxToolCalls))
	case req.DeadlineMS != nil && (*req.DeadlineMS < 1 || int64(*req.DeadlineMS) > h.o.MaxDeadline.Milliseconds()):
		return router.Request{}, badRequest("bad_deadline", fmt.Sprintf("deadline_ms must be from 1 to %d (router.deadline), got %d", h.o.MaxDeadline.Milliseconds(), *req.DeadlineMS))
	}
	total := len(*req.Query)
	for i, m := range req.History {
		if m.Role != "user" && m.Role != "assistant" {
			return router.Request{}, badRequest("bad_history", fmt.Sprintf("history[%d].role must be \"user\" or \"assistant\", got %q", i, m.Role))
		}
		total += len(m.Content)
	}
	if total > 4*h.o.MaxQueryBytes {
		return router.Request{}, badRequest("history_too_long", fmt.Sprintf("query and history are %d bytes; the limit is %d", total, 4*h.o.MaxQueryBytes))
	}
	out := router.Request{Query: *req.Query, History: req.History}
	if req.MaxToolCalls != nil {
		out.MaxToolCalls = *req.MaxToolCalls // the router never lets it exceed the configured ceiling
	}
	if req.DeadlineMS != nil {
		out.Deadline = time.Duration(*req.DeadlineMS) * time.Millisecond // within router.deadline, checked above
	}
	return out, nil
}

// jsonError turns a decoding error into a 400 that says where the problem is.
func jsonError(err error, allowed string) error {
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.Is(err, io.EOF):
		return badRequest("empty_body", "body is empty; send a JSON object with a query")
	case errors.As(err, &syntax):
		return badRequest("malformed_json", fmt.Sprintf("malformed JSON at byte %d: %v", syntax.Offset, syntax))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("malformed_json", "malformed JSON: unexpected end of body")
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return badRequest("wrong_type", fmt.Sprintf("body must be a JSON object, got %s", typ.Value))
		}
		return badRequest("wrong_type", fmt.Sprintf("%s must be %s, got %s", field, jsonType(typ.Type.String()), typ.Value))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return badRequest("unknown_field", strings.TrimPrefix(err.Error(), "json: ")+"; allowed: "+allowed)
	}
	return badRequest("malformed_json", "malformed JSON: "+err.Error())
}

func jsonType(goType string) string {
	switch {
	case strings.HasSuffix(goType, "string"):
		return "a string"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case strings.HasPrefix(goType, "router.Message"):
		return "an object {role, content}"
	case goType == "int":
		return fmt.Sprintf("a whole number from %d to %d", math.MinInt, math.MaxInt)
	}
	return goType
}

func (h *handlers) route(c *fiber.Ctx) error {
	req, caller, err := h.decodeRoute(c.Body())
	if err != nil {
		return err
	}
	if req.Identity, err = h.actingAs(c, caller); err != nil {
		return err
	}
	ctx, end, err := h.request(c.UserContext(), c.Context().Conn())
	if err != nil {
		return err
	}
	defer end()
	out, err := h.d.Router.Route(ctx, req)
	reportRoute(reportOf(c), out)
	if cause := interrupted(ctx); cause != nil {
		return cause // not the partial outcome the router made of its cancelled calls
	}
	if err != nil {
		return err
	}
	return c.JSON(out)
}
