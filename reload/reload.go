// Package reload applies a re-read configuration to a running server: on SIGHUP or POST
// /v1/admin/reload. It owns deciding what changed and what of it can change in place (the MCP
// servers, the configured examples, auth) and refusing an invalid configuration whole; the parts
// themselves (package inventory's Reload, retrieve's examples, auth) do the changing. Every other
// changed key is logged as needing a restart, and the rest still applies.
package reload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"toolrouter/auth"
	"toolrouter/config"
	"toolrouter/inventory"
)

// Result is what one reload did.
type Result struct {
	// Servers says which MCP servers were added, removed, reconnected or left as they were.
	Servers inventory.Change `json:"servers"`
	// Reloaded names the other parts the reload changed in place: "examples" (the servers'
	// configured examples) and "auth" (keys, JWT issuer, admins).
	Reloaded []string `json:"reloaded"`
	// NeedsRestart are the changed keys that apply only when the process restarts; the running
	// process keeps their old values.
	NeedsRestart []string `json:"needs_restart"`
}

// InvalidError is a re-read configuration refused whole: the running one stays. Problems are
// each problem's own message (config.Load reports them all).
type InvalidError struct {
	Problems []string
}

func (e *InvalidError) Error() string {
	return "the new configuration is invalid; the running one is kept: " + strings.Join(e.Problems, "; ")
}

// Inventory is the MCP server inventory; *inventory.Manager satisfies it.
type Inventory interface {
	Reload(ctx context.Context, servers map[string]config.Server) (inventory.Change, error)
}

// Examples holds the servers' configured examples; *retrieve.Examples satisfies it.
type Examples interface {
	SetConfigured(configured map[string][]string)
}

// Options are what a Reloader re-reads and changes. Load is required; a nil part is not reloaded
// (its keys need a restart).
// jwksWait bounds how long a reload that changes auth waits for the new authenticator's first
// JWKS fetch.
const jwksWait = 10 * time.Second

type Options struct {
	// Load re-reads the configuration: the same file, environment and flags as at start.
	Load      func() (config.Config, error)
	Inventory Inventory
	Examples  Examples
	// NewAuth builds the authenticator of a configuration; its JWKS refresh, if any, runs until
	// ctx ends. Needed by Auth; without it auth is not reloaded.
	NewAuth func(ctx context.Context, c config.Config) (*auth.Authenticator, error)
	Logger  *slog.Logger
}

// Reloader re-reads the configuration and applies it. Reloads run one at a time.
type Reloader struct {
	o    Options
	life context.Context

	mu         sync.Mutex    // serialises Reload; guards cur, auth and authCancel
	cur        config.Config // the configuration running: what a reload applied, the rest as started
	auth       *Auth         // set by Auth
	authCancel context.CancelFunc
}

// New returns a Reloader of a process running cur. life bounds what the reloaded parts run in
// the background (an authenticator's JWKS refresh).
func New(life context.Context, cur config.Config, o Options) *Reloader {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Reloader{o: o, life: life, cur: cur}
}

// Auth builds the authenticator of the running configuration with Options.NewAuth and returns it
// wrapped in the Auth that later reloads change.
func (r *Reloader) Auth() (*Auth, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ctx, cancel := context.WithCancel(r.life)
	a, err := r.o.NewAuth(ctx, r.cur)
	if err != nil {
		cancel()
		return nil, err
	}
	r.auth = &Auth{}
	r.auth.cur.Store(a)
	r.authCancel = cancel
	return r.auth, nil
}

// Watch reloads on every signal on c until ctx ends; each reload is bounded by ctx and logs what
// it did (a refused one, every problem).
func (r *Reloader) Watch(ctx context.Context, c <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case s := <-c:
			r.o.Logger.Info("reloading the configuration", "signal", s.String())
			_, _ = r.Reload(ctx)
		}
	}
}

// Reload re-reads the configuration and applies it. An invalid configuration changes nothing and
// returns an *InvalidError; otherwise the servers are reconciled (see inventory's Reload), the
// configured examples and auth replaced when they changed and can be, and every other changed
// key logged and returned as needing a restart. It returns once the added and reconnected
// servers have made their first attempt (at most their connect_timeout) or ctx ends.
func (r *Reloader) Reload(ctx context.Context) (Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	next, err := r.o.Load()
	if err != nil {
		inv := &InvalidError{Problems: Problems(err)}
		for _, p := range inv.Problems {
			r.o.Logger.Error("reload refused: the running configuration is kept", "problem", p)
		}
		return Result{}, inv
	}
	old := r.cur
	applied := old
	// What can change in place is left out of the comparison below when it does.
	var inPlace []string
	res := Result{Reloaded: []string{}, NeedsRestart: []string{}}

	var newAuth *auth.Authenticator
	var authCancel context.CancelFunc
	if !reflect.DeepEqual(old.Auth, next.Auth) && r.authReloadable(old, next) {
		actx, cancel := context.WithCancel(r.life)
		a, err := r.o.NewAuth(actx, next)
		if err != nil {
			cancel()
			inv := &InvalidError{Problems: Problems(err)}
			for _, p := range inv.Problems {
				r.o.Logger.Error("reload refused: the running configuration is kept", "problem", p)
			}
			return Result{}, inv
		}
		// The new authenticator fetches its JWKS in the background: wait for it a little, so that a
		// reload does not answer the tokens it keeps accepting with 503 for as long as that takes.
		wctx, wcancel := context.WithTimeout(ctx, jwksWait)
		if err := a.WaitKeys(wctx); err != nil {
			r.o.Logger.Warn("reload: the new JWKS is not fetched yet; requests with a token get 503 jwks_unavailable until it is", "err", err)
		}
		wcancel()
		newAuth, authCancel = a, cancel
		inPlace = append(inPlace, "auth")
		applied.Auth = next.Auth
	}

	if r.o.Inventory != nil {
		if res.Servers, err = r.o.Inventory.Reload(ctx, next.Servers); err != nil {
			if authCancel != nil {
				authCancel()
			}
			return Result{}, fmt.Errorf("reloading servers: %w", err)
		}
		// servers_from and inputs only say where servers come from: the servers apply them.
		inPlace = append(inPlace, "servers", "servers_from", "inputs")
		applied.Servers, applied.ServersFrom, applied.Inputs = next.Servers, next.ServersFrom, next.Inputs
	}
	if r.o.Examples != nil && !reflect.DeepEqual(ConfiguredExamples(old.Servers), ConfiguredExamples(next.Servers)) {
		r.o.Examples.SetConfigured(ConfiguredExamples(next.Servers))
		res.Reloaded = append(res.Reloaded, "examples")
	}
	if newAuth != nil {
		r.auth.cur.Store(newAuth)
		if r.authCancel != nil {
			r.authCancel()
		}
		r.authCancel = authCancel
		res.Reloaded = append(res.Reloaded, "auth")
	}
	res.NeedsRestart = changedKeys(old, next, inPlace)
	r.cur = applied
	for _, k := range res.NeedsRestart {
		r.o.Logger.Warn("configuration change needs a restart; the running value is kept", "key", k)
	}
	r.o.Logger.Info("configuration reloaded", "added", res.Servers.Added, "removed", res.Servers.Removed,
		"reconnected", res.Servers.Reconnected, "unchanged", res.Servers.Unchanged, "reloaded", res.Reloaded,
		"needs_restart", len(res.NeedsRestart))
	return res, nil
}

// authReloadable reports whether a change to auth can apply in place: the orgs its keys and
// admins name are the same, and whether callers authenticate at all is too (it decides what
// /readyz shows).
func (r *Reloader) authReloadable(old, next config.Config) bool {
	return r.auth != nil && reflect.DeepEqual(old.Orgs, next.Orgs) &&
		old.Auth.Configured() == next.Auth.Configured()
}

// ConfiguredExamples are the servers' configured examples by qualified tool name.
func ConfiguredExamples(servers map[string]config.Server) map[string][]string {
	out := map[string][]string{}
	for name, s := range servers {
		for tool, qs := range s.Examples {
			out[inventory.Qualify(name, tool)] = qs
		}
	}
	return out
}

// Problems splits an error from config.Load into its problems: the errors it joined (a wrapped
// errors.Join), else the error itself.
func Problems(err error) []string {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			var out []string
			for _, c := range j.Unwrap() {
				out = append(out, Problems(c)...)
			}
			return out
		}
	}
	return []string{err.Error()}
}

// changedKeys lists the keys, dotted as in the configuration file, whose values differ between
// old and next, leaving out those under the top-level keys skip. A key present on one side only
// is listed itself, not its children.
func changedKeys(old, next config.Config, skip []string) []string {
	a, b := tree(old), tree(next)
	for _, k := range skip {
		delete(a, k)
		delete(b, k)
	}
	var out []string
	diff("", a, b, &out)
	sort.Strings(out)
	return out
}

func tree(c config.Config) map[string]any {
	raw, _ := json.Marshal(c)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return m
}

func diff(prefix string, a, b any, out *[]string) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if !aok || !bok {
		if !reflect.DeepEqual(a, b) {
			*out = append(*out, prefix)
		}
		return
	}
	keys := map[string]bool{}
	for k := range am {
		keys[k] = true
	}
	for k := range bm {
		keys[k] = true
	}
	for k := range keys {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		av, ain := am[k]
		bv, bin := bm[k]
		if ain != bin {
			*out = append(*out, key)
			continue
		}
		diff(key, av, bv, out)
	}
}

// Auth is the API's authenticator, which a reload may replace: each request uses the one current
// when it is authenticated.
type Auth struct {
	cur atomic.Pointer[auth.Authenticator]
}

// Authenticate is the current authenticator's.
func (a *Auth) Authenticate(ctx context.Context, header func(string) string) (auth.Identity, error) {
	return a.cur.Load().Authenticate(ctx, header)
}

// IsAdmin is the current authenticator's.
func (a *Auth) IsAdmin(id auth.Identity) bool { return a.cur.Load().IsAdmin(id) }
