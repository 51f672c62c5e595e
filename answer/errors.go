package answer

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"toolrouter/approval"
	"toolrouter/auth"
	"toolrouter/council"
	"toolrouter/internal/errtext"
	"toolrouter/inventory"
	"toolrouter/limits"
	"toolrouter/redact"
	"toolrouter/reload"
	"toolrouter/router"
	records "toolrouter/usage"
)

// Problem is an error as a client is told it: an HTTP status, a code and a one-line message. A
// front door's own checks return one (BadRequest); Classify makes one of any other error. The
// HTTP API answers it as its status and JSON body, the MCP server as a tool's isError result.
type Problem struct {
	Status  int
	Code    string
	Message string
	// Challenge, on a 401, is the WWW-Authenticate header's value.
	Challenge string
	// Problems, when not empty, lists each problem found (a refused configuration's).
	Problems []string
	// Param names the request field at fault, for the OpenAI-compatible routes' error shape.
	Param string
	// RetryAfter, on a 429, is the Retry-After header's value in seconds.
	RetryAfter int
}

func (p *Problem) Error() string { return p.Message }

// BadRequest is a 400 with its code and message.
func BadRequest(code, msg string) *Problem {
	return &Problem{Status: http.StatusBadRequest, Code: code, Message: msg}
}

// ParamError is a 400 naming the request field at fault (OpenAI's error param).
func ParamError(code, param, msg string) *Problem {
	return &Problem{Status: http.StatusBadRequest, Code: code, Message: msg, Param: param}
}

// ErrorBody is the JSON every front door answers an error with over HTTP:
// {"error":{"code","message"[,"problems"]}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is ErrorBody's error.
type ErrorDetail struct {
	Code     string   `json:"code"`
	Message  string   `json:"message"`
	Problems []string `json:"problems,omitempty"`
}

// Body is p as ErrorBody.
func (p *Problem) Body() ErrorBody {
	return ErrorBody{Error: ErrorDetail{Code: p.Code, Message: p.Message, Problems: p.Problems}}
}

// StatusClientClosed is the status recorded for a request whose client left before the answer
// (nginx's 499); nobody receives it.
const StatusClientClosed = 499

// The errors every front door answers alike. Classify maps each.
var (
	// ErrShuttingDown is the cause of a request's end when the server shut down before it finished.
	ErrShuttingDown = errors.New("the server is shutting down")
	// ErrClientGone is the cause of a request's end when its client closed the connection first.
	ErrClientGone = router.ErrClientGone
	// ErrUnknownModel is a Completer's error for a model its provider does not have.
	ErrUnknownModel = errors.New("model not found")
	// ErrCompletion wraps a failed completion model call.
	ErrCompletion = errors.New("completion model failed")
	// ErrNoCompleter: a chat completion without a Completer.
	ErrNoCompleter = errors.New("chat completions are not wired to a model provider")
	// ErrNoCouncilModel: model "council" without a council.
	ErrNoCouncilModel = errors.New(`model "council" asks for the council, but none is configured (council.members in the configuration)`)
	// ErrTooManySessions: an MCP initialize over mcp_server.max_sessions or
	// mcp_server.max_sessions_per_identity. The error wrapping it names the cap.
	ErrTooManySessions = errors.New("too many MCP sessions")
	// ErrUnknownSession: a request names an MCP session that does not exist, has ended, or
	// belongs to another identity (the three are not told apart, so one identity cannot probe
	// another's).
	ErrUnknownSession = errors.New("no such MCP session")
	// ErrNoReload: the server was built without a way to reload its configuration.
	ErrNoReload = errors.New("this server does not reload its configuration")
)

// Interrupted returns why ctx's work was cut short by the front door, ErrShuttingDown or
// ErrClientGone; nil when it was not (it finished, or it timed out: the router reports what it
// gathered, or nobody cancelled it for a reason of the door's).
func Interrupted(ctx context.Context) error {
	if cause := context.Cause(ctx); errors.Is(cause, ErrShuttingDown) || errors.Is(cause, ErrClientGone) {
		return cause
	}
	return nil
}

// Classify is the one place an error becomes a status, a code and a message, for every front
// door. The message is always one line, whatever the error's text (errors.Join, for one, puts
// newlines in it), and goes through red: no credential the configuration holds or names, and no
// URL's, reaches the client, even one the request itself sent (nil masks URLs' only). An
// unexpected error is logged to log (nil: slog.Default) and answered 500 internal.
func Classify(err error, red *redact.Redactor, log *slog.Logger) *Problem {
	var (
		pp  *Problem
		ie  *reload.InvalidError
		le  *limits.Exceeded
		pe  *records.ParamError
		pin *inventory.PinnedInConfigError
		e   Problem
	)
	switch {
	case errors.As(err, &pp):
		e = *pp
	// Checked before anything a cancelled model or tool call becomes: the request ended because the
	// server is going away, or because nobody is waiting for the answer any more.
	case errors.Is(err, ErrShuttingDown):
		e = Problem{Status: http.StatusServiceUnavailable, Code: "shutting_down", Message: "the server is shutting down; retry on another instance or once it is back"}
	case errors.Is(err, ErrClientGone):
		e = Problem{Status: StatusClientClosed, Code: "client_closed_request", Message: "the client closed the connection before the answer"}
	// Package auth's messages never hold a credential.
	case errors.Is(err, auth.ErrMissing):
		e = Problem{Status: http.StatusUnauthorized, Code: "missing_credential", Message: err.Error(), Challenge: auth.Challenge(err)}
	case errors.Is(err, auth.ErrInvalid):
		e = Problem{Status: http.StatusUnauthorized, Code: "invalid_credential", Message: err.Error(), Challenge: auth.Challenge(err)}
	case errors.Is(err, auth.ErrKeysUnavailable):
		e = Problem{Status: http.StatusServiceUnavailable, Code: "jwks_unavailable", Message: err.Error()}
	case errors.Is(err, auth.ErrForbidden):
		e = Problem{Status: http.StatusForbidden, Code: "forbidden", Message: err.Error()}
	case errors.As(err, &le):
		e = Problem{Status: http.StatusTooManyRequests, Code: "rate_limited", Message: err.Error(), RetryAfter: limits.RetrySeconds(le.RetryAfter)}
	case errors.Is(err, limits.ErrUnavailable):
		e = Problem{Status: http.StatusServiceUnavailable, Code: "rate_limit_unavailable", Message: err.Error()}
	case errors.Is(err, ErrUnknownModel):
		e = Problem{Status: http.StatusNotFound, Code: "model_not_found", Message: err.Error(), Param: "model"}
	case errors.Is(err, ErrNoCompleter):
		e = Problem{Status: http.StatusServiceUnavailable, Code: "completions_off", Message: err.Error()}
	case errors.Is(err, ErrNoCouncil), errors.Is(err, ErrNoCouncilModel):
		e = Problem{Status: http.StatusServiceUnavailable, Code: "no_council", Message: err.Error()}
	// An unmet quorum is the council being unavailable, even when its members timed out.
	case errors.Is(err, council.ErrQuorum):
		e = Problem{Status: http.StatusBadGateway, Code: "quorum_not_met", Message: err.Error()}
	// A deadline is checked before ErrModel: in Fail mode the router wraps a model call cut short by
	// the request (or call) timeout in ErrModel, and that is a timeout, not an unavailable model.
	case errors.Is(err, context.DeadlineExceeded):
		e = Problem{Status: http.StatusGatewayTimeout, Code: "timeout", Message: err.Error()}
	case errors.Is(err, router.ErrNoRanker):
		e = Problem{Status: http.StatusNotFound, Code: "retrieval_off", Message: "retrieval is off (retrieval.enabled is false)"}
	case errors.As(err, &ie):
		e = Problem{Status: http.StatusUnprocessableEntity, Code: "invalid_config", Message: err.Error()}
		for _, p := range ie.Problems {
			e.Problems = append(e.Problems, errtext.OneLine(red.String(p)))
		}
	case errors.Is(err, ErrNoReload):
		e = Problem{Status: http.StatusNotFound, Code: "reload_off", Message: err.Error()}
	case errors.Is(err, inventory.ErrClosed):
		e = Problem{Status: http.StatusServiceUnavailable, Code: "shutting_down", Message: "the server is shutting down; its configuration is no longer reloaded"}
	case errors.Is(err, router.ErrUnknownTool), errors.Is(err, inventory.ErrUnknownServer), errors.Is(err, inventory.ErrUnknownTool):
		e = Problem{Status: http.StatusNotFound, Code: "unknown_tool", Message: err.Error()}
	case errors.Is(err, approval.ErrUnknownToken):
		e = Problem{Status: http.StatusNotFound, Code: "unknown_token", Message: err.Error()}
	case errors.Is(err, approval.ErrOtherIdentity):
		e = Problem{Status: http.StatusForbidden, Code: "token_identity", Message: err.Error()}
	case errors.Is(err, approval.ErrExpired):
		e = Problem{Status: http.StatusGone, Code: "token_expired", Message: err.Error()}
	case errors.Is(err, approval.ErrUsed):
		e = Problem{Status: http.StatusConflict, Code: "token_used", Message: err.Error()}
	case errors.Is(err, router.ErrNotApprover):
		e = Problem{Status: http.StatusForbidden, Code: "not_approver", Message: err.Error() + ": it is not yours, and you are not among its approvers (safety.approvers)"}
	case errors.Is(err, router.ErrNoQueue):
		e = Problem{Status: http.StatusNotFound, Code: "approvals_off", Message: err.Error()}
	case errors.Is(err, router.ErrToolChanged):
		e = Problem{Status: http.StatusConflict, Code: "tool_changed", Message: err.Error()}
	case errors.Is(err, router.ErrToolUnavailable):
		e = Problem{Status: http.StatusServiceUnavailable, Code: "tool_unavailable", Message: err.Error()}
	case errors.Is(err, inventory.ErrNothingToApprove):
		e = Problem{Status: http.StatusConflict, Code: "nothing_to_approve", Message: err.Error()}
	case errors.As(err, &pin):
		e = Problem{Status: http.StatusConflict, Code: "pinned_in_config", Message: err.Error()}
	case errors.Is(err, ErrTooManySessions):
		e = Problem{Status: http.StatusTooManyRequests, Code: "too_many_sessions", Message: err.Error()}
	case errors.Is(err, ErrUnknownSession):
		e = Problem{Status: http.StatusNotFound, Code: "session_not_found", Message: err.Error()}
	case errors.Is(err, records.ErrOff):
		e = Problem{Status: http.StatusNotFound, Code: "usage_off", Message: err.Error()}
	case errors.As(err, &pe):
		e = Problem{Status: http.StatusBadRequest, Code: "bad_" + pe.Param, Message: pe.Error()}
	case errors.Is(err, ErrNoValidCall):
		e = Problem{Status: http.StatusBadGateway, Code: "no_valid_tool_call", Message: err.Error()}
	case errors.Is(err, router.ErrModel), errors.Is(err, ErrCompletion):
		e = Problem{Status: http.StatusBadGateway, Code: "model_unavailable", Message: err.Error()}
	default:
		if log == nil {
			log = slog.Default()
		}
		log.Error("internal error", "err", err)
		e = Problem{Status: http.StatusInternalServerError, Code: "internal", Message: "internal error"}
	}
	e.Message = errtext.OneLine(red.String(e.Message))
	return &e
}
