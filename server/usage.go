package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"toolrouter/answer"
	"toolrouter/auth"
	records "toolrouter/usage"
)

// UsageReader answers usage queries; *usage.Recorder satisfies it.
type UsageReader interface {
	Query(ctx context.Context, q records.Query) (*records.Summary, error)
}

// usageQuery answers GET /v1/usage?since=&until=&group_by=&bucket=: the usage records' totals over
// a window, grouped by org, team, agent, tool or model, and with bucket (1h, 1d) per bucket of time
// (usage.ParseQuery and Query.WithBucket read the parameters).
// When callers authenticate (Options.AdminReadyz) only an admin may read them: they name every
// org's traffic.
func (h *handlers) usageQuery(c *fiber.Ctx) error {
	if h.o.AdminReadyz {
		if id, ok := identity(c); !ok || h.d.Auth == nil || !h.d.Auth.IsAdmin(id) {
			return fmt.Errorf("%w: usage records are for admins (auth.admins)", auth.ErrForbidden)
		}
	}
	if h.d.Usage == nil {
		return records.ErrOff
	}
	q, err := records.ParseQuery(strings.Clone(c.Query("since")), strings.Clone(c.Query("until")),
		strings.Clone(c.Query("group_by")), time.Now())
	if err == nil {
		q, err = q.WithBucket(strings.Clone(c.Query("bucket")))
	}
	if err != nil {
		return err
	}
	ctx, end, err := h.request(c.UserContext(), c.Context().Conn())
	if err != nil {
		return err
	}
	defer end()
	s, err := h.d.Usage.Query(ctx, q)
	if cause := answer.Interrupted(ctx); cause != nil {
		return cause
	}
	if err != nil {
		return err
	}
	return c.JSON(s)
}
