package access

import (
	"fmt"
	"path"
	"strings"
)

// A pattern selects qualified tool names ("server.tool"): an exact name, a server name alone
// (every tool of that server), or a path.Match glob ("calculator.*", "*", "*.read_*").

// globMeta are the characters that make a pattern a glob.
const globMeta = `*?[\`

// checkPattern says what is wrong with a pattern; "" when nothing is.
func checkPattern(p string) string {
	switch {
	case p == "":
		return "must not be empty"
	case strings.Contains(p, "/"):
		return fmt.Sprintf("bad pattern %q: tool names have no '/'", p)
	}
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Sprintf("bad pattern %q: %v", p, err)
	}
	return ""
}

// matcher is a compiled list of patterns.
type matcher struct {
	patterns []string        // as given
	all      bool            // "*" is among them
	exact    map[string]bool // qualified names
	servers  map[string]bool // server names, from "server" and "server.*"
	globs    []string        // the rest
}

// compile compiles valid patterns; nil for none.
func compile(patterns []string) *matcher {
	if len(patterns) == 0 {
		return nil
	}
	m := &matcher{patterns: patterns, exact: map[string]bool{}, servers: map[string]bool{}}
	for _, p := range patterns {
		server, rest, dotted := strings.Cut(p, ".")
		switch {
		case p == "*":
			m.all = true
		case !strings.ContainsAny(server, globMeta) && (!dotted || rest == "*"):
			m.servers[server] = true
		case !strings.ContainsAny(p, globMeta):
			m.exact[p] = true
		default:
			m.globs = append(m.globs, p)
		}
	}
	return m
}

// match reports whether any pattern matches the qualified tool name.
func (m *matcher) match(tool string) bool {
	if m.all || m.exact[tool] {
		return true
	}
	if server, _, ok := strings.Cut(tool, "."); ok && m.servers[server] {
		return true
	}
	for _, g := range m.globs {
		if ok, _ := path.Match(g, tool); ok {
			return true
		}
	}
	return false
}
