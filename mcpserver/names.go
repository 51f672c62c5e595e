package mcpserver

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"

	"toolrouter/inventory"
)

// maxToolName is the longest tool name MCP clients accept everywhere (some cap it at 64).
const maxToolName = 64

// hashDigits is how many hex digits of a name's hash tell it apart when it must be shortened.
const hashDigits = 8

// ToolNames gives each tool an MCP-safe name, of [A-Za-z0-9_-] and at most 64 characters, derived
// from its qualified name: "server.tool" becomes "server__tool", with every other character
// outside that set replaced by "_". When that is longer than 64 characters, or two tools of the
// list would share it, each such tool's name is cut to 55 characters and ends with "_" and the
// first 8 hex digits of the SHA-256 of its qualified name (more digits if even those collide). The
// names depend only on the list, never on its order, and never equal route or answer (they
// always hold "__" or a hash).
func ToolNames(tools []*inventory.Tool) map[string]string {
	base := make(map[string]string, len(tools)) // qualified -> safe name
	count := map[string]int{}
	for _, t := range tools {
		n := safe(t.Server) + "__" + safe(t.Name)
		base[t.Qualified] = n
		count[n]++
	}
	out := make(map[string]string, len(tools))
	used := map[string]bool{}
	for q, n := range base {
		if len(n) <= maxToolName && count[n] == 1 {
			out[q], used[n] = n, true
		}
	}
	var rest []string
	for q := range base {
		if _, ok := out[q]; !ok {
			rest = append(rest, q)
		}
	}
	sort.Strings(rest) // which of two colliding hashes gets the longer one is not left to chance
	for _, q := range rest {
		n := base[q]
		sum := sha256.Sum256([]byte(q))
		digits := hex.EncodeToString(sum[:])
		for k := hashDigits; k <= len(digits); k++ {
			name := n[:min(len(n), maxToolName-1-k)] + "_" + digits[:k]
			if !used[name] {
				out[q], used[name] = name, true
				break
			}
		}
	}
	return out
}

// safe replaces each character outside [A-Za-z0-9_-] by "_".
func safe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, s)
}
