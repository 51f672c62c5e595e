package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"toolrouter/access"
	"toolrouter/config"
)

// TestConsoleVariants loads the console comparison's two configurations as the sidecar does and
// checks that they differ in ui.enabled only, with rate limits, usage records and metrics off in
// both and the console's ring at its shipped size.
func TestConsoleVariants(t *testing.T) {
	vs := consoleVariants()
	if len(vs) != 2 {
		t.Fatalf("got %d variants, want console off then on", len(vs))
	}
	var cfgs []config.Config
	for _, v := range vs {
		path := filepath.Join(t.TempDir(), "config.json")
		js, err := json.Marshal(v.Config)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, js, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := config.Load(path, nil)
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		if c.Usage.Path != "" || c.Usage.PostgresURL != "" || c.Metrics.Enabled || c.Limits.Anonymous != (access.Limits{}) {
			t.Errorf("%s: got usage %q %q, metrics %v, anonymous limits %+v, want all off", v.Name, c.Usage.Path, c.Usage.PostgresURL, c.Metrics.Enabled, c.Limits.Anonymous)
		}
		cfgs = append(cfgs, c)
	}
	off, on := cfgs[0], cfgs[1]
	if off.UI.Enabled || !on.UI.Enabled {
		t.Errorf("got ui.enabled %v then %v, want false then true", off.UI.Enabled, on.UI.Enabled)
	}
	if want := config.Default().UI.RecentRequests; on.UI.RecentRequests != want {
		t.Errorf("console on: got ui.recent_requests %d, want the default %d", on.UI.RecentRequests, want)
	}
	off.UI = on.UI
	if !reflect.DeepEqual(off, on) {
		t.Errorf("the two configurations differ beyond ui:\noff %+v\non  %+v", off, on)
	}
}
