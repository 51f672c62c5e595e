package config

import (
	"testing"

	"toolrouter/inventory/builtin"
)

// TestBuiltinServersByDefault: every built-in server is configured by default, with the purpose
// its package gives it (the one description of it).
func TestBuiltinServersByDefault(t *testing.T) {
	servers := Default().Servers
	for _, name := range builtin.Names() {
		s, ok := servers[name]
		if !ok {
			t.Errorf("servers.%s: got none, want the built-in configured by default", name)
			continue
		}
		if s.Purpose != builtin.Purpose(name) || s.Transport != TransportBuiltin || s.Builtin != name {
			t.Errorf("servers.%s: got purpose %q transport %q builtin %q, want %q, builtin, %s",
				name, s.Purpose, s.Transport, s.Builtin, builtin.Purpose(name), name)
		}
	}
}
