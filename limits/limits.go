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
	"time"

	"toolrouter/access"
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

// RedisDown is what rate limiting does while Redis is down (limits.on_redis_down).
type RedisDown string

// Values of RedisDown.
const (
	// RedisLocal counts in process, each replica enforcing its share (limits.replicas).
	RedisLocal RedisDown = "local"
	// RedisFailOpen admits every request.
	RedisFailOpen RedisDown = "fail_open"
	// RedisClosed refuses every request that has a limit (503).
	RedisClosed RedisDown = "closed"
)

// The defaults of Options; package config's limits.* defaults are these.
const (
	DefaultOnRedisDown = RedisLocal
	// DefaultRedisTimeout is short: Redis answers in well under a millisecond on a network that
	// works, and a request must not wait long on one that does not.
	DefaultRedisTimeout = 50 * time.Millisecond
	// DefaultLeaseTTL is the longest a request lasts when nobody says (http.request_timeout's
	// default).
	DefaultLeaseTTL = 2 * time.Minute
)

// Options configure a Limiter; the zero value limits nothing, in process.
type Options struct {
	// Orgs is the hierarchy whose levels' limits apply (config key orgs).
	Orgs access.Orgs
	// Anonymous are the limits of requests without a credential (auth.Anonymous).
	Anonymous Limits
	// RedisURL, when set, keeps the counters in Redis.
	RedisURL string
	// OnRedisDown is what admission does while Redis is down; default DefaultOnRedisDown.
	OnRedisDown RedisDown
	// Replicas divides every limit while Redis is down and OnRedisDown is local; default 1.
	Replicas int
	// RedisTimeout bounds each Redis round trip; default DefaultRedisTimeout.
	RedisTimeout time.Duration
	// LeaseTTL is how long a concurrent slot held in Redis outlives a replica that crashed
	// holding it: the longest a request may last (http.request_timeout; default DefaultLeaseTTL).
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
	b      backend               // the counters: in process, or in Redis behind OnRedisDown's fallback
	stop   func(context.Context) // closes b's connection, if it has one
}

// New builds a Limiter; with a Redis URL it connects lazily, on the first request with a limit.
func New(o Options) (*Limiter, error) {
	if o.OnRedisDown == "" {
		o.OnRedisDown = DefaultOnRedisDown
	}
	if o.Replicas < 1 {
		o.Replicas = 1
	}
	if o.RedisTimeout <= 0 {
		o.RedisTimeout = DefaultRedisTimeout
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	l := &Limiter{o: o, levels: compile(o.Orgs, o.Anonymous), b: newMemory(o.Now), stop: func(context.Context) {}}
	if o.RedisURL != "" {
		f := newFallback(o.OnRedisDown, o.Replicas, o.Now)
		r, err := newRedis(o, f.spill)
		if err != nil {
			return nil, err
		}
		f.primary = r
		l.b, l.stop = f, r.close
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
	a, err := l.b.admit(ctx, specs)
	if err != nil {
		return nil, err
	}
	if a.denied >= 0 {
		return nil, l.refuse(specs[a.denied], id, a.wait)
	}
	return a.release, nil
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
	l.b.charge(specs, tokens, tools)
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
func (l *Limiter) Backend() string { return l.b.state().where }

// DroppedCharges counts the charges dropped because the queue to Redis was full.
func (l *Limiter) DroppedCharges() uint64 { return l.b.state().dropped }

// Close sends the queued charges and releases to Redis until ctx ends, then closes the
// connection; without Redis it does nothing.
func (l *Limiter) Close(ctx context.Context) { l.stop(ctx) }

// backend keeps the counters. Limiter hands it the specs of a request's levels, top first, and
// turns its answers into *Exceeded: memory counts in process, redisBackend in Redis, and fallback
// wraps redisBackend with what OnRedisDown does while Redis does not answer.
type backend interface {
	// admit checks every spec and takes them all, or none: a request from each take spec's
	// bucket, a slot of each lease spec until the admission's release. An error refuses the
	// request without counting it.
	admit(ctx context.Context, specs []spec) (admission, error)
	// charge takes a finished request's tokens and tool calls from its debt specs' buckets,
	// below zero if need be. It never blocks.
	charge(specs []spec, tokens, tools int)
	// state says where the counters are now and what was dropped on the way to them.
	state() state
}

// admission is a backend's answer to admit.
type admission struct {
	release func()        // admitted: ends the hold on the request's slots; nil when refused
	denied  int           // the first refusing spec, -1 when admitted
	wait    time.Duration // the longest any refusing spec needs
}

// admitted is an admission that holds nothing.
var admitted = admission{release: noRelease, denied: -1}

// state is a backend's view of itself, for Limiter.Backend and Limiter.DroppedCharges.
type state struct {
	where   string // BackendLocal, BackendRedis or BackendFallback
	dropped uint64 // ends of requests (charges, releases) dropped on the way to the counters
}
