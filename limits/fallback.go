package limits

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// errDown is what a primary backend answers, without trying, while it knows it is down.
var errDown = errors.New("rate limits: the shared counters do not answer")

// fallback is the shared counters (primary: redisBackend) wrapped with what limits.on_redis_down
// does while they do not answer: down admits instead, each replica enforcing its share of every
// limit (limit / replicas). An admission primary fails goes to down, unless it failed because the
// request's context ended. Charges go to primary, which queues them and hands those it could not
// deliver to spill.
//
// fallback keeps no health of its own: primary notices it is down (a failed call), answers
// errDown until it is back, and says so in its state.
type fallback struct {
	primary  backend
	down     backend // by on_redis_down: memory (local), admitAll (fail_open) or refuseAll (closed)
	replicas int
}

func newFallback(mode RedisDown, replicas int, now func() time.Time) *fallback {
	f := &fallback{replicas: replicas}
	switch mode {
	case RedisFailOpen:
		f.down = admitAll{}
	case RedisClosed:
		f.down = refuseAll{}
	default:
		f.down = newMemory(now)
	}
	return f
}

func (f *fallback) admit(ctx context.Context, specs []spec) (admission, error) {
	a, err := f.primary.admit(ctx, specs)
	switch {
	case err == nil:
		return a, nil
	case !errors.Is(err, errDown) && ctx.Err() != nil:
		return admission{}, fmt.Errorf("admitting: %w", context.Cause(ctx))
	}
	return f.down.admit(ctx, share(specs, f.replicas))
}

func (f *fallback) charge(specs []spec, tokens, tools int) { f.primary.charge(specs, tokens, tools) }

// spill charges what primary could not deliver to down, as this replica's share.
func (f *fallback) spill(specs []spec, tokens, tools int) {
	f.down.charge(share(specs, f.replicas), tokens, tools)
}

func (f *fallback) state() state { return f.primary.state() }

// admitAll is on_redis_down fail_open: it admits every request and counts nothing.
type admitAll struct{}

func (admitAll) admit(context.Context, []spec) (admission, error) { return admitted, nil }
func (admitAll) charge([]spec, int, int)                          {}
func (admitAll) state() state                                     { return state{where: BackendFallback} }

// refuseAll is on_redis_down closed: it refuses every request with ErrUnavailable.
type refuseAll struct{}

func (refuseAll) admit(context.Context, []spec) (admission, error) {
	return admission{}, ErrUnavailable
}
func (refuseAll) charge([]spec, int, int) {}
func (refuseAll) state() state            { return state{where: BackendFallback} }
