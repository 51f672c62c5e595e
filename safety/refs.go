package safety

import (
	"sort"
	"strings"
)

// refSet holds, lower-cased, the other servers' tool names that count as references (see
// Scanner).
type refSet struct {
	names   map[string]string            // name or qualified name → as given
	servers map[string]map[string]string // server → tool → qualified name as given
}

func newRefSet(others []string) refSet {
	if len(others) == 0 {
		return refSet{}
	}
	r := refSet{names: make(map[string]string, len(others)), servers: map[string]map[string]string{}}
	for _, o := range others {
		if !identifierLike(o) {
			continue
		}
		l := strings.ToLower(o)
		r.names[l] = o
		if s, t, ok := strings.Cut(l, "."); ok && s != "" && t != "" {
			if r.servers[s] == nil {
				r.servers[s] = map[string]string{}
			}
			r.servers[s][t] = o
		}
	}
	return r
}

// identifierLike reports whether a tool name is unlike an English word: four or more characters
// with '_', '-', '.', a digit or a lower-case letter followed by a capital.
func identifierLike(name string) bool {
	if len(name) < 4 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_' || c == '-' || c == '.' || c >= '0' && c <= '9':
			return true
		case i > 0 && c >= 'A' && c <= 'Z' && name[i-1] >= 'a' && name[i-1] <= 'z':
			return true
		}
	}
	return false
}

type reference struct {
	name string
	at   []span // in the lowered text
}

// find returns the references in lower, in order of first appearance, leaving out the names in
// self (the scanned tool's own, lower-cased). Tokens are runs of [a-z0-9_.-] with sentence
// punctuation trimmed.
func (r refSet) find(lower string, self [2]string) []reference {
	var out []reference
	index := map[string]int{}
	for i := 0; i < len(lower); {
		if !isNameChar(lower[i]) {
			i++
			continue
		}
		j := i
		for j < len(lower) && isNameChar(lower[j]) {
			j++
		}
		s, e := i, j
		for s < e && (lower[s] == '.' || lower[s] == '-') {
			s++
		}
		for e > s && (lower[e-1] == '.' || lower[e-1] == '-') {
			e--
		}
		if name, ok := r.match(lower[s:e]); ok && !isSelf(name, self) {
			k, seen := index[name]
			if !seen {
				k = len(out)
				index[name] = k
				out = append(out, reference{name: name})
			}
			out[k].at = append(out[k].at, span{s, e})
		}
		i = j
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].at[0].s < out[b].at[0].s })
	return out
}

func isSelf(name string, self [2]string) bool {
	return strings.EqualFold(name, self[0]) || strings.EqualFold(name, self[1])
}

func isNameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
}

// clientPrefixes are what MCP clients put before tool names.
var clientPrefixes = []string{"mcp_tool_", "mcp__", "mcp_", "mcp-", "mcp."}

// match resolves a token to a referenced name: the name itself, a qualified name joined with
// "__", "_", "-" or "." instead, or either behind a client prefix.
func (r refSet) match(tok string) (string, bool) {
	if len(tok) < 4 {
		return "", false
	}
	if n, ok := r.joined(tok); ok {
		return n, true
	}
	for _, p := range clientPrefixes {
		if strings.HasPrefix(tok, p) {
			if n, ok := r.joined(tok[len(p):]); ok {
				return n, true
			}
		}
	}
	return "", false
}

func (r refSet) joined(tok string) (string, bool) {
	if n, ok := r.names[tok]; ok {
		return n, true
	}
	for i := 1; i < len(tok)-1; i++ {
		c := tok[i]
		if c != '_' && c != '-' && c != '.' {
			continue
		}
		tools, ok := r.servers[tok[:i]]
		if !ok {
			continue
		}
		rest := tok[i+1:]
		if c == '_' && strings.HasPrefix(rest, "_") {
			rest = rest[1:]
		}
		if n, ok := tools[rest]; ok {
			return n, true
		}
	}
	return "", false
}
