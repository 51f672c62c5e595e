package approval

import (
	"context"
	"errors"
	"sync"
	"time"
)

// MaxHeld bounds the calls a Store keeps, Memory and the usage database alike: one that is full
// drops its expired calls, used or not, to make room, and refuses a new call when none has expired.
const MaxHeld = 10_000

// ErrFull is a Store's error when MaxHeld calls are held and none has expired.
var ErrFull = errors.New("too many calls await approval")

// Memory is a Store in the process, for a toolrouter without a usage database: its tokens are
// honoured by this process only, and lost when it stops. It is safe for concurrent use.
type Memory struct {
	mu   sync.Mutex
	held map[string]*memoryHeld
	now  func() time.Time
}

type memoryHeld struct {
	record  []byte
	expires time.Time
	used    bool
}

// NewMemory returns an empty Memory.
func NewMemory() *Memory { return &Memory{held: map[string]*memoryHeld{}, now: time.Now} }

// PutHeld stores record under key; when full it first drops the expired records.
func (m *Memory) PutHeld(_ context.Context, key string, expires time.Time, record []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.held) >= MaxHeld {
		now := m.now()
		for k, h := range m.held {
			if !now.Before(h.expires) {
				delete(m.held, k)
			}
		}
		if len(m.held) >= MaxHeld {
			return ErrFull
		}
	}
	m.held[key] = &memoryHeld{record: record, expires: expires}
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
