package server

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/gofiber/fiber/v2"

	"toolrouter/access"
	"toolrouter/answer"
	"toolrouter/auth"
)

// Limiter admits a request of an identity, or refuses it (*limits.Exceeded, 429;
// limits.ErrUnavailable, 503), and says where its counters are for /readyz; *limits.Limiter
// satisfies it. release ends the request's hold on its concurrent slots.
type Limiter interface {
	Admit(ctx context.Context, id access.Identity) (release func(), err error)
	Backend() string
	DroppedCharges() uint64
}

// limit admits the request against the limits of the identity it acts for, before its handler
// runs: its credential's, narrowed by the caller its body names (a caller that does not narrow
// it leaves the credential's, and the handler refuses the request). The concurrent slot it holds
// is released once the request is over, when its report is handed to the observers (for a
// stream, after its last event).
func (h *handlers) limit(c *fiber.Ctx) error {
	id, ok := identity(c)
	if !ok {
		return c.Next() // authenticate let it through without one: nothing to limit
	}
	var body struct {
		Caller string `json:"caller"`
	}
	// Only a body that names a caller is decoded here; the handler decodes (and checks) it anyway.
	if bytes.Contains(c.Body(), []byte(`"caller"`)) && json.Unmarshal(c.Body(), &body) == nil && body.Caller != "" && len(body.Caller) <= answer.MaxCallerBytes {
		if narrowed, err := auth.Narrow(id, body.Caller, h.d.Access); err == nil {
			id = narrowed
		}
	}
	release, err := h.d.Limiter.Admit(c.UserContext(), id)
	if err != nil {
		return err
	}
	reportOf(c).release = release
	return c.Next()
}

// limitsState is /readyz's view of the rate limits.
type limitsState struct {
	// Backend is where the counters are: "local", "redis", or "local-fallback" while Redis is
	// down.
	Backend string `json:"backend"`
	// DroppedCharges counts the usage charges dropped because the queue to Redis was full.
	DroppedCharges uint64 `json:"dropped_charges"`
}
