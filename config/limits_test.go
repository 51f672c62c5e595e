package config

import (
	"strings"
	"testing"
	"time"

	"toolrouter/access"
)

// TestLoadLimits: the rate limits load from the file (every level of orgs and limits.anonymous)
// and the environment; an unknown limit is refused by name.
func TestLoadLimits(t *testing.T) {
	clearEnv(t)
	t.Setenv("TOOLROUTER_LIMITS__ON_REDIS_DOWN", "closed")
	file := `{"orgs": {"acme": {"limits": {"requests_per_minute": 600, "tokens_per_day": 5000000},
		"teams": {"research": {"limits": {"concurrent": 8},
			"agents": {"bot": {"limits": {"tool_calls_per_minute": 30, "tokens_per_minute": 1000}}}}}}},
		"limits": {"anonymous": {"requests_per_minute": 30}, "redis_url": "redis://127.0.0.1:6379/0", "replicas": 3, "redis_timeout": "20ms"}}`
	c, err := Load(writeFile(t, file), nil)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	acme := c.Orgs["acme"]
	if got, want := acme.Limits, (access.Limits{RequestsPerMinute: 600, TokensPerDay: 5000000}); got != want {
		t.Errorf("orgs.acme.limits: got %+v, want %+v", got, want)
	}
	if got := acme.Teams["research"].Limits.Concurrent; got != 8 {
		t.Errorf("team concurrent: got %d, want 8", got)
	}
	if got, want := acme.Teams["research"].Agents["bot"].Limits, (access.Limits{ToolCallsPerMinute: 30, TokensPerMinute: 1000}); got != want {
		t.Errorf("agent limits: got %+v, want %+v", got, want)
	}
	want := Limits{Anonymous: access.Limits{RequestsPerMinute: 30}, RedisURL: "redis://127.0.0.1:6379/0",
		OnRedisDown: RedisClosed, Replicas: 3, RedisTimeout: Duration(20 * time.Millisecond)}
	if c.Limits != want {
		t.Errorf("limits: got %+v, want %+v", c.Limits, want)
	}

	_, err = Load(writeFile(t, `{"orgs": {"acme": {"limits": {"rpm": 5}}}}`), nil)
	if err == nil || !strings.Contains(err.Error(), `unknown key "orgs.acme.limits.rpm"`) {
		t.Errorf("an unknown limit: got %v, want it refused by name", err)
	}
}
