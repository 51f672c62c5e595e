package limits

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"toolrouter/access"
	"toolrouter/config"
	"toolrouter/internal/redistest"
)

// scriptCalls is how many times Redis has run a script (EVALSHA and EVAL) since it started, from
// INFO commandstats.
func scriptCalls(tb testing.TB, c *redis.Client) int {
	tb.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "cmdstat_evalsha" && name != "cmdstat_eval") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
		v, err := strconv.Atoi(calls)
		if err != nil {
			tb.Fatalf("commandstats %q: %v", line, err)
		}
		n += v
	}
	return n
}

// BenchmarkRedisAdmit is what the rate limits cost a request with its counters in a real Redis:
// admission, then at its end the release of its concurrent slot and the charge of its tokens, as
// the HTTP server does (release, then Observe), from parallel requests of one agent whose org,
// team and agent each have limits. scripts/op is the script calls Redis ran per request, counted
// once every queued release and charge has been sent.
func BenchmarkRedisAdmit(b *testing.B) {
	srv := redistest.Start(b)
	big := access.Limits{RequestsPerMinute: 1 << 30, TokensPerMinute: 1 << 30, Concurrent: 1 << 20}
	orgs := access.Orgs{"acme": {Limits: big, Teams: map[string]access.Team{"t": {Limits: big,
		Agents: map[string]access.Agent{"a": {Limits: big}}}}}}
	l, err := New(Options{Orgs: orgs, RedisURL: srv.URL(), OnRedisDown: config.RedisClosed, RedisTimeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	who := id("acme", "t", "a")
	report := tokens(who, 100, 20)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer c.Close()
	before := scriptCalls(b, c)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			release, err := l.Admit(context.Background(), who)
			if err != nil {
				b.Error(err)
				return
			}
			release()
			l.Observe(context.Background(), report)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l.Close(ctx)
	b.StopTimer()
	if n := l.DroppedCharges(); n > 0 {
		b.Logf("%d charges or releases dropped: the queue was full", n)
	}
	b.ReportMetric(float64(scriptCalls(b, c)-before)/float64(b.N), "scripts/op")
}
