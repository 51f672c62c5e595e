package inventory

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"sync"
	"time"
)

// ErrClosed is returned by Reload once the Manager is closed.
var ErrClosed = errors.New("inventory is closed")

// Change is what a Reload did to each server, by name, each list sorted.
type Change struct {
	// Added are servers the new configuration enables that were not running; they connect.
	Added []string `json:"added"`
	// Removed are servers no longer configured (or now disabled); they are shut down.
	Removed []string `json:"removed"`
	// Reconnected are servers whose configuration changed: the old session is shut down and a
	// new one connects with the new configuration.
	Reconnected []string `json:"reconnected"`
	// Unchanged servers keep their sessions.
	Unchanged []string `json:"unchanged"`
}

// Reload makes the inventory serve servers: it compares each enabled server's effective
// configuration with the running one's, keeps the sessions of unchanged servers, shuts down
// removed ones and connects added and changed ones. It returns once each new connection has
// finished its first attempt (at most its connect_timeout), or when ctx ends; connections go on
// in the background either way. Reloads run one at a time.
//
// A snapshot taken before Reload stays as it was. A tool call in flight on a server Reload shuts
// down finishes on its old session, within the server's call_timeout, before that session closes
// (its stdio process group stopped as Close stops it); a call that starts after Reload on a
// removed server fails with ErrUnknownServer.
func (m *Manager) Reload(ctx context.Context, servers map[string]ServerConfig) (Change, error) {
	m.reloading.Lock()
	defer m.reloading.Unlock()
	next := map[string]ServerConfig{}
	for name, sc := range servers {
		if sc.IsEnabled() {
			next[name] = effective(name, sc)
		}
	}
	var (
		ch    = Change{Added: []string{}, Removed: []string{}, Reconnected: []string{}, Unchanged: []string{}}
		first sync.WaitGroup
		now   = time.Now()
	)
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return Change{}, ErrClosed
	}
	for name, e := range m.entries {
		sc, keep := next[name]
		switch {
		case !keep:
			m.retireLocked(e)
			delete(m.entries, name)
			delete(m.states, name)
			ch.Removed = append(ch.Removed, name)
		case !reflect.DeepEqual(sc, e.cfg):
			m.retireLocked(e)
			m.launchLocked(m.addLocked(name, sc, now), &first)
			ch.Reconnected = append(ch.Reconnected, name)
		default:
			ch.Unchanged = append(ch.Unchanged, name)
		}
	}
	for name, sc := range next {
		if _, ok := m.entries[name]; !ok {
			m.launchLocked(m.addLocked(name, sc, now), &first)
			ch.Added = append(ch.Added, name)
		}
	}
	m.publishLocked()
	m.mu.Unlock()
	for _, l := range [][]string{ch.Added, ch.Removed, ch.Reconnected, ch.Unchanged} {
		slices.Sort(l)
	}
	for _, name := range ch.Removed {
		m.opts.Logger.Info("server removed by reload; shutting it down", "server", name)
	}
	for _, name := range ch.Reconnected {
		m.opts.Logger.Info("server configuration changed by reload; reconnecting", "server", name)
	}
	waitFirst(ctx, &first)
	return ch, nil
}

// retireLocked takes e's session out of service, so that no new call uses it, and stops its
// supervisor, which drains the session's calls and closes it. m.mu must be held.
func (m *Manager) retireLocked(e *entry) {
	e.retired.Store(true)
	delete(m.sessions, e.name)
	if e.stop != nil {
		e.stop()
	}
}

// drain waits until the calls in flight on a retired entry's session have returned, at most the
// server's call timeout; it ends early when the Manager closes.
func (m *Manager) drain(e *entry, sess *session) {
	done := make(chan struct{})
	go func() {
		sess.calls.Wait()
		close(done)
	}()
	t := time.NewTimer(e.cfg.CallTimeout.D())
	defer t.Stop()
	m.mu.Lock()
	life := m.life
	m.mu.Unlock()
	select {
	case <-done:
	case <-t.C:
		e.log.Warn("calls still running on a server removed by reload; closing it anyway", "timeout", e.cfg.CallTimeout.D())
	case <-life.Done():
	}
}
