package limits

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
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
	n, _ := scriptStats(tb, c)
	return n
}

// scriptStats is how many times Redis has run a script (EVALSHA and EVAL) since it started, and
// the microseconds it spent in them, from INFO commandstats.
func scriptStats(tb testing.TB, c *redis.Client) (calls, usec int) {
	tb.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "cmdstat_evalsha" && name != "cmdstat_eval") {
			continue
		}
		for _, field := range strings.Split(stats, ",") {
			k, v, _ := strings.Cut(field, "=")
			n, err := strconv.Atoi(v)
			switch {
			case k != "calls" && k != "usec":
			case err != nil:
				tb.Fatalf("commandstats %q: %v", line, err)
			case k == "calls":
				calls += n
			default:
				usec += n
			}
		}
	}
	return calls, usec
}

// trips counts a client's round trips to Redis: one per command, one per pipeline.
type trips struct{ n atomic.Int64 }

func (t *trips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (t *trips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		t.n.Add(1)
		return next(ctx, cmd)
	}
}

func (t *trips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		t.n.Add(1)
		return next(ctx, cmds)
	}
}

// BenchmarkRedisAdmit is what the rate limits cost a request with its counters in a real Redis:
// admission, then at its end the release of its concurrent slot and the charge of its tokens, as
// the HTTP server does (release, then Observe), from parallel requests of one agent whose org,
// team and agent each have limits. Once every queued release and charge has been sent, it reports
// per request: the script calls Redis ran (scripts/op), the time Redis spent in them
// (redis-us/op) and the round trips the Limiter made (trips/op).
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
	var rt trips
	l.redis.c.AddHook(&rt)
	calls, usec := scriptStats(b, c)
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
	calls2, usec2 := scriptStats(b, c)
	b.ReportMetric(float64(calls2-calls)/float64(b.N), "scripts/op")
	b.ReportMetric(float64(usec2-usec)/float64(b.N), "redis-us/op")
	b.ReportMetric(float64(rt.n.Load())/float64(b.N), "trips/op")
}
