package limits

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"toolrouter/redact"
)

// script checks and takes every spec of a request at once (admit), or ends a batch of requests
// (end): releases their concurrent slots and charges their usage, in one call. It counts on
// Redis's clock (TIME), so that every replica counts alike.
//
// KEYS are the specs' counters. ARGV[1] is the operation (admit, end), ARGV[2] the lease (a
// concurrent slot's id) that admit takes, ARGV[3] the lease's time to live in ms; then four values
// per key: its kind (take, debt, lease), the refill per ms, the capacity (or the slots), and what
// end does to it: the amount to charge a debt key, the space-separated leases to remove from a
// lease key. A bucket is a hash {v: tokens, t: ms}; a missing one is full. admit answers {0, 0}
// when admitted, else {i, wait_ms}: the first refusing key (1-based) and the longest wait.
const script = `
local op, lease, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function level(key, rate, cap)
  local v = redis.call('HMGET', key, 'v', 't')
  local tokens = tonumber(v[1])
  if not tokens then return cap end
  local l = tokens + (now - tonumber(v[2])) * rate
  if l > cap then l = cap end
  return l
end

local function store(key, l, rate, cap)
  redis.call('HSET', key, 'v', tostring(l), 't', tostring(now))
  redis.call('PEXPIRE', key, math.ceil((cap - l) / rate) + 1000)
end

local function arg(i, k) return ARGV[4 + (i - 1) * 4 + k] end

if op == 'admit' then
  local denied, wait, levels = 0, 0, {}
  for i = 1, #KEYS do
    local kind, rate, cap = arg(i, 0), tonumber(arg(i, 1)), tonumber(arg(i, 2))
    local w = 0
    if kind == 'take' then
      levels[i] = level(KEYS[i], rate, cap)
      if levels[i] < 1 then w = math.ceil((1 - levels[i]) / rate) end
    elseif kind == 'debt' then
      local l = level(KEYS[i], rate, cap)
      if l <= 0 then w = math.ceil(-l / rate) + 1 end
    elseif redis.call('ZCARD', KEYS[i]) >= cap then
      -- Full: drop the slots whose lease has expired (a crashed replica's), then count again.
      redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
      if redis.call('ZCARD', KEYS[i]) >= cap then w = 1000 end
    end
    if w > 0 then
      if denied == 0 then denied = i end
      if w > wait then wait = w end
    end
  end
  if denied > 0 then return {denied, wait} end
  for i = 1, #KEYS do
    local kind, rate, cap = arg(i, 0), tonumber(arg(i, 1)), tonumber(arg(i, 2))
    if kind == 'take' then
      store(KEYS[i], levels[i] - 1, rate, cap)
    elseif kind == 'lease' then
      redis.call('ZADD', KEYS[i], now + ttl, lease)
      redis.call('PEXPIRE', KEYS[i], ttl + 1000)
    end
  end
  return {0, 0}
end
for i = 1, #KEYS do
  local kind = arg(i, 0)
  if kind == 'lease' then
    local ids = {}
    for id in string.gmatch(arg(i, 3), '%S+') do ids[#ids + 1] = id end
    redis.call('ZREM', KEYS[i], unpack(ids))
  elseif kind == 'debt' then
    local rate, cap, amount = tonumber(arg(i, 1)), tonumber(arg(i, 2)), tonumber(arg(i, 3))
    store(KEYS[i], level(KEYS[i], rate, cap) - amount, rate, cap)
  end
end
return {0, 0}
`

var lua = redis.NewScript(script)

// quietOnce turns go-redis's own log (a line per failed dial while Redis is down) into debug
// lines: Limiter logs each transition once.
var quietOnce sync.Once

type debugLog struct{ l *slog.Logger }

func (d debugLog) Printf(ctx context.Context, format string, v ...any) {
	d.l.DebugContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}

// keyPrefix starts every key; the braces put them all in one Redis Cluster slot, as a script's
// keys must be.
const keyPrefix = "toolrouter:{limits}:"

// Bounds of the Redis side: the queues of charges and releases, how many of them one round trip
// sends, and the retry backoff while Redis is down.
const (
	queueSize  = 1024
	batchSize  = 64
	minBackoff = 100 * time.Millisecond
	maxBackoff = 2 * time.Second
)

// charge is one finished request's usage for the debt specs of its identity.
type charge struct {
	specs         []spec
	tokens, tools int
}

// leases are one request's concurrent slots in Redis: the lease specs of its identity.
type leases struct {
	specs []spec
	id    string
}

// scriptArgs is s as the script reads it: its kind, refill per ms and capacity (or slots).
func (s spec) scriptArgs() [3]any {
	k, rate, capacity := "debt", s.rate()/1000, s.capacity()
	switch s.kind {
	case kindTake:
		k = "take"
	case kindLease:
		k, rate, capacity = "lease", 0, float64(s.concurrent())
	}
	return [3]any{k, strconv.FormatFloat(rate, 'g', -1, 64), strconv.FormatFloat(capacity, 'g', -1, 64)}
}

// redisBackend keeps the counters in Redis. It notices Redis is down on a failed call, logs once,
// answers errDown and hands the charges it cannot send to spill until a background ping finds
// Redis back; fallback decides what admission does meanwhile.
type redisBackend struct {
	c        *redis.Client
	o        Options
	ttl      int64                                 // o.LeaseTTL in ms, as the script reads it
	spill    func(specs []spec, tokens, tools int) // the charges not sent while Redis is down
	instance string                                // this process's lease prefix
	seq      atomic.Uint64
	healthy  atomic.Bool
	dropped  atomic.Uint64
	charges  chan charge
	releases chan leases
	done     chan struct{}
	wg       sync.WaitGroup
	once     sync.Once
}

func newRedis(o Options, spill func(specs []spec, tokens, tools int)) (*redisBackend, error) {
	ro, err := redis.ParseURL(o.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("limits.redis_url %s: %w", redact.URL(o.RedisURL), err)
	}
	// Every call is bounded by its context (RedisTimeout), and so is every dial, read, write and
	// wait for a connection; none is retried: with a timeout this short a retry only doubles the
	// time a request waits, and a failure is Redis being down, handled by on_redis_down and the
	// background retry.
	ro.ContextTimeoutEnabled = true
	ro.MaxRetries = -1
	ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout, ro.PoolTimeout = o.RedisTimeout, o.RedisTimeout, o.RedisTimeout, o.RedisTimeout
	ro.DialerRetries = 1
	ro.DisableIdentity = true
	ro.Protocol = 2
	// Admission holds a connection for one round trip per request, so the pool bounds the
	// admissions in flight at once: go-redis's 10 per CPU, unless the URL's pool_size says
	// otherwise. The ends of requests take one more, from one worker, one call at a time.
	if ro.PoolSize == 0 {
		ro.PoolSize = 10 * runtime.GOMAXPROCS(0)
	}
	quietOnce.Do(func() { redis.SetLogger(debugLog{o.Logger}) })
	var id [6]byte
	_, _ = rand.Read(id[:])
	r := &redisBackend{c: redis.NewClient(ro), o: o, ttl: o.LeaseTTL.Milliseconds(), spill: spill,
		instance: hex.EncodeToString(id[:]),
		charges:  make(chan charge, queueSize), releases: make(chan leases, queueSize), done: make(chan struct{})}
	r.healthy.Store(true)
	r.wg.Add(1)
	go r.work()
	return r, nil
}

func (r *redisBackend) up() bool { return r.healthy.Load() }

func (r *redisBackend) state() state {
	s := state{where: BackendRedis, dropped: r.dropped.Load()}
	if !r.up() {
		s.where = BackendFallback
	}
	return s
}

// admit runs admission in Redis, or answers errDown while Redis is down. A call that fails while
// ctx lives marks Redis down.
func (r *redisBackend) admit(ctx context.Context, specs []spec) (admission, error) {
	if !r.up() {
		return admission{}, errDown
	}
	a, err := r.run(ctx, specs)
	if err != nil && ctx.Err() == nil {
		r.fail(err)
	}
	return a, err
}

// run is one admission in Redis, in one script call.
func (r *redisBackend) run(ctx context.Context, specs []spec) (admission, error) {
	lease := ""
	var held []spec
	for _, s := range specs {
		if s.kind == kindLease {
			held = append(held, s)
		}
	}
	if held != nil {
		lease = r.instance + "-" + strconv.FormatUint(r.seq.Add(1), 36)
	}
	ctx, cancel := context.WithTimeout(ctx, r.o.RedisTimeout)
	defer cancel()
	keys := make([]string, len(specs))
	args := make([]any, 0, 3+4*len(specs))
	args = append(args, "admit", lease, r.ttl)
	for i, s := range specs {
		keys[i] = s.rkey
		args = append(args, s.rargs[0], s.rargs[1], s.rargs[2], 0)
	}
	res, err := lua.Run(ctx, r.c, keys, args...).Int64Slice()
	if err != nil {
		return admission{}, fmt.Errorf("rate limits in redis: %w", err)
	}
	if len(res) != 2 || res[0] < 0 || int(res[0]) > len(specs) {
		return admission{}, fmt.Errorf("rate limits in redis: unexpected answer %v", res)
	}
	if res[0] > 0 {
		return admission{denied: int(res[0]) - 1, wait: time.Duration(res[1]) * time.Millisecond}, nil
	}
	if held == nil {
		return admitted, nil
	}
	var once sync.Once
	return admission{denied: -1, release: func() {
		once.Do(func() {
			select {
			case r.releases <- leases{specs: held, id: lease}:
			default: // the lease expires
				r.dropped.Add(1)
			}
		})
	}}, nil
}

// charge queues a charge; a full queue drops it.
func (r *redisBackend) charge(specs []spec, tokens, tools int) {
	select {
	case r.charges <- charge{specs: specs, tokens: tokens, tools: tools}:
	default:
		r.dropped.Add(1)
	}
}

// work sends the queued releases and charges until close: whatever is queued when it wakes, up to
// batchSize, releases first, in one script call.
func (r *redisBackend) work() {
	defer r.wg.Done()
	var rels []leases
	var chs []charge
	for {
		rels, chs = rels[:0], chs[:0]
		select {
		case l := <-r.releases:
			rels = append(rels, l)
		case c := <-r.charges:
			chs = append(chs, c)
		case <-r.done:
			return
		}
		rels, chs = r.take(rels, chs)
		r.flush(rels, chs)
	}
}

// take adds to rels and chs what the queues hold, releases first, until they hold batchSize.
func (r *redisBackend) take(rels []leases, chs []charge) ([]leases, []charge) {
	for len(rels)+len(chs) < batchSize {
		select {
		case l := <-r.releases:
			rels = append(rels, l)
			continue
		default:
		}
		select {
		case c := <-r.charges:
			chs = append(chs, c)
		default:
			return rels, chs
		}
	}
	return rels, chs
}

// flush ends a batch of requests in one script call, within RedisTimeout: their releases and
// charges together. While Redis is down, or when the call fails, the charges go to spill and the
// releases are left to expire.
func (r *redisBackend) flush(rels []leases, chs []charge) {
	if !r.up() {
		r.unsent(chs)
		return
	}
	keys, args := r.ends(rels, chs)
	if len(keys) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.o.RedisTimeout)
	defer cancel()
	// A Redis that has lost the script (restarted, or SCRIPT FLUSH) answers NOSCRIPT, and Run
	// sends the script itself, which Redis keeps.
	if err := lua.Run(ctx, r.c, keys, args...).Err(); err != nil {
		r.fail(fmt.Errorf("rate limits in redis: %w", err))
		r.unsent(chs)
	}
}

// ends is the script's KEYS and ARGV that end a batch of requests: each lease key once, with
// every lease to remove from it, then each debt key once, with the sum of what the batch charges
// it (at one instant, taking a sum is taking each amount in turn). A key left with nothing to do
// is left out.
func (r *redisBackend) ends(rels []leases, chs []charge) ([]string, []any) {
	type end struct {
		s      spec
		amount int
		ids    []string
	}
	var order []*end
	at := map[string]*end{}
	add := func(s spec) *end {
		e := at[s.rkey]
		if e == nil {
			e = &end{s: s}
			at[s.rkey] = e
			order = append(order, e)
		}
		return e
	}
	for _, l := range rels {
		for _, s := range l.specs {
			e := add(s)
			e.ids = append(e.ids, l.id)
		}
	}
	for _, c := range chs {
		for _, s := range c.specs {
			if n := s.amount(c.tokens, c.tools); n > 0 {
				add(s).amount += n
			}
		}
	}
	keys := make([]string, len(order))
	args := make([]any, 0, 3+4*len(order))
	args = append(args, "end", "", r.ttl)
	for i, e := range order {
		keys[i] = e.s.rkey
		var what any = e.amount
		if e.s.kind == kindLease {
			what = strings.Join(e.ids, " ")
		}
		args = append(args, e.s.rargs[0], e.s.rargs[1], e.s.rargs[2], what)
	}
	return keys, args
}

// unsent hands the charges Redis did not take to spill.
func (r *redisBackend) unsent(chs []charge) {
	for _, c := range chs {
		r.spill(c.specs, c.tokens, c.tools)
	}
}

// fail marks Redis down after a failed call: the first failure logs, tells OnBackend and starts
// retrying in the background; the next ones, while it is down, do nothing.
func (r *redisBackend) fail(err error) {
	if !r.healthy.CompareAndSwap(true, false) {
		return
	}
	r.o.Logger.Warn("rate limits: Redis does not answer; counting per on_redis_down until it does",
		"err", err.Error(), "on_redis_down", string(r.o.OnRedisDown), "replicas", r.o.Replicas)
	if r.o.OnBackend != nil {
		r.o.OnBackend(false)
	}
	select {
	case <-r.done:
		return
	default:
	}
	r.wg.Add(1)
	go r.retry()
}

// retry pings Redis with a growing backoff until it answers or the backend closes.
func (r *redisBackend) retry() {
	defer r.wg.Done()
	wait := minBackoff
	for {
		t := time.NewTimer(wait)
		select {
		case <-r.done:
			t.Stop()
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), r.o.RedisTimeout)
		err := r.c.Ping(ctx).Err()
		cancel()
		if err == nil {
			r.healthy.Store(true)
			r.o.Logger.Info("rate limits: Redis answers again; counters are shared")
			if r.o.OnBackend != nil {
				r.o.OnBackend(true)
			}
			return
		}
		wait = min(2*wait, maxBackoff)
	}
}

// close sends what is queued until ctx ends, stops the workers and closes the client.
func (r *redisBackend) close(ctx context.Context) {
	r.once.Do(func() {
		close(r.done)
		r.wg.Wait()
		for ctx.Err() == nil {
			rels, chs := r.take(nil, nil)
			if len(rels)+len(chs) == 0 {
				break
			}
			r.flush(rels, chs)
		}
		if err := r.c.Close(); err != nil {
			r.o.Logger.Debug("closing the rate limits' Redis client", slog.String("err", err.Error()))
		}
	})
}
