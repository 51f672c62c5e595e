package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"toolrouter/access"
	"toolrouter/internal/fakeollama"
	"toolrouter/server"
)

// admitAll is a Limiter that admits every request: with one, the work routes are registered
// twice in fiber (the limit, then the handler).
type admitAll struct{}

func (admitAll) Admit(context.Context, access.Identity) (func(), error) { return func() {}, nil }
func (admitAll) Backend() string                                        { return "local" }
func (admitAll) DroppedCharges() uint64                                 { return 0 }

// TestMethodsBeforeContentType: a path's methods are checked before a POST's Content-Type, on
// every route; a 405's Allow lists each method once, rate limits on or not; a path not served
// is a 404 whatever its body.
func TestMethodsBeforeContentType(t *testing.T) {
	model := fakeollama.New(t)
	inv := newInventory(t)
	app := server.New(server.Deps{Inventory: inv, Model: model.Client(), Limiter: admitAll{}, Completer: &fakeCompleter{}},
		server.Options{Logger: quiet, Model: "fake"})
	tests := []struct {
		name        string
		method      string
		path        string
		contentType string
		wantStatus  int
		wantCode    string
		wantAllow   string
	}{
		{"POST /v1/models without a Content-Type", http.MethodPost, "/v1/models", "", http.StatusMethodNotAllowed, "method_not_allowed", "GET"},
		{"POST /v1/models as text", http.MethodPost, "/v1/models", "text/plain", http.StatusMethodNotAllowed, "method_not_allowed", "GET"},
		{"POST a model without a Content-Type", http.MethodPost, "/v1/models/fake", "", http.StatusMethodNotAllowed, "method_not_allowed", "GET"},
		{"POST /v1/inventory without a Content-Type", http.MethodPost, "/v1/inventory", "", http.StatusMethodNotAllowed, "method_not_allowed", "GET"},
		{"GET a limited work route", http.MethodGet, "/v1/chat/completions", "", http.StatusMethodNotAllowed, "method_not_allowed", "POST"},
		{"PUT a limited work route", http.MethodPut, "/v1/route", "application/json", http.StatusMethodNotAllowed, "method_not_allowed", "POST"},
		{"trailing slash and case, as fiber routes them", http.MethodGet, "/V1/Route/", "", http.StatusMethodNotAllowed, "method_not_allowed", "POST"},
		{"POST a path not served without a Content-Type", http.MethodPost, "/v1/nope", "", http.StatusNotFound, "not_found", ""},
		{"POST a work route without a Content-Type", http.MethodPost, "/v1/route", "", http.StatusUnsupportedMediaType, "unsupported_media_type", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, nil)
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			resp, err := app.Test(req, testTimeout)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			var body struct {
				Error struct {
					Code string `json:"code"`
				} `json:"error"`
			}
			_ = json.Unmarshal(raw, &body)
			if resp.StatusCode != tc.wantStatus || body.Error.Code != tc.wantCode {
				t.Errorf("got %d %s, want %d %s", resp.StatusCode, raw, tc.wantStatus, tc.wantCode)
			}
			if got := resp.Header.Get("Allow"); got != tc.wantAllow {
				t.Errorf("got Allow %q, want %q", got, tc.wantAllow)
			}
		})
	}
}

// TestModel: GET /v1/models/{id} answers OpenAI's model object for each id GET /v1/models lists
// (slashes as they are or escaped) and 404 model_not_found, in OpenAI's shape, for any other.
func TestModel(t *testing.T) {
	model := fakeollama.New(t)
	model.Models = []string{"qwen2.5:7b", "llama3.1:8b"}
	e := newChatEnv(t, model, &fakeCompleter{}, newCouncil(t, 2, false).council, server.Options{RouterProvider: "ollama",
		Models: []server.ModelInfo{{ID: "qwen2.5:7b", OwnedBy: "ollama"}, {ID: "remote/gpt-4o-mini", OwnedBy: "remote"}}})
	tests := []struct {
		name      string
		path      string
		wantID    string // "" for a 404
		wantOwner string
	}{
		{"a configured model", "/v1/models/qwen2.5:7b", "qwen2.5:7b", "ollama"},
		{"a provider's model", "/v1/models/remote/gpt-4o-mini", "remote/gpt-4o-mini", "remote"},
		{"a provider's model, escaped", "/v1/models/remote%2Fgpt-4o-mini", "remote/gpt-4o-mini", "remote"},
		{"a pulled model", "/v1/models/llama3.1:8b", "llama3.1:8b", "ollama"},
		{"the council", "/v1/models/council", "council", "toolrouter"},
		{"a model not listed", "/v1/models/gpt-5", "", ""},
		{"another provider's prefix", "/v1/models/remote/gpt-5", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, raw, m := do(t, e.app, http.MethodGet, tc.path, nil)
			if tc.wantID == "" {
				code, typ, param := openAIErrorOf(t, raw)
				if status != http.StatusNotFound || code != "model_not_found" || typ != "invalid_request_error" || param != "model" {
					t.Errorf("got %d %s, want 404 model_not_found invalid_request_error on model", status, raw)
				}
				return
			}
			if status != http.StatusOK || m["id"] != tc.wantID || m["object"] != "model" || m["owned_by"] != tc.wantOwner || len(m) != 4 {
				t.Errorf("got %d %s, want 200 {id %s, object model, created, owned_by %s}", status, raw, tc.wantID, tc.wantOwner)
			}
			if _, ok := m["created"].(float64); !ok {
				t.Errorf("got %s, want created as a number", raw)
			}
		})
	}
}
