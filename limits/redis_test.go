package limits

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"toolrouter/access"
	"toolrouter/internal/redistest"
)

// replica is one Limiter on the shared Redis, as one replica of the sidecar holds it, with what
// OnBackend told it.
type replica struct {
	*Limiter
	backend chan bool
}

func newReplica(t *testing.T, srv *redistest.Server, orgs access.Orgs, mode RedisDown, o Options) replica {
	t.Helper()
	backend := make(chan bool, 16)
	o.Orgs, o.RedisURL, o.OnRedisDown, o.Replicas = orgs, srv.URL(), mode, 2
	// Generous: a loaded test machine under -race must not look like Redis being down.
	o.RedisTimeout = time.Second
	o.OnBackend = func(up bool) { backend <- up }
	l, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		l.Close(ctx)
	})
	return replica{l, backend}
}

// redisOf is l's counters in Redis, behind the fallback of on_redis_down.
func redisOf(l *Limiter) *redisBackend { return l.b.(*fallback).primary.(*redisBackend) }

// driver runs workers per replica, each admitting who as fast as it can (and releasing at once),
// until stop or attempts per worker; counts are per replica and per phase.
type driver struct {
	phase    atomic.Int32 // which counts an attempt goes to
	gate     sync.RWMutex // held (read) by each attempt: a test that locks it has none in flight
	stop     chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex // guards the counts
	admitted [2][2]int  // [phase][replica]
	tried    [2][2]int
	refused  [2][2]map[string]int // by error
	started  chan struct{}        // closed once phase 0 has made 200 attempts
	once     sync.Once
}

func drive(reps []replica, who access.Identity, workers, attempts int) *driver {
	d := &driver{stop: make(chan struct{}), started: make(chan struct{})}
	for p := range d.refused {
		for r := range d.refused[p] {
			d.refused[p][r] = map[string]int{}
		}
	}
	for r, rep := range reps {
		for range workers {
			d.wg.Add(1)
			go func() {
				defer d.wg.Done()
				for range attempts {
					select {
					case <-d.stop:
						return
					default:
					}
					d.gate.RLock()
					p := d.phase.Load()
					release, err := rep.Admit(context.Background(), who)
					d.gate.RUnlock()
					d.mu.Lock()
					d.tried[p][r]++
					if err == nil {
						d.admitted[p][r]++
						release()
					} else {
						kind := "other: " + err.Error()
						var ex *Exceeded
						switch {
						case errors.As(err, &ex):
							kind = string(ex.Limit)
						case errors.Is(err, ErrUnavailable):
							kind = "unavailable"
						}
						d.refused[p][r][kind]++
					}
					if d.tried[0][0]+d.tried[0][1] >= 200 {
						d.once.Do(func() { close(d.started) })
					}
					d.mu.Unlock()
				}
			}()
		}
	}
	return d
}

func (d *driver) end() {
	close(d.stop)
	d.wg.Wait()
}

// within fails unless got is within 5% of want.
func within(t *testing.T, what string, got int, want float64) {
	t.Helper()
	if math.Abs(float64(got)-want) > 0.05*want {
		t.Errorf("%s: got %d admitted, want %.0f ± 5%%", what, got, want)
	} else {
		t.Logf("%s: %d admitted, expected %.1f", what, got, want)
	}
}

// TestRedisSharedBudget: two replicas on one Redis share one requests_per_minute budget: together
// they admit the burst (the limit) plus the refill over the run, not twice that.
func TestRedisSharedBudget(t *testing.T) {
	srv := redistest.Start(t)
	const rpm = 600
	orgs := access.Orgs{"acme": {Limits: access.Limits{RequestsPerMinute: rpm}}}
	reps := []replica{newReplica(t, srv, orgs, RedisLocal, Options{}), newReplica(t, srv, orgs, RedisLocal, Options{})}
	start := time.Now()
	d := drive(reps, id("acme", "", ""), 4, 100000)
	timer := time.NewTimer(2 * time.Second)
	<-timer.C
	d.end()
	elapsed := time.Since(start)
	got := d.admitted[0][0] + d.admitted[0][1]
	within(t, "both replicas", got, rpm+rpm/60.0*elapsed.Seconds())
	if d.admitted[0][0] == 0 || d.admitted[0][1] == 0 {
		t.Errorf("admitted per replica: got %v, want both admitting", d.admitted[0])
	}
	for r, rep := range reps {
		if n := d.refused[0][r][string(RequestsPerMinute)]; n == 0 || n+d.admitted[0][r] != d.tried[0][r] {
			t.Errorf("replica %d: refused %v of %d tried, want every refusal requests_per_minute", r, d.refused[0][r], d.tried[0][r])
		}
		if got := rep.Backend(); got != BackendRedis {
			t.Errorf("replica %d: Backend: got %q, want %q", r, got, BackendRedis)
		}
	}
}

// TestRedisDown kills Redis while two replicas are admitting, checks what each on_redis_down mode
// does, then restarts Redis and waits for both replicas to go back to it.
func TestRedisDown(t *testing.T) {
	const rpm = 600
	orgs := access.Orgs{"acme": {Limits: access.Limits{RequestsPerMinute: rpm}}}
	who := id("acme", "t", "a")
	for _, mode := range []RedisDown{RedisLocal, RedisFailOpen, RedisClosed} {
		t.Run(string(mode), func(t *testing.T) {
			srv := redistest.Start(t)
			reps := []replica{newReplica(t, srv, orgs, mode, Options{}), newReplica(t, srv, orgs, mode, Options{})}
			d := drive(reps, who, 2, 20000)
			<-d.started
			// Between attempts: those before went to Redis, those after find it gone.
			d.gate.Lock()
			srv.Kill()
			downAt := time.Now()
			d.phase.Store(1)
			d.gate.Unlock()
			for r, rep := range reps {
				select {
				case up := <-rep.backend:
					if up {
						t.Fatalf("replica %d: OnBackend(true) while Redis is down", r)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("replica %d: OnBackend(false) not called within 10s of Redis going down", r)
				}
				if got := rep.Backend(); got != BackendFallback {
					t.Errorf("replica %d: Backend with Redis down: got %q, want %q", r, got, BackendFallback)
				}
			}
			timer := time.NewTimer(time.Second)
			<-timer.C
			d.end()
			down := time.Since(downAt).Seconds()
			for r := range reps {
				tried, admitted := d.tried[1][r], d.admitted[1][r]
				switch mode {
				case RedisLocal:
					// Each replica alone enforces its share: half the burst, half the refill.
					within(t, "replica with Redis down", admitted, rpm/2+rpm/2/60.0*down)
				case RedisFailOpen:
					if admitted != tried || tried == 0 {
						t.Errorf("replica %d: admitted %d of %d with Redis down, want all", r, admitted, tried)
					}
				case RedisClosed:
					if admitted != 0 || d.refused[1][r]["unavailable"] != tried || tried == 0 {
						t.Errorf("replica %d: with Redis down admitted %d and refused %v of %d, want all refused unavailable", r, admitted, d.refused[1][r], tried)
					}
				}
			}

			srv.Restart()
			for r, rep := range reps {
				select {
				case up := <-rep.backend:
					if !up {
						t.Fatalf("replica %d: OnBackend(false) twice for one outage", r)
					}
				case <-time.After(15 * time.Second):
					t.Fatalf("replica %d: OnBackend(true) not called within 15s of Redis coming back", r)
				}
				if got := rep.Backend(); got != BackendRedis {
					t.Errorf("replica %d: Backend once Redis is back: got %q, want %q", r, got, BackendRedis)
				}
				if _, err := rep.Admit(context.Background(), who); err != nil {
					t.Errorf("replica %d: Admit once Redis is back: %v", r, err)
				}
			}
			// The admissions went to the new Redis.
			c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
			defer c.Close()
			if n, err := c.Exists(context.Background(), keyPrefix+"org:acme:"+string(RequestsPerMinute)).Result(); err != nil || n != 1 {
				t.Errorf("the restarted Redis's counter: got %d, %v; want it there", n, err)
			}
		})
	}
}

// TestRedisConcurrent: two replicas share a concurrent limit; a release frees the slot for the
// other replica, and the slot of a replica that never releases (it crashed) expires.
func TestRedisConcurrent(t *testing.T) {
	srv := redistest.Start(t)
	orgs := access.Orgs{"acme": {Teams: map[string]access.Team{"t": {Limits: access.Limits{Concurrent: 1}}}}}
	who := id("acme", "t", "")
	a := newReplica(t, srv, orgs, RedisLocal, Options{LeaseTTL: 500 * time.Millisecond})
	b := newReplica(t, srv, orgs, RedisLocal, Options{LeaseTTL: 500 * time.Millisecond})
	release, err := a.Admit(context.Background(), who)
	if err != nil {
		t.Fatal(err)
	}
	var ex *Exceeded
	if _, err := b.Admit(context.Background(), who); !errors.As(err, &ex) || ex.Limit != Concurrent || ex.Level != LevelTeam {
		t.Fatalf("second replica while the first holds the slot: got %v, want concurrent at team", err)
	}
	release()
	admitted := func(l replica) (func(), bool) {
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if rel, err := l.Admit(context.Background(), who); err == nil {
				return rel, true
			}
			time.Sleep(10 * time.Millisecond) // polling a condition, with a deadline
		}
		return nil, false
	}
	if _, ok := admitted(b); !ok {
		t.Fatal("second replica after the release: not admitted within 5s")
	}
	// b never releases: its lease expires after LeaseTTL.
	start := time.Now()
	if _, ok := admitted(a); !ok {
		t.Fatal("first replica: the crashed replica's slot did not expire within 5s")
	}
	if waited := time.Since(start); waited > 3*time.Second {
		t.Errorf("the expired slot came back after %v, want about the 500ms lease", waited)
	}
}

// TestRedisCharge: a request's tokens, charged by one replica, exhaust the budget the other
// replica admits against.
func TestRedisCharge(t *testing.T) {
	srv := redistest.Start(t)
	orgs := access.Orgs{"acme": {Limits: access.Limits{TokensPerMinute: 1000}}}
	a := newReplica(t, srv, orgs, RedisLocal, Options{})
	b := newReplica(t, srv, orgs, RedisLocal, Options{})
	who := id("acme", "t", "a")
	if _, err := b.Admit(context.Background(), who); err != nil {
		t.Fatalf("before the charge: %v", err)
	}
	a.Observe(context.Background(), tokens(who, 1500, 300)) // 800 in debt: 48s of refill
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := b.Admit(context.Background(), who)
		var ex *Exceeded
		if errors.As(err, &ex) {
			if ex.Limit != TokensPerMinute || ex.Level != LevelOrg || ex.RetryAfter < 47*time.Second || ex.RetryAfter > 49*time.Second {
				t.Errorf("got %s %s retry %v, want org tokens_per_minute retry about 48s", ex.Level, ex.Limit, ex.RetryAfter)
			}
			break
		}
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("after the charge: got %v, want tokens_per_minute exceeded within 5s", err)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition (the charge is queued), with a deadline
	}
}

// TestRedisEnd: the ends of the requests queued, their releases and their charges, go to Redis in
// one script call, and still get there when Redis has lost the script (restarted, or SCRIPT
// FLUSH).
func TestRedisEnd(t *testing.T) {
	for _, flush := range []bool{false, true} {
		name := "script cached"
		if flush {
			name = "script flushed"
		}
		t.Run(name, func(t *testing.T) {
			srv := redistest.Start(t)
			orgs := access.Orgs{"acme": {Limits: access.Limits{TokensPerMinute: 1000, Concurrent: 3}}}
			a := newReplica(t, srv, orgs, RedisClosed, Options{})
			b := newReplica(t, srv, orgs, RedisClosed, Options{})
			c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
			defer c.Close()
			ctx := context.Background()
			// Stop a's worker, so that what its requests' ends queue stays queued until the test
			// sends it. Close then finds the backend closed and leaves the client to the test.
			ra := redisOf(a.Limiter)
			ra.once.Do(func() { close(ra.done); ra.wg.Wait() })
			t.Cleanup(func() { _ = ra.c.Close() })
			who := id("acme", "t", "a")
			for range 3 {
				release, err := a.Admit(ctx, who)
				if err != nil {
					t.Fatal(err)
				}
				release()
				a.Observe(ctx, tokens(who, 300, 200))
			}
			// Every slot is held until the ends are sent.
			var ex *Exceeded
			if _, err := b.Admit(ctx, who); !errors.As(err, &ex) || ex.Limit != Concurrent {
				t.Fatalf("before the ends are sent: got %v, want concurrent exceeded", err)
			}
			if flush {
				if err := c.ScriptFlush(ctx).Err(); err != nil {
					t.Fatal(err)
				}
			}
			before := scriptCalls(t, c)
			rels, chs := ra.take(nil, nil)
			if len(rels) != 3 || len(chs) != 3 {
				t.Fatalf("queued: got %d releases and %d charges, want 3 and 3", len(rels), len(chs))
			}
			ra.flush(rels, chs)
			if !ra.up() {
				t.Fatal("sending the ends marked Redis down")
			}
			if got, want := scriptCalls(t, c)-before, 1; !flush && got != want {
				t.Errorf("script calls for the ends of 3 requests: got %d, want %d", got, want)
			}
			// The slots are free and 1500 tokens charged: 500 in debt, 30s of refill.
			if n, err := c.ZCard(ctx, keyPrefix+"org:acme:"+string(Concurrent)).Result(); err != nil || n != 0 {
				t.Errorf("slots held after the ends: got %d, %v; want 0", n, err)
			}
			_, err := b.Admit(ctx, who)
			if !errors.As(err, &ex) || ex.Limit != TokensPerMinute || ex.RetryAfter < 29*time.Second || ex.RetryAfter > 31*time.Second {
				t.Errorf("after the ends: got %v, want tokens_per_minute exceeded, retry about 30s", err)
			}
		})
	}
}
