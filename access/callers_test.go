package access

import (
	"errors"
	"strings"
	"testing"
)

func TestFromCallers(t *testing.T) {
	callers := map[string]Rules{
		"kiosk": {Allow: []string{"calculator.*"}},
		"ops":   {Deny: []string{"fs.write_file"}},
		"*":     {Deny: []string{"memory.*"}},
	}
	h, err := New(FromCallers(callers))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		id   Identity
		tool string
		want bool
	}{
		{Identity{Org: DefaultOrg, Team: "kiosk"}, "calculator.add", true},
		{Identity{Org: DefaultOrg, Team: "kiosk"}, "clock.current_time", false},
		{Identity{Org: DefaultOrg, Team: "ops"}, "fs.read_file", true},
		{Identity{Org: DefaultOrg, Team: "ops"}, "fs.write_file", false},
		{Identity{Org: DefaultOrg}, "clock.current_time", true},
		{Identity{Org: DefaultOrg}, "memory.read_graph", false},
		// The one change: "*" now bounds the named callers too.
		{Identity{Org: DefaultOrg, Team: "ops"}, "memory.read_graph", false},
	}
	for _, tc := range tests {
		t.Run(tc.id.String()+" "+tc.tool, func(t *testing.T) {
			if _, permits := h.Policy(tc.id); permits(tc.tool) != tc.want {
				t.Errorf("got %v, want %v", permits(tc.tool), tc.want)
			}
		})
	}
}

func TestCallersError(t *testing.T) {
	err := CallersError(map[string]Rules{"kiosk": {Allow: []string{"calculator.*"}}})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Key != "callers" {
		t.Fatalf("got %v, want a *FieldError for key callers", err)
	}
	for _, want := range []string{
		"callers is replaced by orgs",
		"move callers.NAME to orgs.default.teams.NAME",
		"docs/configuration.md#callers",
		`"orgs": {"default":{"teams":{"kiosk":{"allow":["calculator.*"]}}}}`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got %q, want it to contain %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("got %q, want one line", err)
	}
}
