package limits

import (
	"context"
	"math"
	"sync"
	"time"
)

// memory is the counters in process: the backend without Redis, and the one on_redis_down local
// counts this replica's shares in while Redis is down.
type memory struct {
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

func newMemory(now func() time.Time) *memory {
	return &memory{now: now, buckets: map[string]bucket{}, leases: map[string]int{}}
}

// level is s's bucket level at now.
func (m *memory) level(s spec, now time.Time) float64 {
	b, ok := m.buckets[s.key]
	if !ok {
		return s.capacity()
	}
	return min(s.capacity(), b.tokens+now.Sub(b.at).Seconds()*s.rate())
}

// admit checks every spec, then takes them all, or none. It never fails.
func (m *memory) admit(_ context.Context, specs []spec) (admission, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	refused := admission{denied: -1}
	levels := make([]float64, len(specs))
	for i, s := range specs {
		var w time.Duration
		switch s.kind {
		case kindTake:
			levels[i] = m.level(s, now)
			if levels[i] < 1 {
				w = seconds((1 - levels[i]) / s.rate())
			}
		case kindDebt:
			if lv := m.level(s, now); lv <= 0 {
				w = seconds(-lv/s.rate()) + time.Millisecond
			}
		case kindLease:
			if m.leases[s.key] >= s.concurrent() {
				w = time.Second // unknown: whenever a request ends
			}
		}
		if w > 0 {
			if refused.denied < 0 {
				refused.denied = i
			}
			refused.wait = max(refused.wait, w)
		}
	}
	if refused.denied >= 0 {
		return refused, nil
	}
	var held []string
	for i, s := range specs {
		switch s.kind {
		case kindTake:
			m.buckets[s.key] = bucket{tokens: levels[i] - 1, at: now}
		case kindLease:
			m.leases[s.key]++
			held = append(held, s.key)
		}
	}
	if len(held) == 0 {
		return admitted, nil
	}
	var once sync.Once
	return admission{denied: -1, release: func() {
		once.Do(func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, k := range held {
				if m.leases[k]--; m.leases[k] <= 0 {
					delete(m.leases, k)
				}
			}
		})
	}}, nil
}

// charge takes tokens and tools from the debt specs' buckets, below zero if need be.
func (m *memory) charge(specs []spec, tokens, tools int) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range specs {
		if n := s.amount(tokens, tools); n > 0 {
			m.buckets[s.key] = bucket{tokens: m.level(s, now) - float64(n), at: now}
		}
	}
}

func (m *memory) state() state { return state{where: BackendLocal} }

// seconds is s seconds rounded up to the millisecond, as the Redis script counts.
func seconds(s float64) time.Duration {
	return time.Duration(math.Ceil(s*1000-1e-6)) * time.Millisecond
}
