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
	"toolrouter/internal/redistest"
)

// scriptCalls is how many times Redis has run a script (EVALSHA and EVAL) since it started, from
// INFO commandstats.
func scriptCalls(tb testing.TB, c *redis.Client) int {
	tb.Helper()
	return scriptStats(tb, c).calls
}

// stats are what Redis did for scripts since it started: how many it ran (EVALSHA and EVAL), the
// microseconds it spent in them, and the commands they called (redis.call).
type stats struct{ calls, usec, inner int }

// scriptCommands are the commands the script calls.
var scriptCommands = map[string]bool{"time": true, "hmget": true, "hset": true, "pexpire": true,
	"zadd": true, "zrem": true, "zcard": true, "zremrangebyscore": true}

// scriptStats is what Redis did for scripts since it started, from INFO commandstats.
func scriptStats(tb testing.TB, c *redis.Client) (st stats) {
	tb.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		name, fields, ok := strings.Cut(strings.TrimSpace(line), ":")
		name = strings.TrimPrefix(name, "cmdstat_")
		script := name == "evalsha" || name == "eval"
		if !ok || (!script && !scriptCommands[name]) {
			continue
		}
		for _, field := range strings.Split(fields, ",") {
			k, v, _ := strings.Cut(field, "=")
			n, err := strconv.Atoi(v)
			switch {
			case k != "calls" && k != "usec":
			case err != nil:
				tb.Fatalf("commandstats %q: %v", line, err)
			case !script:
				if k == "calls" {
					st.inner += n
				}
			case k == "calls":
				st.calls += n
			default:
				st.usec += n
			}
		}
	}
	return st
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
// per request: the script calls Redis ran (scripts/op), the commands they called (rcalls/op: in
// Redis each costs far more from a script than its own run time), the time Redis spent in
// scripts (redis-us/op), the round trips the Limiter made (trips/op), and the releases and
// charges it dropped because its queue to Redis was full (dropped/op).
func BenchmarkRedisAdmit(b *testing.B) {
	srv := redistest.Start(b)
	big := access.Limits{RequestsPerMinute: 1 << 30, TokensPerMinute: 1 << 30, Concurrent: 1 << 20}
	orgs := access.Orgs{"acme": {Limits: big, Teams: map[string]access.Team{"t": {Limits: big,
		Agents: map[string]access.Agent{"a": {Limits: big}}}}}}
	l, err := New(Options{Orgs: orgs, RedisURL: srv.URL(), OnRedisDown: RedisClosed, RedisTimeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	who := id("acme", "t", "a")
	report := tokens(who, 100, 20)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer c.Close()
	var rt trips
	redisOf(l).c.AddHook(&rt)
	st := scriptStats(b, c)
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
	end := scriptStats(b, c)
	b.ReportMetric(float64(end.calls-st.calls)/float64(b.N), "scripts/op")
	b.ReportMetric(float64(end.inner-st.inner)/float64(b.N), "rcalls/op")
	b.ReportMetric(float64(end.usec-st.usec)/float64(b.N), "redis-us/op")
	b.ReportMetric(float64(rt.n.Load())/float64(b.N), "trips/op")
	b.ReportMetric(float64(l.DroppedCharges())/float64(b.N), "dropped/op")
}
