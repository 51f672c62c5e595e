package approval

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// MaxHeld bounds the calls a Store keeps, Memory and the usage database alike: one that is full
// drops its expired calls, used or not, to make room, and refuses a new call when none has expired.
const MaxHeld = 10_000

// ErrFull is a Store's error when MaxHeld calls are held and none has expired.
var ErrFull = errors.New("too many calls await approval")

// MaxClockSkew is how far apart the clocks of replicas sharing a Store may be: a call's expiry is
// written by one replica's clock and checked by another's, so a shared Store that is full makes
// room only with calls that expired more than MaxClockSkew ago by its own clock, which no replica
// whose clock is behind by less still honours.
const MaxClockSkew = time.Minute

// Memory is a Store in the process, for a toolrouter without a usage database: its tokens are
// honoured by this process only, and lost when it stops. It is safe for concurrent use.
type Memory struct {
	mu        sync.Mutex // guards held and decisions
	held      map[string]*memoryHeld
	decisions []Decided // oldest first, at most MaxDecisions
	now       func() time.Time
}

type memoryHeld struct {
	identity string
	record   []byte
	expires  time.Time
	used     bool
}

// NewMemory returns an empty Memory.
func NewMemory() *Memory { return &Memory{held: map[string]*memoryHeld{}, now: time.Now} }

// PutHeld stores h under key within share; when full it first drops the expired records. Its
// clock is the only one that reads them, so it needs no margin for skew.
func (m *Memory) PutHeld(_ context.Context, key string, h Held, share Share) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if len(m.held) >= MaxHeld {
		for k, h := range m.held {
			if !now.Before(h.expires) {
				delete(m.held, k)
			}
		}
		if len(m.held) >= MaxHeld {
			return ErrFull
		}
	}
	if share.Calls > 0 || share.Bytes > 0 {
		var (
			calls int
			bytes = int64(len(h.Record))
		)
		for _, o := range m.held {
			if o.identity == h.Identity && !o.used && now.Before(o.expires) {
				calls++
				bytes += int64(len(o.record))
			}
		}
		if err := share.Check(h.Identity, calls, bytes); err != nil {
			return err
		}
	}
	m.held[key] = &memoryHeld{identity: h.Identity, record: h.Record, expires: h.Expires}
	return nil
}

// Held returns the record under key.
func (m *Memory) Held(_ context.Context, key string) (record []byte, used, found bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.held[key]
	if !ok {
		return nil, false, false, nil
	}
	return h.record, h.used, true, nil
}

// UseHeld marks key used.
func (m *Memory) UseHeld(_ context.Context, key string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.held[key]
	if !ok || h.used {
		return false, nil
	}
	h.used = true
	return true, nil
}

// ListHeld returns the unexpired, unused records f selects, in key order.
func (m *Memory) ListHeld(_ context.Context, f Filter) ([]Record, error) {
	if f.Limit <= 0 {
		f.Limit = DefaultPage
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	keys := make([]string, 0, len(m.held))
	for k, h := range m.held {
		if !h.used && now.Before(h.expires) && k > f.After && (f.Identity == "" || h.identity == f.Identity) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	keys = keys[:min(len(keys), f.Limit)]
	out := make([]Record, len(keys))
	for i, k := range keys {
		out[i] = Record{Key: k, Record: m.held[k].record}
	}
	return out, nil
}

// RecordDecision keeps d, dropping the oldest past MaxDecisions.
func (m *Memory) RecordDecision(_ context.Context, d Decided) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.decisions) >= MaxDecisions {
		m.decisions = slices.Delete(m.decisions, 0, len(m.decisions)-MaxDecisions+1)
	}
	m.decisions = append(m.decisions, d)
	return nil
}

// Decisions returns the newest decisions and expired calls, at most limit, newest first.
func (m *Memory) Decisions(_ context.Context, limit int) ([]Decided, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	var recorded, expired []Decided
	for i := len(m.decisions) - 1; i >= 0 && len(recorded) < limit; i-- {
		recorded = append(recorded, m.decisions[i])
	}
	for k, h := range m.held {
		if !h.used && !now.Before(h.expires) {
			if d, ok := ExpiredOf(k, h.record); ok {
				expired = append(expired, d)
			}
		}
	}
	slices.SortFunc(expired, func(a, b Decided) int { return b.At.Compare(a.At) })
	return MergeDecisions(recorded, expired, limit), nil
}
