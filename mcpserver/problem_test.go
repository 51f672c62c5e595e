package mcpserver

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"toolrouter/answer"
)

// TestWriteProblem: a session the gate refuses is answered with the HTTP API's status, code and
// body.
func TestWriteProblem(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err        error
		wantStatus int
		wantCode   string
	}{
		{"session cap", fmt.Errorf("%w: mcp_server.max_sessions", answer.ErrTooManySessions), http.StatusTooManyRequests, "too_many_sessions"},
		{"unknown session", fmt.Errorf("%w: not yours", answer.ErrUnknownSession), http.StatusNotFound, "session_not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			writeProblem(w, answer.Classify(tc.err, nil, nil), slog.New(slog.DiscardHandler))
			var body struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %q: %v", w.Body, err)
			}
			if w.Code != tc.wantStatus || body.Error.Code != tc.wantCode || body.Error.Message != tc.err.Error() {
				t.Errorf("got %d %s %q, want %d %s %q", w.Code, body.Error.Code, body.Error.Message, tc.wantStatus, tc.wantCode, tc.err)
			}
			if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("got Content-Type %q, want application/json", ct)
			}
		})
	}
}
