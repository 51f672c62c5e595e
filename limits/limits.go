// Package limits enforces the rate limits of the org/team/agent hierarchy (access.Limits at each
// level, and limits.anonymous for requests without a credential): requests and tool calls per
// minute, tokens per minute and per day, and concurrent requests.
//
// A request must pass every level of its identity: for org/team/agent the org's limits, the
// team's and the agent's, each level with its own counters keyed by its path and shared by
// everything under it. Requests per minute and concurrent requests are taken at admission. Tokens
// and tool calls are only known once a request has ended, so they are charged then, from the
// request's report (observe.Report), and a request is admitted while the budget is not exhausted:
// a debt model, as LiteLLM's TPM limits are. One request may take a budget below zero; the next
// waits until the refill has paid the debt back.
//
// Each limit is a token bucket holding at most the limit and refilled continuously over its
// window (a minute, or a day: a rolling day, not a calendar one), so a full bucket allows a burst
// of the whole limit. The counters live in process, or in Redis (limits.redis_url) where every
// replica shares one budget: one Lua script checks and takes every level atomically, and
// concurrent requests are leases in a sorted set that expire, so a crashed replica's slots come
// back. While Redis does not answer, limits.on_redis_down decides: count in process with each
// replica taking its share (limit / limits.replicas), admit everything, or refuse.
//
// The package does not establish identities, decide HTTP statuses or count metrics: it returns
// *Exceeded and ErrUnavailable and calls Options.OnReject and Options.OnBackend.
package limits

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"toolrouter/access"
	"toolrouter/config"
	"toolrouter/observe"
)

// Limits are one level's limits; 0 sets none. The type lives in package access, in the hierarchy
// that holds it.
type Limits = access.Limits

// Level is where a limit is set.
type Level string

// Levels.
const (
	LevelOrg       Level = "org"
	LevelTeam      Level = "team"
	LevelAgent     Level = "agent"
	LevelAnonymous Level = "anonymous"
)

// Limit names one limit, as configuration does.
type Limit string

// Limits, in the order a level checks them.
const (
	RequestsPerMinute  Limit = "requests_per_minute"
	TokensPerMinute    Limit = "tokens_per_minute"
	TokensPerDay       Limit = "tokens_per_day"
	ToolCallsPerMinute Limit = "tool_calls_per_minute"
	Concurrent         Limit = "concurrent"
)

// Exceeded is a request refused by a limit: which level and limit, for which identity path, its
// value, and how long until it would be admitted.
type Exceeded struct {
	Level      Level
	Limit      Limit
	Identity   string
	Max        int
	RetryAfter time.Duration
}

func (e *Exceeded) Error() string {
	return fmt.Sprintf("rate limited: %s %s is over its %s limit of %d; retry in %ds",
		e.Level, e.Identity, e.Limit, e.Max, RetrySeconds(e.RetryAfter))
}

// RetrySeconds is d in whole seconds, rounded up, at least 1: a Retry-After header's value.
func RetrySeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// ErrUnavailable refuses a request with a limit while Redis is down and limits.on_redis_down is
// "closed".
var ErrUnavailable = errors.New("rate limits are unavailable: Redis does not answer and limits.on_redis_down is closed")

// Backends, as Backend reports them.
const (
	BackendLocal    = "local"          // no Redis configured: counters in process
	BackendRedis    = "redis"          // counters in Redis, shared by every replica
	BackendFallback = "local-fallback" // Redis configured but down: limits.on_redis_down applies
)

// Options configure a Limiter; the zero value limits nothing, in process.
type Options struct {
	// Orgs is the hierarchy whose levels' limits apply (config key orgs).
	Orgs access.Orgs
	// Anonymous are the limits of requests without a credential (auth.Anonymous).
	Anonymous Limits
	// RedisURL, when set, keeps the counters in Redis.
	RedisURL string
	// OnRedisDown is what admission does while Redis is down; default config.Default()'s.
	OnRedisDown config.RedisDown
	// Replicas divides every limit while Redis is down and OnRedisDown is local; default 1.
	Replicas int
	// RedisTimeout bounds each Redis round trip; default config.Default()'s.
	RedisTimeout time.Duration
	// LeaseTTL is how long a concurrent slot held in Redis outlives a replica that crashed
	// holding it: the longest a request may last (default http.request_timeout's default).
	LeaseTTL time.Duration
	// Now is the clock of the counters in process; default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
	// OnBackend, if not nil, is told each time Redis goes down (false) or comes back (true).
	OnBackend func(redisUp bool)
	// OnReject, if not nil, is told each refused request's level and limit.
	OnReject func(level, limit string)
}

// Limiter admits requests and charges what they used. It is safe for concurrent use.
type Limiter struct {
	o      Options
	levels table
	local  *local // the counters without Redis, or with Redis down and OnRedisDown local
	redis  *redisBackend
}

// New builds a Limiter; with a Redis URL it connects lazily, on the first request with a limit.
func New(o Options) (*Limiter, error) {
	def := config.Default().Limits
	if o.OnRedisDown == "" {
		o.OnRedisDown = def.OnRedisDown
	}
	if o.Replicas < 1 {
		o.Replicas = def.Replicas
	}
	if o.RedisTimeout <= 0 {
		o.RedisTimeout = def.RedisTimeout.D()
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = config.Default().HTTP.RequestTimeout.D()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	l := &Limiter{o: o, levels: compile(o.Orgs, o.Anonymous), local: newLocal(o.Now)}
	if o.RedisURL != "" {
		r, err := newRedis(o, l.local)
		if err != nil {
			return nil, err
		}
		l.redis = r
	}
	return l, nil
}

var noRelease = func() {}

// Admit admits a request of id, or refuses it with *Exceeded (or ErrUnavailable while Redis is
// down and OnRedisDown is closed). The caller calls release once the request is over, whatever it
// did; release may be called more than once.
func (l *Limiter) Admit(ctx context.Context, id access.Identity) (release func(), err error) {
	specs := l.levels.of(id)
	if len(specs) == 0 {
		return noRelease, nil
	}
	if l.redis != nil {
		if l.redis.up() {
			rel, denied, wait, err := l.redis.admit(ctx, specs)
			switch {
			case err == nil && denied < 0:
				return rel, nil
			case err == nil:
				return nil, l.refuse(specs[denied], id, wait)
			case ctx.Err() != nil:
				return nil, fmt.Errorf("admitting: %w", context.Cause(ctx))
			}
			l.redis.fail(err)
		}
		switch l.o.OnRedisDown {
		case config.RedisFailOpen:
			return noRelease, nil
		case config.RedisClosed:
			return nil, ErrUnavailable
		}
		specs = share(specs, l.o.Replicas)
	}
	rel, denied, wait := l.local.admit(specs)
	if denied >= 0 {
		return nil, l.refuse(specs[denied], id, wait)
	}
	return rel, nil
}

func (l *Limiter) refuse(s spec, id access.Identity, wait time.Duration) *Exceeded {
	if l.o.OnReject != nil {
		l.o.OnReject(string(s.level), string(s.limit))
	}
	return &Exceeded{Level: s.level, Limit: s.limit, Identity: pathOf(s.level, id), Max: s.max, RetryAfter: wait}
}

// pathOf is the path of id's level.
func pathOf(level Level, id access.Identity) string {
	switch level {
	case LevelOrg:
		return id.Org
	case LevelTeam:
		return id.Org + "/" + id.Team
	}
	return id.String()
}

// Observe charges a finished request's tokens and tool calls to every level of its identity. It
// never blocks: with Redis the charge is queued, and dropped (counted) when the queue is full.
func (l *Limiter) Observe(_ context.Context, r *observe.Report) {
	tokens, tools := usage(r)
	if tokens == 0 && tools == 0 {
		return
	}
	var specs []spec
	for _, s := range l.levels.of(r.Identity) {
		if s.kind == kindDebt {
			specs = append(specs, s)
		}
	}
	if len(specs) == 0 {
		return
	}
	if l.redis != nil {
		l.redis.charge(charge{specs: specs, tokens: tokens, tools: tools})
		return
	}
	l.local.charge(specs, tokens, tools)
}

// usage is what a request used: the tokens of every model call (routing, council, others) and
// the tool calls executed (a reused result is not a call).
func usage(r *observe.Report) (tokens, tools int) {
	if o := r.Outcome; o != nil {
		tokens += o.Usage.PromptTokens + o.Usage.CompletionTokens
		for _, c := range o.Calls {
			if c.ReusedFrom == 0 {
				tools++
			}
		}
	}
	if c := r.Council; c != nil {
		tokens += c.Usage.Total.PromptTokens + c.Usage.Total.CompletionTokens
	}
	for _, m := range r.ModelCalls {
		tokens += m.PromptTokens + m.CompletionTokens
	}
	return tokens, tools
}

// Backend says where the counters are: BackendLocal, BackendRedis or, while Redis is down,
// BackendFallback.
func (l *Limiter) Backend() string {
	switch {
	case l.redis == nil:
		return BackendLocal
	case l.redis.up():
		return BackendRedis
	}
	return BackendFallback
}

// DroppedCharges counts the charges dropped because the queue to Redis was full.
func (l *Limiter) DroppedCharges() uint64 {
	if l.redis == nil {
		return 0
	}
	return l.redis.dropped.Load()
}

// Close sends the queued charges and releases to Redis until ctx ends, then closes the
// connection; without Redis it does nothing.
func (l *Limiter) Close(ctx context.Context) {
	if l.redis != nil {
		l.redis.close(ctx)
	}
}

// local is the counters in process.
type local struct {
	now func() time.Time
	mu  sync.Mutex // guards buckets and leases
	// buckets and leases are keyed by spec.key: their keys come from the configured hierarchy.
	buckets map[string]bucket
	leases  map[string]int
}

// bucket is a token bucket's level at a time; it may be below zero (a debt).
type bucket struct {
	tokens float64
	at     time.Time
}

func newLocal(now func() time.Time) *local {
	return &local{now: now, buckets: map[string]bucket{}, leases: map[string]int{}}
}

// level is s's bucket level at now.
func (l *local) level(s spec, now time.Time) float64 {
	b, ok := l.buckets[s.key]
	if !ok {
		return s.capacity()
	}
	return min(s.capacity(), b.tokens+now.Sub(b.at).Seconds()*s.rate())
}

// admit checks every spec, then takes them all, or none: denied is the first spec that refuses
// (-1 when none does) and wait the longest any refusing spec needs.
func (l *local) admit(specs []spec) (release func(), denied int, wait time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	denied = -1
	levels := make([]float64, len(specs))
	for i, s := range specs {
		var w time.Duration
		switch s.kind {
		case kindTake:
			levels[i] = l.level(s, now)
			if levels[i] < 1 {
				w = seconds((1 - levels[i]) / s.rate())
			}
		case kindDebt:
			if lv := l.level(s, now); lv <= 0 {
				w = seconds(-lv/s.rate()) + time.Millisecond
			}
		case kindLease:
			if l.leases[s.key] >= s.concurrent() {
				w = time.Second // unknown: whenever a request ends
			}
		}
		if w > 0 {
			if denied < 0 {
				denied = i
			}
			wait = max(wait, w)
		}
	}
	if denied >= 0 {
		return nil, denied, wait
	}
	var held []string
	for i, s := range specs {
		switch s.kind {
		case kindTake:
			l.buckets[s.key] = bucket{tokens: levels[i] - 1, at: now}
		case kindLease:
			l.leases[s.key]++
			held = append(held, s.key)
		}
	}
	if len(held) == 0 {
		return noRelease, -1, 0
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			for _, k := range held {
				if l.leases[k]--; l.leases[k] <= 0 {
					delete(l.leases, k)
				}
			}
		})
	}, -1, 0
}

// charge takes tokens and tools from the debt specs' buckets, below zero if need be.
func (l *local) charge(specs []spec, tokens, tools int) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range specs {
		if n := s.amount(tokens, tools); n > 0 {
			l.buckets[s.key] = bucket{tokens: l.level(s, now) - float64(n), at: now}
		}
	}
}

// seconds is s seconds rounded up to the millisecond, as the Redis script counts.
func seconds(s float64) time.Duration {
	return time.Duration(math.Ceil(s*1000-1e-6)) * time.Millisecond
}
