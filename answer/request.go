package answer

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

	"toolrouter/router"
)

// Limits bound a request's routing fields, on every front door alike.
type Limits struct {
	// MaxQueryBytes bounds the query (router.max_query_bytes); four times it bounds the query and
	// history together.
	MaxQueryBytes int
	// MaxHistory bounds the history's messages (router.max_history).
	MaxHistory int
	// MaxDeadline is the largest deadline_ms a request may ask for (router.deadline).
	MaxDeadline time.Duration
}

// MaxCallerBytes bounds a request's caller.
const MaxCallerBytes = 128

// RouteBody is the body of POST /v1/route, and the route tool's arguments.
type RouteBody struct {
	Query   *string          `json:"query"`
	History []router.Message `json:"history"`
	Caller  string           `json:"caller"`
	// MaxToolCalls and DeadlineMS lower the configured ceilings for this request.
	MaxToolCalls *int `json:"max_tool_calls"`
	DeadlineMS   *int `json:"deadline_ms"`
}

// AnswerBody is the body of POST /v1/answer, and the answer tool's arguments.
type AnswerBody struct {
	RouteBody
	Synthesize *Synthesize `json:"synthesize"`
}

// The fields each body may have, for the unknown-field message.
const (
	routeFields  = "query, history, caller, max_tool_calls, deadline_ms"
	answerFields = routeFields + ", synthesize"
	// toolFields are the MCP route tool's: MCP has no caller (the credential's identity is used).
	toolFields = "query, history, max_tool_calls, deadline_ms"
)

// DecodeRoute parses and checks a route body; every problem is a 400 naming it. It returns the
// body's caller apart: it may only narrow the credential's identity.
func DecodeRoute(body []byte, l Limits) (router.Request, string, error) {
	plain, ok := plainBody(body, false)
	req := plain.RouteBody
	if !ok {
		var decoded RouteBody
		if err := DecodeJSON(body, &decoded, routeFields); err != nil {
			return router.Request{}, "", err
		}
		req = decoded
	}
	out, err := l.Check(req)
	return out, req.Caller, err
}

// DecodeAnswer parses and checks an answer body, as DecodeRoute does, with its synthesize.
func DecodeAnswer(body []byte, l Limits) (router.Request, string, Synthesize, error) {
	req, ok := plainBody(body, true)
	if !ok {
		var decoded AnswerBody
		if err := DecodeJSON(body, &decoded, answerFields); err != nil {
			return router.Request{}, "", "", err
		}
		req = decoded
	}
	mode, err := synthesizeOf(req.Synthesize)
	if err != nil {
		return router.Request{}, "", "", err
	}
	rr, err := l.Check(req.RouteBody)
	return rr, req.Caller, mode, err
}

// DecodeTool checks the arguments of the MCP server's route and answer tools (answerTool: with
// synthesize) as DecodeRoute and DecodeAnswer check their bodies: the same fields but caller, the
// same limits and the same errors.
func DecodeTool(args []byte, answerTool bool, l Limits) (router.Request, Synthesize, error) {
	fields := toolFields
	if answerTool {
		fields += ", synthesize"
	}
	var req AnswerBody
	if err := DecodeJSON(args, &req, fields); err != nil {
		return router.Request{}, "", err
	}
	switch {
	case req.Caller != "":
		return router.Request{}, "", BadRequest("unknown_field", `json: unknown field "caller"; the MCP server acts for the credential's identity; allowed: `+fields)
	case req.Synthesize != nil && !answerTool:
		return router.Request{}, "", BadRequest("unknown_field", `json: unknown field "synthesize"; allowed: `+fields)
	}
	mode, err := synthesizeOf(req.Synthesize)
	if err != nil {
		return router.Request{}, "", err
	}
	rr, err := l.Check(req.RouteBody)
	return rr, mode, err
}

func synthesizeOf(s *Synthesize) (Synthesize, error) {
	mode := Auto
	if s != nil {
		mode = *s
	}
	if !mode.Valid() {
		return "", BadRequest("bad_synthesize", fmt.Sprintf(`synthesize must be "auto", "always" or "never", got %q`, mode))
	}
	return mode, nil
}

// DecodeJSON decodes exactly one UTF-8 JSON object into v (a pointer to a struct), refusing
// trailing data and, when allowed is not "", unknown fields (allowed lists the known ones for
// the message). Every problem is a 400 naming it; v then holds nothing useful.
func DecodeJSON[T any](body []byte, v *T, allowed string) error {
	if !utf8.Valid(body) {
		return BadRequest("bad_encoding", "body must be UTF-8")
	}
	var zero T
	*v = zero
	dec := json.NewDecoder(bytes.NewReader(body))
	if allowed != "" {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return jsonError(err, allowed)
	}
	// A JSON null decodes into a struct as nothing at all: its text tells it from an object.
	if string(bytes.TrimLeft(body[:dec.InputOffset()], " \t\r\n")) == "null" {
		return BadRequest("wrong_type", "body must be a JSON object, got null")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return BadRequest("malformed_json", "body must hold exactly one JSON object")
	}
	return nil
}

// Check checks the routing fields of a request body against l.
func (l Limits) Check(req RouteBody) (router.Request, error) {
	switch {
	case req.Query == nil:
		return router.Request{}, BadRequest("missing_query", "query is required")
	case strings.TrimSpace(*req.Query) == "":
		return router.Request{}, BadRequest("empty_query", "query must not be empty")
	case len(*req.Query) > l.MaxQueryBytes:
		return router.Request{}, BadRequest("query_too_long", fmt.Sprintf("query is %d bytes; the limit is %d", len(*req.Query), l.MaxQueryBytes))
	case len(req.History) > l.MaxHistory:
		return router.Request{}, BadRequest("history_too_long", fmt.Sprintf("history has %d messages; the limit is %d", len(req.History), l.MaxHistory))
	case len(req.Caller) > MaxCallerBytes:
		return router.Request{}, BadRequest("caller_too_long", fmt.Sprintf("caller is %d bytes; the limit is %d", len(req.Caller), MaxCallerBytes))
	case req.MaxToolCalls != nil && *req.MaxToolCalls < 1:
		return router.Request{}, BadRequest("bad_max_tool_calls", fmt.Sprintf("max_tool_calls must be at least 1, got %d", *req.MaxToolCalls))
	case req.DeadlineMS != nil && (*req.DeadlineMS < 1 || int64(*req.DeadlineMS) > l.MaxDeadline.Milliseconds()):
		return router.Request{}, BadRequest("bad_deadline", fmt.Sprintf("deadline_ms must be from 1 to %d (router.deadline), got %d", l.MaxDeadline.Milliseconds(), *req.DeadlineMS))
	}
	total := len(*req.Query)
	for i, m := range req.History {
		if m.Role != "user" && m.Role != "assistant" {
			return router.Request{}, BadRequest("bad_history", fmt.Sprintf("history[%d].role must be \"user\" or \"assistant\", got %q", i, m.Role))
		}
		total += len(m.Content)
	}
	if total > 4*l.MaxQueryBytes {
		return router.Request{}, BadRequest("history_too_long", fmt.Sprintf("query and history are %d bytes; the limit is %d", total, 4*l.MaxQueryBytes))
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
		return BadRequest("empty_body", "body is empty; send a JSON object with a query")
	case errors.As(err, &syntax):
		return BadRequest("malformed_json", fmt.Sprintf("malformed JSON at byte %d: %v", syntax.Offset, syntax))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return BadRequest("malformed_json", "malformed JSON: unexpected end of body")
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return BadRequest("wrong_type", fmt.Sprintf("body must be a JSON object, got %s", typ.Value))
		}
		return BadRequest("wrong_type", fmt.Sprintf("%s must be %s, got %s", field, jsonType(typ.Type.String()), typ.Value))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return BadRequest("unknown_field", strings.TrimPrefix(err.Error(), "json: ")+"; allowed: "+allowed)
	}
	return BadRequest("malformed_json", "malformed JSON: "+err.Error())
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

// MaxTokenBytes bounds an approval token in a request (approval's tokens are far shorter).
const MaxTokenBytes = 256

// DecodeApprove parses and checks a POST /v1/approve body, {"token": "…"[, "caller": "…"]}:
// the token of a held call and the caller it acts for.
func DecodeApprove(body []byte) (token, caller string, err error) {
	var req struct {
		Token  string `json:"token"`
		Caller string `json:"caller"`
	}
	if err := DecodeJSON(body, &req, "token, caller"); err != nil {
		return "", "", err
	}
	switch {
	case req.Token == "":
		return "", "", ParamError("missing_token", "token", "token must be the token of a call awaiting approval (a route's pending[].token)")
	case len(req.Token) > MaxTokenBytes:
		return "", "", ParamError("bad_token", "token", fmt.Sprintf("token is %d bytes, longer than any token (%d)", len(req.Token), MaxTokenBytes))
	case len(req.Caller) > MaxCallerBytes:
		return "", "", ParamError("bad_caller", "caller", fmt.Sprintf("caller is %d bytes, over %d", len(req.Caller), MaxCallerBytes))
	}
	return req.Token, req.Caller, nil
}
