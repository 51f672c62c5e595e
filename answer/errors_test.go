package answer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"testing"

	"toolrouter/approval"
	"toolrouter/auth"
	"toolrouter/inventory"
	"toolrouter/router"
)

// TestClassify: the status and code every front door answers an error with, whatever wraps it,
// and a message of one line.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err        error
		wantStatus int
		wantCode   string
	}{
		{"a problem of the door's own", BadRequest("empty_query", "query must not be empty"), http.StatusBadRequest, "empty_query"},
		{"keys not fetched yet", fmt.Errorf("authenticating: %w", auth.ErrKeysUnavailable), http.StatusServiceUnavailable, "jwks_unavailable"},
		{"the client left", fmt.Errorf("routing: %w", ErrClientGone), StatusClientClosed, "client_closed_request"},
		{"shutting down beats a model error", errors.Join(router.ErrModel, ErrShuttingDown), http.StatusServiceUnavailable, "shutting_down"},
		{"a deadline beats a model error", fmt.Errorf("%w: %w", router.ErrModel, context.DeadlineExceeded), http.StatusGatewayTimeout, "timeout"},
		{"an unknown model", fmt.Errorf("model x: %w", ErrUnknownModel), http.StatusNotFound, "model_not_found"},
		{"a failed completion", fmt.Errorf("%w: boom", ErrCompletion), http.StatusBadGateway, "model_unavailable"},
		{"a tool not quarantined", fmt.Errorf("approving: %w", inventory.ErrNothingToApprove), http.StatusConflict, "nothing_to_approve"},
		{"an unknown server", fmt.Errorf("approving: %w", inventory.ErrUnknownServer), http.StatusNotFound, "unknown_tool"},
		{"a replayed approval", fmt.Errorf("approving: %w", approval.ErrUsed), http.StatusConflict, "token_used"},
		{"another identity's approval", approval.ErrOtherIdentity, http.StatusForbidden, "token_identity"},
		{"an expired approval", approval.ErrExpired, http.StatusGone, "token_expired"},
		{"a token never issued", approval.ErrUnknownToken, http.StatusNotFound, "unknown_token"},
		{"a tool changed since held", fmt.Errorf("%w: fs.rm", router.ErrToolChanged), http.StatusConflict, "tool_changed"},
		{"a session cap", fmt.Errorf("%w: max", ErrTooManySessions), http.StatusTooManyRequests, "too_many_sessions"},
		{"anything else", errors.New("line one\nline two"), http.StatusInternalServerError, "internal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Classify(tc.err, nil, slog.New(slog.DiscardHandler))
			if p.Status != tc.wantStatus || p.Code != tc.wantCode {
				t.Errorf("got %d %s, want %d %s", p.Status, p.Code, tc.wantStatus, tc.wantCode)
			}
			for _, r := range p.Message {
				if r == '\n' || r == '\r' {
					t.Errorf("got message %q, want one line", p.Message)
				}
			}
		})
	}
}
