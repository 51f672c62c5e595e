package reload_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"toolrouter/auth"
	"toolrouter/config"
	"toolrouter/inventory"
	"toolrouter/reload"
)

// fakeInventory records the servers of each reload and fails the test when two overlap.
type fakeInventory struct {
	t       *testing.T
	active  atomic.Int32
	mu      sync.Mutex // guards servers
	servers []map[string]config.Server
}

func (f *fakeInventory) Reload(_ context.Context, servers map[string]config.Server) (inventory.Change, error) {
	if f.active.Add(1) > 1 {
		f.t.Error("two reloads of the inventory ran at once")
	}
	defer f.active.Add(-1)
	runtime.Gosched()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.servers = append(f.servers, servers)
	return inventory.Change{}, nil
}

type fakeExamples struct{ got map[string][]string }

func (f *fakeExamples) SetConfigured(c map[string][]string) { f.got = c }

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

type headers map[string]string

func (h headers) get(name string) string { return h[name] }

// setup returns a Reloader of the configuration file it writes, and a function that rewrites it.
func setup(t *testing.T, first string) (*reload.Reloader, *fakeInventory, *fakeExamples, *reload.Auth, func(string)) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	write := func(body string) {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(first)
	load := func() (config.Config, error) { return config.Load(path, nil) }
	cfg, err := load()
	if err != nil {
		t.Fatal(err)
	}
	inv, ex := &fakeInventory{t: t}, &fakeExamples{}
	r := reload.New(t.Context(), cfg, reload.Options{Load: load, Inventory: inv, Examples: ex, Logger: slog.New(slog.DiscardHandler),
		NewAuth: func(ctx context.Context, c config.Config) (*auth.Authenticator, error) {
			return auth.New(ctx, c.Auth, auth.Options{})
		}})
	a, err := r.Auth()
	if err != nil {
		t.Fatal(err)
	}
	return r, inv, ex, a, write
}

const orgs = `"orgs": {"acme": {"teams": {"ops": {}, "research": {}}}}`

// TestReloadParts: auth keys and examples change in place, other keys are reported as needing a
// restart until the process restarts, and an invalid file changes nothing.
func TestReloadParts(t *testing.T) {
	oldKey, newKey := "tr_old-key-0123456789abcdef", "tr_new-key-0123456789abcdef"
	r, inv, ex, a, write := setup(t, `{`+orgs+`, "auth": {"keys": [{"name": "k", "sha256": "`+sha(oldKey)+`", "org": "acme", "team": "ops"}]}}`)
	if _, err := a.Authenticate(t.Context(), headers{"X-Api-Key": oldKey}.get); err != nil {
		t.Fatalf("the first key: %v", err)
	}

	write(`{` + orgs + `, "auth": {"keys": [{"name": "k", "sha256": "` + sha(newKey) + `", "org": "acme", "team": "research"}]},
		"router": {"max_history": 3}, "servers": {"calculator": {"transport": "builtin", "examples": {"add": ["2+2"]}}}}`)
	res, err := r.Reload(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"examples", "auth"}; !reflect.DeepEqual(res.Reloaded, want) {
		t.Errorf("got reloaded %v, want %v", res.Reloaded, want)
	}
	if want := []string{"router.max_history"}; !reflect.DeepEqual(res.NeedsRestart, want) {
		t.Errorf("got needs_restart %v, want %v", res.NeedsRestart, want)
	}
	if _, err := a.Authenticate(t.Context(), headers{"X-Api-Key": oldKey}.get); !errors.Is(err, auth.ErrInvalid) {
		t.Errorf("the removed key: got %v, want ErrInvalid", err)
	}
	if id, err := a.Authenticate(t.Context(), headers{"X-Api-Key": newKey}.get); err != nil || id.Team != "research" {
		t.Errorf("the added key: got %v %v, want acme/research", id, err)
	}
	if want := map[string][]string{"calculator.add": {"2+2"}}; !reflect.DeepEqual(ex.got, want) {
		t.Errorf("got examples %v, want %v", ex.got, want)
	}
	if len(inv.servers) != 1 || inv.servers[0]["clock"].Transport != config.TransportBuiltin {
		t.Errorf("the inventory was not given the new servers: %v", inv.servers)
	}

	// Nothing new: the key that needs a restart still does, nothing reloads.
	res, err = r.Reload(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Reloaded) != 0 || !reflect.DeepEqual(res.NeedsRestart, []string{"router.max_history"}) {
		t.Errorf("reloading the same file: got %+v, want only router.max_history needing a restart", res)
	}

	// Orgs changed: auth cannot change with them, both need a restart.
	write(`{"orgs": {"acme": {"teams": {"ops": {}}}}, "auth": {"keys": [{"name": "k", "sha256": "` + sha(oldKey) + `", "org": "acme", "team": "ops"}]}}`)
	res, err = r.Reload(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !slicesHasPrefix(res.NeedsRestart, "auth.keys") || !slicesHasPrefix(res.NeedsRestart, "orgs.acme") {
		t.Errorf("got needs_restart %v, want the auth.keys and orgs keys", res.NeedsRestart)
	}
	if _, err := a.Authenticate(t.Context(), headers{"X-Api-Key": newKey}.get); err != nil {
		t.Errorf("auth changed although orgs did too: %v", err)
	}

	write(`{"listen": "nope", "router": {"max_tool_calls": 0}}`)
	calls := len(inv.servers)
	_, err = r.Reload(t.Context())
	var invalid *reload.InvalidError
	if !errors.As(err, &invalid) || len(invalid.Problems) != 2 {
		t.Fatalf("got %v, want an InvalidError with two problems", err)
	}
	if len(inv.servers) != calls {
		t.Error("an invalid file reached the inventory")
	}
}

func slicesHasPrefix(keys []string, prefix string) bool {
	for _, k := range keys {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// TestReloadsSerialised: concurrent reloads run one at a time.
func TestReloadsSerialised(t *testing.T) {
	r, inv, _, _, _ := setup(t, `{}`)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := r.Reload(t.Context()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if len(inv.servers) != 8 {
		t.Errorf("got %d reloads, want 8", len(inv.servers))
	}
}

// TestProblems splits config.Load's joined errors.
func TestProblems(t *testing.T) {
	one := errors.New("config: loading config file x: no such file")
	tests := []struct {
		name string
		err  error
		want []string
	}{
		{"single", one, []string{one.Error()}},
		{"wrapped join", fmt.Errorf("config: invalid configuration:\n%w", errors.Join(errors.New("a: bad"), errors.New("b: worse"))), []string{"a: bad", "b: worse"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := reload.Problems(tc.err); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestReloadMCPFiles: a reload reads the MCP clients' files again, and servers_from and inputs,
// which only say where servers come from, change in place with them.
func TestReloadMCPFiles(t *testing.T) {
	dir := t.TempDir()
	mcp := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(mcp, []byte(`{"mcpServers": {"GitHub": {"url": "https://gh.example/mcp"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r, inv, _, _, write := setup(t, `{"servers_from": ["`+mcp+`"]}`)
	if err := os.WriteFile(mcp, []byte(`{"inputs": [{"id": "team"}], "servers": {"Team Events": {"type": "sse", "url": "https://ev.example/sse", "headers": {"X-Team": "${input:team}"}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	write(`{"servers_from": ["` + mcp + `", "` + mcp + `"], "inputs": {"team": "ops"}}`)
	if _, err := r.Reload(t.Context()); err == nil || !strings.Contains(err.Error(), "named twice") {
		t.Fatalf("a file named twice: got %v, want the reload refused", err)
	}
	write(`{"servers_from": ["` + mcp + `"], "inputs": {"team": "ops"}}`)
	res, err := r.Reload(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.NeedsRestart) != 0 {
		t.Errorf("got needs_restart %v, want none", res.NeedsRestart)
	}
	last := inv.servers[len(inv.servers)-1]
	if ev, ok := last["team_events"]; !ok || ev.DisplayName != "Team Events" || ev.Headers["X-Team"] != "ops" {
		t.Errorf("got servers %v, want team_events from the edited file", last)
	}
	if _, ok := last["github"]; ok {
		t.Error("github, gone from the file, is still served")
	}
}
