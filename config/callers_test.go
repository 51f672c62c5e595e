package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCallers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	body := `{"callers": {"kiosk": {"allow": ["calculator.*"]}, "*": {"deny": ["memory.*"]}}}`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	access := CallerAccess(cfg.Callers)
	tests := []struct {
		caller, tool, policy string
		want                 bool
	}{
		{"kiosk", "calculator.add", "kiosk", true},
		{"kiosk", "clock.current_time", "kiosk", false},
		{"someone", "clock.current_time", "*", true},
		{"someone", "memory.read_graph", "*", false},
		{"", "memory.read_graph", "*", false},
	}
	for _, tc := range tests {
		name, permits := access.Policy(tc.caller)
		if name != tc.policy || permits(tc.tool) != tc.want {
			t.Errorf("%s/%s: got policy %q permits %v, want %q %v", tc.caller, tc.tool, name, permits(tc.tool), tc.policy, tc.want)
		}
	}
	if name, permits := (CallerAccess{}).Policy("x"); name != "" || !permits("any.tool") {
		t.Errorf("no access lists: got %q, want every tool", name)
	}

	if err := os.WriteFile(path, []byte(`{"callers": {"kiosk": {"allow": ["calc[.*"]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, nil); err == nil || !strings.Contains(err.Error(), "callers.kiosk.allow[0]") {
		t.Errorf("got %v, want an error naming callers.kiosk.allow[0]", err)
	}
}
