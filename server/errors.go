package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"toolrouter/answer"
	"toolrouter/auth"
	"toolrouter/council"
	"toolrouter/internal/errtext"
	"toolrouter/internal/redact"
	"toolrouter/inventory"
	"toolrouter/limits"
	"toolrouter/reload"
	"toolrouter/router"
	records "toolrouter/usage"
)

// apiError is an error with its HTTP status and code: what the client is told. Handlers return one
// for a problem they find themselves (a bad request); apiErrorOf makes one of any other error.
type apiError struct {
	status int
	code   string
	msg    string
	// challenge, on a 401, is the WWW-Authenticate header's value.
	challenge string
	// problems, when not empty, lists each problem found (a refused configuration's).
	problems []string
	// param names the request field at fault, for the OpenAI-compatible routes' error shape.
	param string
	// retryAfter, on a 429, is the Retry-After header's value in seconds.
	retryAfter int
}

func (e *apiError) Error() string { return e.msg }

// ErrTooManySessions: an MCP initialize over mcp_server.max_sessions or
// mcp_server.max_sessions_per_identity. The error wrapping it names the cap.
var ErrTooManySessions = errors.New("too many MCP sessions")

// ErrUnknownSession: an /mcp request names a session that does not exist, has ended, or belongs
// to another identity (the three are not told apart, so one identity cannot probe another's).
var ErrUnknownSession = errors.New("no such MCP session")

// errNoReload: the API was built without a Reloader (Deps.Reload).
var errNoReload = errors.New("this server does not reload its configuration")

func badRequest(code, msg string) *apiError {
	return &apiError{status: fiber.StatusBadRequest, code: code, msg: msg}
}

// errorHandler renders every error as {"error":{"code","message"}} with its status. It is fiber's
// ErrorHandler, and accessLog calls it for the handlers' errors so that it logs the status sent.
func (h *handlers) errorHandler(c *fiber.Ctx, err error) error {
	e := h.apiErrorOf(err)
	if e.challenge != "" {
		c.Set(fiber.HeaderWWWAuthenticate, e.challenge)
	}
	if e.retryAfter > 0 {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(e.retryAfter))
	}
	if openAIPath(c.Path()) {
		return c.Status(e.status).JSON(openAIError(e))
	}
	return c.Status(e.status).JSON(e.body())
}

// body is the JSON the API answers e with: {"error":{"code","message"[,"problems"]}}.
func (e *apiError) body() fiber.Map {
	body := fiber.Map{"code": e.code, "message": e.msg}
	if len(e.problems) > 0 {
		body["problems"] = e.problems
	}
	return fiber.Map{"error": body}
}

// WriteError answers err on w as the API answers it (apiErrorOf, the same body and headers), for
// the handlers the API runs that are net/http's (the MCP server's /mcp transport). red and log
// are as StatusOf's.
func WriteError(w http.ResponseWriter, err error, red *redact.Redactor, log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	h := &handlers{o: Options{Redactor: red, Logger: log}}
	e := h.apiErrorOf(err)
	if e.challenge != "" {
		w.Header().Set(fiber.HeaderWWWAuthenticate, e.challenge)
	}
	if e.retryAfter > 0 {
		w.Header().Set(fiber.HeaderRetryAfter, strconv.Itoa(e.retryAfter))
	}
	b, jerr := json.Marshal(e.body())
	if jerr != nil {
		log.Error("encoding an error", "err", jerr)
	}
	w.Header().Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	w.WriteHeader(e.status)
	_, _ = w.Write(b)
}

// apiErrorOf is the one place an error becomes an HTTP status, a code and a message. The message
// is always one line, whatever the error's text (errors.Join, for one, puts newlines in it), and
// goes through Options.Redactor: no credential the configuration holds or names, and no URL's,
// reaches the client, even one the request itself sent.
func (h *handlers) apiErrorOf(err error) *apiError {
	var (
		ae *apiError
		fe *fiber.Error
		ie *reload.InvalidError
		le *limits.Exceeded
		pe *records.ParamError
		e  apiError
	)
	switch {
	case errors.As(err, &ae):
		e = *ae
	// Checked before anything a cancelled model or tool call becomes: the request ended because the
	// server is going away, or because nobody is waiting for the answer any more.
	case errors.Is(err, errShuttingDown):
		e = apiError{status: fiber.StatusServiceUnavailable, code: "shutting_down", msg: "the server is shutting down; retry on another instance or once it is back"}
	case errors.Is(err, errClientGone):
		e = apiError{status: statusClientClosed, code: "client_closed_request", msg: "the client closed the connection before the answer"}
	// Package auth's messages never hold a credential.
	case errors.Is(err, auth.ErrMissing):
		e = apiError{status: fiber.StatusUnauthorized, code: "missing_credential", msg: err.Error(), challenge: auth.Challenge(err)}
	case errors.Is(err, auth.ErrInvalid):
		e = apiError{status: fiber.StatusUnauthorized, code: "invalid_credential", msg: err.Error(), challenge: auth.Challenge(err)}
	case errors.Is(err, auth.ErrForbidden):
		e = apiError{status: fiber.StatusForbidden, code: "forbidden", msg: err.Error()}
	case errors.As(err, &le):
		e = apiError{status: fiber.StatusTooManyRequests, code: "rate_limited", msg: err.Error(), retryAfter: limits.RetrySeconds(le.RetryAfter)}
	case errors.Is(err, limits.ErrUnavailable):
		e = apiError{status: fiber.StatusServiceUnavailable, code: "rate_limit_unavailable", msg: err.Error()}
	case errors.Is(err, ErrUnknownModel):
		e = apiError{status: fiber.StatusNotFound, code: "model_not_found", msg: err.Error(), param: "model"}
	case errors.Is(err, errNoCompleter):
		e = apiError{status: fiber.StatusServiceUnavailable, code: "completions_off", msg: err.Error()}
	case errors.Is(err, answer.ErrNoCouncil), errors.Is(err, errNoCouncilModel):
		e = apiError{status: fiber.StatusServiceUnavailable, code: "no_council", msg: err.Error()}
	// An unmet quorum is the council being unavailable, even when its members timed out.
	case errors.Is(err, council.ErrQuorum):
		e = apiError{status: fiber.StatusBadGateway, code: "quorum_not_met", msg: err.Error()}
	// A deadline is checked before ErrModel: in Fail mode the router wraps a model call cut short by
	// the request (or call) timeout in ErrModel, and that is a timeout, not an unavailable model.
	case errors.Is(err, context.DeadlineExceeded):
		e = apiError{status: fiber.StatusGatewayTimeout, code: "timeout", msg: err.Error()}
	case errors.Is(err, router.ErrNoRanker):
		e = apiError{status: fiber.StatusNotFound, code: "retrieval_off", msg: "retrieval is off (retrieval.enabled is false)"}
	case errors.As(err, &ie):
		e = apiError{status: fiber.StatusUnprocessableEntity, code: "invalid_config", msg: err.Error()}
		for _, p := range ie.Problems {
			e.problems = append(e.problems, errtext.OneLine(h.o.Redactor.String(p)))
		}
	case errors.Is(err, errNoReload):
		e = apiError{status: fiber.StatusNotFound, code: "reload_off", msg: err.Error()}
	case errors.Is(err, inventory.ErrClosed):
		e = apiError{status: fiber.StatusServiceUnavailable, code: "shutting_down", msg: "the server is shutting down; its configuration is no longer reloaded"}
	case errors.Is(err, router.ErrUnknownTool):
		e = apiError{status: fiber.StatusNotFound, code: "unknown_tool", msg: err.Error()}
	case errors.Is(err, ErrTooManySessions):
		e = apiError{status: fiber.StatusTooManyRequests, code: "too_many_sessions", msg: err.Error()}
	case errors.Is(err, ErrUnknownSession):
		e = apiError{status: fiber.StatusNotFound, code: "session_not_found", msg: err.Error()}
	case errors.Is(err, records.ErrOff):
		e = apiError{status: fiber.StatusNotFound, code: "usage_off", msg: err.Error()}
	case errors.As(err, &pe):
		e = apiError{status: fiber.StatusBadRequest, code: "bad_" + pe.Param, msg: pe.Error()}
	case errors.Is(err, router.ErrModel), errors.Is(err, errCompletion):
		e = apiError{status: fiber.StatusBadGateway, code: "model_unavailable", msg: err.Error()}
	case errors.As(err, &fe):
		e = apiError{status: fe.Code, code: fiberCode(fe.Code), msg: fe.Message}
	default:
		h.o.Logger.Error("internal error", "err", err)
		e = apiError{status: fiber.StatusInternalServerError, code: "internal", msg: "internal error"}
	}
	e.msg = errtext.OneLine(h.o.Redactor.String(e.msg))
	return &e
}

// StatusOf is apiErrorOf for the front doors that are not HTTP handlers (the MCP server's tool
// errors): the status, code and one-line message err becomes, masked by red (nil masks URLs'
// credentials only). An unexpected error is logged to log (nil: slog.Default).
func StatusOf(err error, red *redact.Redactor, log *slog.Logger) (status int, code, msg string) {
	if log == nil {
		log = slog.Default()
	}
	h := &handlers{o: Options{Redactor: red, Logger: log}}
	e := h.apiErrorOf(err)
	return e.status, e.code, e.msg
}

func fiberCode(status int) string {
	switch status {
	case fiber.StatusRequestEntityTooLarge:
		return "body_too_large"
	case fiber.StatusMethodNotAllowed:
		return "method_not_allowed"
	case fiber.StatusNotFound:
		return "not_found"
	case fiber.StatusRequestTimeout:
		return "timeout"
	}
	if status >= 500 {
		return "internal"
	}
	return "bad_request"
}
