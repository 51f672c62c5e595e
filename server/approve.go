package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"

	"toolrouter/answer"
	"toolrouter/auth"
	"toolrouter/inventory"
)

// Approver approves a tool definition the safety checks hold back or flag; *inventory.Manager
// satisfies it.
type Approver interface {
	Approve(ctx context.Context, server, tool string) (inventory.Approval, error)
}

// pathApprove is the admin endpoint that approves a quarantined or changed tool definition.
const pathApprove = "/v1/admin/tools/approve"

// approve answers POST /v1/admin/tools/approve {"tool": "SERVER.TOOL"}: it accepts the tool's
// definition as the server lists it now (see inventory.Manager.Approve) and answers the approval,
// "restored" saying whether the tool is offered again already. Admins only.
func (h *handlers) approve(c *fiber.Ctx) error {
	if h.d.Approver == nil {
		return &answer.Problem{Status: http.StatusNotFound, Code: "approve_off", Message: "this server does not approve tools"}
	}
	if !h.admin(c) {
		return fmt.Errorf("%w: approving a tool needs admin scope (auth.admins)", auth.ErrForbidden)
	}
	var body struct {
		Tool string `json:"tool"`
	}
	if err := json.Unmarshal(c.Body(), &body); err != nil {
		return answer.BadRequest("bad_request", "the body must be {\"tool\": \"SERVER.TOOL\"}")
	}
	server, tool, ok := strings.Cut(strings.Clone(body.Tool), ".")
	if !ok || server == "" || tool == "" {
		return answer.BadRequest("bad_tool", fmt.Sprintf("tool must be a qualified name SERVER.TOOL, got %q", body.Tool))
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), h.o.RequestTimeout)
	defer cancel()
	a, err := h.d.Approver.Approve(ctx, server, tool)
	if err != nil {
		return err // answer.Classify maps the inventory's errors
	}
	return c.JSON(a)
}
