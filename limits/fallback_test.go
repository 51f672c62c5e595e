package limits

import (
	"context"
	"errors"
	"testing"
	"time"

	"toolrouter/access"
)

// shaky is a primary backend standing in for Redis: it answers every admission with answer, or
// fails with err; while it fails it hands every charge to spill, as redisBackend does with the
// charges it cannot send.
type shaky struct {
	answer admission
	err    error
	spill  func(specs []spec, tokens, tools int)
	asked  int // admissions it was asked for
}

func (s *shaky) admit(context.Context, []spec) (admission, error) {
	s.asked++
	return s.answer, s.err
}

func (s *shaky) charge(specs []spec, tokens, tools int) {
	if s.err != nil {
		s.spill(specs, tokens, tools)
	}
}

func (s *shaky) state() state { return state{where: BackendRedis} }

// behind is a Limiter of orgs whose counters are primary behind the fallback of mode, for 2
// replicas, on a hand-moved clock.
func behind(t *testing.T, orgs access.Orgs, mode RedisDown, primary *shaky) *Limiter {
	t.Helper()
	l, err := New(Options{Orgs: orgs})
	if err != nil {
		t.Fatal(err)
	}
	f := newFallback(mode, 2, newClock().now)
	primary.spill, f.primary = f.spill, primary
	l.b = f
	return l
}

// outcome is what an admission came to, as a user sees it: "admitted", the limit that refused
// it, "unavailable", or the error.
func outcome(err error) string {
	var ex *Exceeded
	switch {
	case err == nil:
		return "admitted"
	case errors.As(err, &ex):
		return string(ex.Limit)
	case errors.Is(err, ErrUnavailable):
		return "unavailable"
	}
	return err.Error()
}

// TestFallbackAdmit: while the primary answers, its answers stand, whatever on_redis_down says;
// when it fails or is down, on_redis_down decides: this replica's share of each limit (local),
// everything (fail_open) or nothing (closed). A failure of a request whose context ended is that
// request's error, not the counters'.
func TestFallbackAdmit(t *testing.T) {
	orgs := access.Orgs{"acme": {Limits: access.Limits{RequestsPerMinute: 4}}}
	refusal := admission{denied: 0, wait: 5 * time.Second}
	broken := errors.New("rate limits in redis: dial tcp: connection refused")
	rpm := string(RequestsPerMinute)
	tests := []struct {
		name      string
		mode      RedisDown
		answer    admission
		err       error
		ended     bool // the request's context is canceled
		want      []string
		wantAsked int // admissions the primary was asked for
	}{
		{"answering: admitted by the primary", RedisClosed, admitted, nil, false,
			[]string{"admitted", "admitted", "admitted", "admitted", "admitted"}, 5},
		{"answering: a refusal stands, fail_open or not", RedisFailOpen, refusal, nil, false,
			[]string{rpm, rpm}, 2},
		{"failing, local: this replica's share, 2 of 4", RedisLocal, admission{}, broken, false,
			[]string{"admitted", "admitted", rpm, rpm}, 4},
		{"down, local: this replica's share, 2 of 4", RedisLocal, admission{}, errDown, false,
			[]string{"admitted", "admitted", rpm}, 3},
		{"failing, fail_open: everything admitted", RedisFailOpen, admission{}, broken, false,
			[]string{"admitted", "admitted", "admitted", "admitted", "admitted"}, 5},
		{"failing, closed: everything refused", RedisClosed, admission{}, broken, false,
			[]string{"unavailable", "unavailable"}, 2},
		{"failing as the request ended: its context's error", RedisFailOpen, admission{}, context.Canceled, true,
			[]string{"admitting: context canceled"}, 1},
		{"down as the request ended: on_redis_down still decides", RedisClosed, admission{}, errDown, true,
			[]string{"unavailable"}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			primary := &shaky{answer: tc.answer, err: tc.err}
			l := behind(t, orgs, tc.mode, primary)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.ended {
				cancel()
			}
			for i, want := range tc.want {
				release, err := l.Admit(ctx, id("acme", "", ""))
				if got := outcome(err); got != want {
					t.Fatalf("admission %d: got %s, want %s", i+1, got, want)
				}
				if err == nil {
					release()
				}
				var ex *Exceeded
				if errors.As(err, &ex) && (ex.Max != 4 || ex.Level != LevelOrg || ex.Identity != "acme") {
					t.Errorf("admission %d: got %s %s over %d, want org acme over the configured 4", i+1, ex.Level, ex.Identity, ex.Max)
				}
			}
			if primary.asked != tc.wantAsked {
				t.Errorf("admissions asked of the primary: got %d, want %d", primary.asked, tc.wantAsked)
			}
		})
	}
}

// TestFallbackSpill: the charges the primary could not send count against this replica's share
// when on_redis_down is local, and against nothing when it admits or refuses everything anyway.
func TestFallbackSpill(t *testing.T) {
	orgs := access.Orgs{"acme": {Limits: access.Limits{TokensPerMinute: 1000}}}
	tests := []struct {
		name      string
		mode      RedisDown
		err       error
		want      string
		wantRetry time.Duration // checked when not zero
	}{
		// 600 tokens of a 500 share: 100 in debt, 12s of a refill of 500 a minute.
		{"down, local: charged to the share", RedisLocal, errDown, string(TokensPerMinute), 12*time.Second + time.Millisecond},
		{"down, fail_open: admitted anyway", RedisFailOpen, errDown, "admitted", 0},
		{"answering: nothing spilled", RedisLocal, nil, "admitted", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := behind(t, orgs, tc.mode, &shaky{answer: admitted, err: tc.err})
			who := id("acme", "t", "a")
			if _, err := l.Admit(context.Background(), who); err != nil {
				t.Fatalf("before the charge: got %v, want admitted", err)
			}
			l.Observe(context.Background(), tokens(who, 400, 200))
			_, err := l.Admit(context.Background(), who)
			if got := outcome(err); got != tc.want {
				t.Fatalf("after the charge: got %s, want %s", got, tc.want)
			}
			var ex *Exceeded
			if tc.wantRetry != 0 && errors.As(err, &ex) && ex.RetryAfter != tc.wantRetry {
				t.Errorf("RetryAfter: got %v, want %v", ex.RetryAfter, tc.wantRetry)
			}
		})
	}
}
