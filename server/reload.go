package server

import (
	"context"
	"fmt"

	"github.com/gofiber/fiber/v2"

	"toolrouter/answer"
	"toolrouter/auth"
	"toolrouter/reload"
)

// Reloader re-reads the configuration and applies it; *reload.Reloader satisfies it.
type Reloader interface {
	Reload(ctx context.Context) (reload.Result, error)
}

// pathReload is the admin endpoint that reloads the configuration.
const pathReload = "/v1/admin/reload"

// admin reports whether the request may see and do what is for admins: any request when callers
// do not authenticate (Options.AdminReadyz unset), else one whose identity has admin scope.
func (h *handlers) admin(c *fiber.Ctx) bool {
	if !h.o.AdminReadyz {
		return true
	}
	id, ok := identity(c)
	return ok && h.d.Auth != nil && h.d.Auth.IsAdmin(id)
}

// reload answers POST /v1/admin/reload: it re-reads the configuration file and applies it (see
// package reload), answering what changed; an invalid configuration is refused whole, with its
// problems. Reloads run one at a time; the request's deadline bounds the wait for the servers it
// connects, not the reload, which goes on.
func (h *handlers) reload(c *fiber.Ctx) error {
	if h.d.Reload == nil {
		return answer.ErrNoReload
	}
	if !h.admin(c) {
		return fmt.Errorf("%w: reloading the configuration needs admin scope (auth.admins)", auth.ErrForbidden)
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), h.o.RequestTimeout)
	defer cancel()
	res, err := h.d.Reload.Reload(ctx)
	if err != nil {
		return err
	}
	return c.JSON(res)
}
