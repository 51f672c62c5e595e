package server

import (
	"errors"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"toolrouter/answer"
)

// errorHandler renders every error with its status, in the dialect of the door its path is (errorBody). It is fiber's
// ErrorHandler, and accessLog calls it for the handlers' errors so that it logs the status sent.
func (h *handlers) errorHandler(c *fiber.Ctx, err error) error {
	e := h.problemOf(err)
	if e.Challenge != "" {
		c.Set(fiber.HeaderWWWAuthenticate, e.Challenge)
	}
	if e.RetryAfter > 0 {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(e.RetryAfter))
	}
	return c.Status(e.Status).JSON(errorBody(h.dialectOf(c.Path()), e))
}

// errorBody is e's body in a door's dialect: toolrouter's {"error": {"code", "message"}},
// OpenAI's {"error": {"message", "type", "param", "code"}} or Ollama's {"error": "message"}.
func errorBody(d dialect, e *answer.Problem) any {
	switch d {
	case dialectOpenAI:
		return openAIError(e)
	case dialectOllama:
		return ollamaError{Error: e.Message}
	}
	return e.Body()
}

// problemOf is what the client is told of err: answer.Classify's, fiber's own errors (an unrouted
// path, a body over the limit) made problems first.
func (h *handlers) problemOf(err error) *answer.Problem {
	var fe *fiber.Error
	if errors.As(err, &fe) {
		err = &answer.Problem{Status: fe.Code, Code: fiberCode(fe.Code), Message: fe.Message}
	}
	return answer.Classify(err, h.o.Redactor, h.o.Logger)
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
