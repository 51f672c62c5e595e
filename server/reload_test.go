package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"net/http/httptest"

	"github.com/gofiber/fiber/v2"

	"toolrouter/config"
	"toolrouter/internal/fakeollama"
	"toolrouter/inventory"
	"toolrouter/reload"
	"toolrouter/server"
)

// reloadEnv is the API with a Reloader of a real inventory reading a configuration file the test
// rewrites.
type reloadEnv struct {
	app  *fiber.App
	inv  *inventory.Manager
	path string
	logs *syncBuffer
}

func newReloadEnv(t *testing.T, authn server.Authenticator) *reloadEnv {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	writeConfig(t, path, `{}`)
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	inv := inventory.New(cfg.Servers, inventory.Options{Logger: quiet})
	inv.Start(context.Background())
	t.Cleanup(inv.Close)
	logs := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	rl := reload.New(t.Context(), cfg, reload.Options{
		Load: func() (config.Config, error) { return config.Load(path, nil) }, Inventory: inv, Logger: logger,
	})
	model := fakeollama.New(t)
	o := server.Options{Model: "fake", ModelHost: model.URL, Logger: quiet}
	deps := server.Deps{Inventory: inv, Model: model.Client(), Reload: rl}
	if authn != nil {
		deps.Auth, o.AdminReadyz = authn, true
	}
	return &reloadEnv{app: server.New(deps, o), inv: inv, path: path, logs: logs}
}

func writeConfig(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (e *reloadEnv) post(t *testing.T, header map[string]string) (int, []byte) {
	t.Helper()
	req := httptest.NewRequest("POST", "/v1/admin/reload", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := e.app.Test(req, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.Bytes()
}

// TestAdminReload: POST /v1/admin/reload applies the rewritten file and answers what changed; an
// invalid file changes nothing and is a 422 listing every problem, each also logged.
func TestAdminReload(t *testing.T) {
	e := newReloadEnv(t, nil)
	writeConfig(t, e.path, `{"listen": "127.0.0.1:9999",
		"servers": {"clock": {"enabled": false}, "calculator": {"call_timeout": "5s"},
		"clock2": {"transport": "builtin", "builtin": "clock"}}}`)
	status, raw := e.post(t, nil)
	if status != fiber.StatusOK {
		t.Fatalf("got %d %s, want 200", status, raw)
	}
	var got reload.Result
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := reload.Result{
		Servers:  inventory.Change{Added: []string{"clock2"}, Removed: []string{"clock"}, Reconnected: []string{"calculator"}, Unchanged: []string{}},
		Reloaded: []string{}, NeedsRestart: []string{"listen"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if _, ok := e.inv.Snapshot().Tool("clock2.current_time"); !ok {
		t.Errorf("the added server's tools are missing: %+v", e.inv.Snapshot().Servers)
	}

	before := e.inv.Snapshot().Version
	writeConfig(t, e.path, `{"listen": "nope", "ollama": {"timeout": "-1s"}, "servers": {"clock": {"enabled": true}}}`)
	status, raw = e.post(t, nil)
	if status != fiber.StatusUnprocessableEntity {
		t.Fatalf("invalid configuration: got %d %s, want 422", status, raw)
	}
	var body struct {
		Error struct {
			Code     string   `json:"code"`
			Message  string   `json:"message"`
			Problems []string `json:"problems"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	if body.Error.Code != "invalid_config" || len(body.Error.Problems) != 2 ||
		!strings.Contains(body.Error.Problems[0]+body.Error.Problems[1], "listen") ||
		!strings.Contains(body.Error.Problems[0]+body.Error.Problems[1], "ollama.timeout") {
		t.Errorf("got %s, want invalid_config with the listen and ollama.timeout problems", raw)
	}
	if v := e.inv.Snapshot().Version; v != before {
		t.Errorf("an invalid configuration changed the inventory (version %d, was %d)", v, before)
	}
	logged := e.logs.String()
	for _, p := range body.Error.Problems {
		if !strings.Contains(logged, `"problem":`+quote(p)) {
			t.Errorf("problem %q not logged on its own:\n%s", p, logged)
		}
	}
}

// quote is s as a JSON string, as slog writes it (no HTML escaping).
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// TestAdminReloadNeedsAdmin: when callers authenticate only an admin may reload.
func TestAdminReloadNeedsAdmin(t *testing.T) {
	e := newReloadEnv(t, authKeys(t))
	tests := []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"no credential", nil, fiber.StatusUnauthorized},
		{"not an admin", bearer(teamKey), fiber.StatusForbidden},
		{"admin", bearer(adminKey), fiber.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if status, raw := e.post(t, tc.header); status != tc.want {
				t.Errorf("got %d %s, want %d", status, raw, tc.want)
			}
		})
	}
}

// TestAdminReloadOff: an API built without a Reloader says so.
func TestAdminReloadOff(t *testing.T) {
	model := fakeollama.New(t)
	app := server.New(server.Deps{Inventory: newInventory(t), Model: model.Client()}, server.Options{Logger: quiet})
	status, raw, _ := do(t, app, "POST", "/v1/admin/reload", []byte(`{}`))
	if code, _ := errorBody(t, raw); status != fiber.StatusNotFound || code != "reload_off" {
		t.Errorf("got %d %s, want 404 reload_off", status, raw)
	}
}
