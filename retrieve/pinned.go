package retrieve

import (
	"path"
	"strings"
)

// Pinned says which tools are pinned: always shown to phase 1, whatever the query. Patterns are
// read as access lists read them: a qualified name ("clock.current_time"), a server's name alone
// or with ".*" (every tool of it), or a path.Match glob over qualified names ("*.read_*", "*").
// The zero value pins nothing.
type Pinned struct {
	all     bool
	exact   map[string]bool
	servers map[string]bool
	globs   []string
}

// NewPinned compiles patterns. A pattern that is not a valid glob never matches (configuration
// validation refuses it before).
func NewPinned(patterns []string) *Pinned {
	p := &Pinned{exact: map[string]bool{}, servers: map[string]bool{}}
	for _, pat := range patterns {
		server, rest, dotted := strings.Cut(pat, ".")
		switch {
		case pat == "":
		case pat == "*":
			p.all = true
		case !strings.ContainsAny(server, `*?[\`) && (!dotted || rest == "*"):
			p.servers[server] = true
		case !strings.ContainsAny(pat, `*?[\`):
			p.exact[pat] = true
		default:
			if _, err := path.Match(pat, ""); err == nil {
				p.globs = append(p.globs, pat)
			}
		}
	}
	return p
}

// Match reports whether the qualified tool name is pinned.
func (p *Pinned) Match(qualified string) bool {
	if p == nil {
		return false
	}
	if p.all || p.exact[qualified] {
		return true
	}
	if server, _, ok := strings.Cut(qualified, "."); ok && p.servers[server] {
		return true
	}
	for _, g := range p.globs {
		if ok, _ := path.Match(g, qualified); ok {
			return true
		}
	}
	return false
}

// Empty reports whether the patterns pin nothing at all.
func (p *Pinned) Empty() bool {
	return p == nil || !p.all && len(p.exact) == 0 && len(p.servers) == 0 && len(p.globs) == 0
}
