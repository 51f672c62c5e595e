package server

import (
	"fmt"
	"mime"
	"net"
	"net/netip"
	"slices"
	"strings"

	"toolrouter/answer"

	"github.com/gofiber/fiber/v2"
)

// guard refuses what a web page could make a browser send to this API, from another site or
// through DNS rebinding (a hostname of the attacker's that resolves to 127.0.0.1):
//
//   - a request whose Host header is not the server's (see hostSet): 403 host_not_allowed. A
//     rebound page's requests carry the attacker's hostname. /healthz answers any host;
//   - a request with an Origin header not in http.allowed_origins: 403 origin_not_allowed.
//     Browsers send Origin with every cross-origin request and every POST, same-origin or not;
//     callers that are not browsers send none. An allowed origin's preflight (OPTIONS) is
//     answered, and its responses carry Access-Control-Allow-Origin. With the console on, the
//     server's own origin passes as if it had none (consoleOrigin): the console's POSTs carry it.
//
// Nothing runs for a refused request: the check comes before authentication and any handler. A
// POST whose body is not JSON, the other thing a page can send, is refused by accepts.
func (h *handlers) guard(c *fiber.Ctx) error {
	if h.hosts != nil && c.Path() != pathHealthz {
		if host := string(c.Request().Host()); !h.hosts.allows(host) {
			msg := "requests without a Host header are refused"
			if host != "" {
				msg = fmt.Sprintf("requests for host %q are refused: it is not the listen address or in http.allowed_hosts", clipHeader(host))
			}
			return &answer.Problem{Status: fiber.StatusForbidden, Code: "host_not_allowed", Message: msg}
		}
	}
	if origin := c.Get(fiber.HeaderOrigin); origin != "" && !h.consoleOrigin(c, origin) {
		if !slices.Contains(h.o.AllowedOrigins, origin) {
			return &answer.Problem{Status: fiber.StatusForbidden, Code: "origin_not_allowed",
				Message: fmt.Sprintf("requests from the browser origin %q are refused: it is not in http.allowed_origins", clipHeader(origin))}
		}
		c.Vary(fiber.HeaderOrigin)
		c.Set(fiber.HeaderAccessControlAllowOrigin, origin)
		if c.Path() == pathMCP {
			c.Set(fiber.HeaderAccessControlExposeHeaders, "Mcp-Session-Id")
		}
		if c.Method() == fiber.MethodOptions && c.Get(fiber.HeaderAccessControlRequestMethod) != "" {
			if c.Path() == pathMCP {
				c.Set(fiber.HeaderAccessControlAllowMethods, "GET, POST, DELETE")
				c.Set(fiber.HeaderAccessControlAllowHeaders, mcpRequestHeaders)
			} else {
				c.Set(fiber.HeaderAccessControlAllowMethods, "GET, POST")
				c.Set(fiber.HeaderAccessControlAllowHeaders, fiber.HeaderContentType)
			}
			c.Set(fiber.HeaderAccessControlMaxAge, "600")
			return c.SendStatus(fiber.StatusNoContent)
		}
	}
	return c.Next()
}

// accepts runs once the request is authenticated (a request without a credential learns nothing
// of the routes: it is a 401), before the rate limits and any handler. It refuses, in this order:
//
//   - a path not served: 404 not_found; a method its route does not take: 405
//     method_not_allowed, with Allow. The method is checked before the body's type, so that
//     POST /v1/models is a 405 whatever its Content-Type;
//   - a POST whose body is not declared JSON: 415 unsupported_media_type. A page can POST
//     text/plain, form or multipart bodies without a preflight, never application/json. This
//     holds for /mcp's POSTs too; its GET (the event stream) and DELETE (the session's end)
//     carry no body and pass.
func (h *handlers) accepts(c *fiber.Ctx) error {
	if err := h.unrouted(c); err != nil {
		return err
	}
	if c.Method() == fiber.MethodPost {
		ct := c.Get(fiber.HeaderContentType)
		if ct == fiber.MIMEApplicationJSON {
			return c.Next() // as most clients send it: nothing to parse
		}
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != fiber.MIMEApplicationJSON {
			got := "none"
			if ct != "" {
				got = fmt.Sprintf("%q", clipHeader(ct))
			}
			return &answer.Problem{Status: fiber.StatusUnsupportedMediaType, Code: "unsupported_media_type",
				Message: "the body must be JSON, sent with Content-Type: application/json; got " + got}
		}
	}
	return c.Next()
}

// mcpRequestHeaders are the headers an allowed origin's page may send to /mcp.
const mcpRequestHeaders = "Content-Type, Authorization, X-Api-Key, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-Id"

// clipHeader shortens a header value for a message.
func clipHeader(s string) string {
	if len(s) > 100 {
		return strings.ToValidUTF8(s[:100], "") + "…"
	}
	return s
}

// hostSet is the Host header values a server answers: each listen address as host:port and, for
// a loopback or every-interface listen, the loopback names with its port (localhost, 127.0.0.1,
// [::1]; bare on port 80); then http.allowed_hosts, where "name:port" is that exactly and "name"
// that name on any port. Values compare in lower case.
type hostSet struct {
	exact   map[string]bool
	anyPort map[string]bool
}

// newHostSet returns the hosts of the listen addresses and allowed; nil, checking nothing, when
// both are empty.
func newHostSet(listen, allowed []string) *hostSet {
	if len(listen) == 0 && len(allowed) == 0 {
		return nil
	}
	s := &hostSet{exact: map[string]bool{}, anyPort: map[string]bool{}}
	for _, addr := range listen {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			continue
		}
		if host != "" && !unspecified(host) {
			s.exact[strings.ToLower(net.JoinHostPort(host, port))] = true
		}
		if host == "" || unspecified(host) || loopback(host) {
			for _, name := range []string{"localhost", "127.0.0.1", "::1"} {
				s.exact[net.JoinHostPort(name, port)] = true
				if port == "80" { // browsers leave the default port out
					s.exact[strings.TrimSuffix(net.JoinHostPort(name, port), ":80")] = true
				}
			}
		}
	}
	for _, a := range allowed {
		a = strings.ToLower(a)
		if _, _, err := net.SplitHostPort(a); err == nil {
			s.exact[a] = true
		} else {
			s.anyPort[strings.Trim(a, "[]")] = true
		}
	}
	return s
}

// allows reports whether a Host header value is one of the set's.
func (s *hostSet) allows(host string) bool {
	host = strings.ToLower(host)
	if s.exact[host] {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return host != "" && s.anyPort[strings.Trim(host, "[]")]
}

// unspecified reports whether host is 0.0.0.0 or ::, every interface.
func unspecified(host string) bool {
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsUnspecified()
}

// loopback reports whether host is localhost or a loopback address.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
