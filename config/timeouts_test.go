package config

import (
	"strings"
	"testing"
)

// TestValidateTimeoutOrder: an inner timeout longer than the one containing it is refused, naming
// both keys (the nesting is in the package documentation).
func TestValidateTimeoutOrder(t *testing.T) {
	council := func(c *Config) {
		c.Council.Members = []Member{{Name: "a", Provider: DefaultProvider, Model: "m", Timeout: d("60s")}}
		c.Council.Chairman.Model = "m"
		c.Council.Quorum = 1
	}
	tests := []validationCase{
		{"write shorter than request", func(c *Config) { c.HTTP.WriteTimeout = d("1m") }, "http.request_timeout",
			`http.request_timeout: 2m0s is longer than http.write_timeout (1m0s), which contains it`},
		{"deadline longer than request", func(c *Config) { c.Router.Deadline = d("3m") }, "router.deadline",
			`router.deadline: 3m0s is longer than http.request_timeout (2m0s), which contains it`},
		{"select longer than deadline", func(c *Config) { c.Router.SelectTimeout = d("61s") }, "router.select_timeout",
			`router.select_timeout: 1m1s is longer than router.deadline (1m0s), which contains it`},
		{"arguments longer than deadline", func(c *Config) { c.Router.ArgumentsTimeout = d("61s") }, "router.arguments_timeout",
			`router.arguments_timeout: 1m1s is longer than router.deadline (1m0s), which contains it`},
		{"execute longer than deadline", func(c *Config) { c.Router.ExecuteTimeout = d("61s") }, "router.execute_timeout",
			`router.execute_timeout: 1m1s is longer than router.deadline (1m0s), which contains it`},
		{"model call longer than selection", func(c *Config) { c.Ollama.Timeout = d("31s"); c.Router.ArgumentsTimeout = d("40s") }, "ollama.timeout",
			`ollama.timeout: 31s is longer than router.select_timeout (30s), which contains it`},
		{"model call longer than arguments", func(c *Config) { c.Ollama.Timeout = d("31s"); c.Router.SelectTimeout = d("40s") }, "ollama.timeout",
			`ollama.timeout: 31s is longer than router.arguments_timeout (30s), which contains it`},
		{"council member longer than request", func(c *Config) { council(c); c.Council.Members[0].Timeout = d("3m") }, "council.members[0].timeout",
			`council.members[0].timeout: 3m0s is longer than http.request_timeout (2m0s), which contains it`},
		{"council stage longer than request", func(c *Config) { council(c); c.Council.StageTimeout = d("3m") }, "council.stage_timeout",
			`council.stage_timeout: 3m0s is longer than http.request_timeout (2m0s), which contains it`},
		{"chairman longer than request", func(c *Config) { council(c); c.Council.Chairman.Timeout = d("3m") }, "council.chairman.timeout",
			`council.chairman.timeout: 3m0s is longer than http.request_timeout (2m0s), which contains it`},
	}
	checkValidation(t, tests)

	t.Run("equal timeouts and a longer server call_timeout are valid", func(t *testing.T) {
		c := Default()
		c.Router.Deadline, c.Router.SelectTimeout, c.Ollama.Timeout = d("2m"), d("2m"), d("2m")
		c.Router.ArgumentsTimeout, c.Router.ExecuteTimeout = d("2m"), d("2m")
		s := c.Servers["clock"]
		s.CallTimeout = d("10m") // a tool call runs for min(router.execute_timeout, call_timeout)
		c.Servers["clock"] = s
		if err := c.Validate(); err != nil {
			t.Errorf("Validate(): got %v, want nil", err)
		}
	})
}

// TestLoadRefusesTimeoutsOutOfOrder: the check runs at start-up, whichever layer set the values.
func TestLoadRefusesTimeoutsOutOfOrder(t *testing.T) {
	clearEnv(t)
	t.Setenv("TOOLROUTER_ROUTER__DEADLINE", "5m")
	_, err := Load("", nil)
	if err == nil || !strings.Contains(err.Error(), "router.deadline: 5m0s is longer than http.request_timeout (2m0s)") {
		t.Errorf("Load: got %v, want router.deadline refused naming http.request_timeout", err)
	}
}
