package config

import (
	"slices"
	"strings"
	"testing"
)

// TestPinned: retrieval.pinned and servers.NAME.pinned load from the file; a pattern that is
// empty, holds a '/', is not a glob, or names a server outright that is not configured is refused
// by its key.
func TestPinned(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		pinned  []string
		servers []string // pinned in their entries
		problem string   // "" when valid
	}{
		{name: "patterns and a server entry", file: `{"retrieval": {"pinned": ["calculator.*", "clock.current_time", "*.read_*"]},
			"servers": {"fs": {"transport": "stdio", "command": "fs-server", "pinned": true}}}`,
			pinned: []string{"calculator.*", "clock.current_time", "*.read_*"}, servers: []string{"fs"}},
		{name: "none by default", file: `{}`},
		{name: "empty", file: `{"retrieval": {"pinned": [""]}}`, problem: "retrieval.pinned[0]: must not be empty"},
		{name: "slash", file: `{"retrieval": {"pinned": ["calculator/add"]}}`, problem: "retrieval.pinned[0]: bad pattern"},
		{name: "bad glob", file: `{"retrieval": {"pinned": ["clock", "calc[.add"]}}`, problem: "retrieval.pinned[1]: bad pattern"},
		{name: "unknown server", file: `{"retrieval": {"pinned": ["calcualtor.*"]}}`, problem: `retrieval.pinned[0]: "calcualtor.*" names no configured server`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			c, err := Load(writeFile(t, tc.file), nil)
			if tc.problem != "" {
				if err == nil || !strings.Contains(err.Error(), tc.problem) {
					t.Fatalf("got %v, want a problem %q", err, tc.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.Retrieval.Pinned, tc.pinned) {
				t.Errorf("retrieval.pinned: got %q, want %q", c.Retrieval.Pinned, tc.pinned)
			}
			var servers []string
			for name, s := range c.Servers {
				if s.Pinned {
					servers = append(servers, name)
				}
			}
			if !slices.Equal(servers, tc.servers) {
				t.Errorf("pinned servers: got %v, want %v", servers, tc.servers)
			}
		})
	}
}
