package server

import (
	"errors"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"toolrouter/answer"
)

// errorHandler renders every error as {"error":{"code","message"}} with its status. It is fiber's
// ErrorHandler, and accessLog calls it for the handlers' errors so that it logs the status sent.
func (h *handlers) errorHandler(c *fiber.Ctx, err error) error {
	e := h.problemOf(err)
	if e.Challenge != "" {
		c.Set(fiber.HeaderWWWAuthenticate, e.Challenge)
	}
	if e.RetryAfter > 0 {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(e.RetryAfter))
	}
	if openAIPath(c.Path()) {
		return c.Status(e.Status).JSON(openAIError(e))
	}
	return c.Status(e.Status).JSON(e.Body())
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
