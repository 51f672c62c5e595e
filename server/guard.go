package server

import (
	"fmt"
	"mime"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// guard refuses what a web page could make a browser send to this unauthenticated API, from
// another site or through DNS rebinding (a hostname of the attacker's that resolves to 127.0.0.1):
//
//   - a request with an Origin header not in http.allowed_origins: 403 origin_not_allowed.
//     Browsers send Origin with every cross-origin request and every POST, same-origin or not;
//     callers that are not browsers send none. An allowed origin's preflight (OPTIONS) is
//     answered, and its responses carry Access-Control-Allow-Origin;
//   - a POST whose body is not declared JSON: 415 unsupported_media_type. A page can POST
//     text/plain, form or multipart bodies without a preflight, never application/json.
//
// Nothing runs for a refused request: the check comes before any handler.
func (h *handlers) guard(c *fiber.Ctx) error {
	if origin := c.Get(fiber.HeaderOrigin); origin != "" {
		if !slices.Contains(h.o.AllowedOrigins, origin) {
			return &apiError{status: fiber.StatusForbidden, code: "origin_not_allowed",
				msg: fmt.Sprintf("requests from the browser origin %q are refused: it is not in http.allowed_origins", clipHeader(origin))}
		}
		c.Vary(fiber.HeaderOrigin)
		c.Set(fiber.HeaderAccessControlAllowOrigin, origin)
		if c.Method() == fiber.MethodOptions && c.Get(fiber.HeaderAccessControlRequestMethod) != "" {
			c.Set(fiber.HeaderAccessControlAllowMethods, "GET, POST")
			c.Set(fiber.HeaderAccessControlAllowHeaders, fiber.HeaderContentType)
			c.Set(fiber.HeaderAccessControlMaxAge, "600")
			return c.SendStatus(fiber.StatusNoContent)
		}
	}
	if c.Method() == fiber.MethodPost {
		ct := c.Get(fiber.HeaderContentType)
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != fiber.MIMEApplicationJSON {
			got := "none"
			if ct != "" {
				got = fmt.Sprintf("%q", clipHeader(ct))
			}
			return &apiError{status: fiber.StatusUnsupportedMediaType, code: "unsupported_media_type",
				msg: "the body must be JSON, sent with Content-Type: application/json; got " + got}
		}
	}
	return c.Next()
}

// clipHeader shortens a header value for a message.
func clipHeader(s string) string {
	if len(s) > 100 {
		return strings.ToValidUTF8(s[:100], "") + "…"
	}
	return s
}
