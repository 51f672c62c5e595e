package server

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"

	"toolrouter/access"
	"toolrouter/answer"
	"toolrouter/auth"
)

// Authenticator establishes who a request comes from, from its Authorization or x-api-key header,
// and whether an identity has admin scope; *auth.Authenticator satisfies it.
type Authenticator interface {
	Authenticate(ctx context.Context, header func(string) string) (auth.Identity, error)
	IsAdmin(id auth.Identity) bool
}

// identityKey is the fiber local holding the request's identity: the credential's, then, once a
// handler has read the request's caller, the one the request acts for.
type identityKey struct{}

// Paths served without a credential: /healthz and /api/version always (Ollama clients and Open
// WebUI ask for the version without one, as Ollama's own server allows); /readyz shows a request
// without one (or without admin scope, when callers authenticate) only whether the server is ready.
const (
	pathHealthz       = "/healthz"
	pathReadyz        = "/readyz"
	pathOllamaVersion = "/api/version"
)

// authenticate establishes the request's identity from its credential before any handler runs:
// without Deps.Auth every request is anonymous (auth.Anonymous). A missing or refused credential
// is a 401 with WWW-Authenticate; nothing else runs.
func (h *handlers) authenticate(c *fiber.Ctx) error {
	if c.Path() == pathHealthz || c.Path() == pathOllamaVersion {
		return c.Next()
	}
	id := auth.Anonymous()
	if h.d.Auth != nil {
		var err error
		id, err = h.d.Auth.Authenticate(c.UserContext(), func(name string) string { return c.Get(name) })
		switch {
		case errors.Is(err, auth.ErrMissing) && c.Path() == pathReadyz:
			return c.Next() // readiness alone
		case err != nil:
			return err
		}
	}
	c.Locals(identityKey{}, id)
	return c.Next()
}

// identity returns the identity authenticate (or actingAs) stored; false when there is none.
func identity(c *fiber.Ctx) (access.Identity, bool) {
	id, ok := c.Locals(identityKey{}).(access.Identity)
	return id, ok
}

// actingAs returns the identity the request acts for: its credential's, narrowed by the caller
// the request names (auth.Narrow). A caller that does not narrow it is a 403 naming the problem;
// the identity is never taken from the request itself. The result replaces the credential's
// identity for the access log.
func (h *handlers) actingAs(c *fiber.Ctx, caller string) (access.Identity, error) {
	if len(caller) > answer.MaxCallerBytes {
		return access.Identity{}, answer.BadRequest("caller_too_long", fmt.Sprintf("caller is %d bytes; the limit is %d", len(caller), answer.MaxCallerBytes))
	}
	id, ok := identity(c)
	if !ok {
		// Only /readyz runs without one, and it names no caller.
		return access.Identity{}, fmt.Errorf("%w: the request has no identity", auth.ErrForbidden)
	}
	narrowed, err := auth.Narrow(id, strings.Clone(caller), h.d.Access)
	if err != nil {
		return access.Identity{}, err
	}
	if narrowed != id {
		c.Locals(identityKey{}, narrowed)
	}
	return narrowed, nil
}
