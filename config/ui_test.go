package config

import "testing"

func TestValidateUI(t *testing.T) {
	checkValidation(t, []validationCase{
		{"negative recent requests", func(c *Config) { c.UI.RecentRequests = -1 }, "ui.recent_requests",
			"ui.recent_requests: must be between 0 and 10000, got -1"},
		{"too many recent requests", func(c *Config) { c.UI.RecentRequests = MaxRecentRequests + 1 }, "ui.recent_requests",
			"ui.recent_requests: must be between 0 and 10000, got 10001"},
	})
	for _, n := range []int{0, 1, MaxRecentRequests} {
		c := Default()
		c.UI.RecentRequests = n
		if err := c.Validate(); err != nil {
			t.Errorf("Validate() with ui.recent_requests %d: got %v, want nil", n, err)
		}
	}
}

// TestUIFromEnvironment: the console is turned off, and its ring sized, from the environment as
// from the file.
func TestUIFromEnvironment(t *testing.T) {
	clearEnv(t)
	t.Setenv("TOOLROUTER_UI__ENABLED", "false")
	t.Setenv("TOOLROUTER_UI__RECENT_REQUESTS", "7")
	c, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.UI.Enabled || c.UI.RecentRequests != 7 {
		t.Errorf("got ui %+v, want {Enabled:false RecentRequests:7}", c.UI)
	}
}
