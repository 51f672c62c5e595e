package limits

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"toolrouter/access"
	"toolrouter/council"
	"toolrouter/observe"
	"toolrouter/router"
)

// clock is a hand-moved clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time      { return c.t }
func (c *clock) add(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock               { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }
func id(org, team, agent string) access.Identity {
	return access.Identity{Org: org, Team: team, Agent: agent}
}

var anonymous = access.Identity{Org: access.DefaultOrg, Name: "anonymous", Anonymous: true}

// step is one thing a test does: admit id (want refused by wantLevel/wantLimit, or admitted),
// charge a report, move the clock, or release a held slot.
type step struct {
	advance   time.Duration
	admit     *access.Identity
	hold      string // keep the admitted request's release under this name
	release   string
	report    *observe.Report
	wantLevel Level // "" admitted
	wantLimit Limit
	wantPath  string
	wantRetry time.Duration // checked when not zero
}

func admit(i access.Identity) *access.Identity { return &i }

func refused(i access.Identity, level Level, limit Limit, path string) step {
	return step{admit: admit(i), wantLevel: level, wantLimit: limit, wantPath: path}
}

func tokens(i access.Identity, prompt, completion int) *observe.Report {
	return &observe.Report{Identity: i, Authenticated: true,
		Outcome: &router.Outcome{Usage: router.Usage{PromptTokens: prompt, CompletionTokens: completion}}}
}

func TestLocal(t *testing.T) {
	acme := access.Orgs{"acme": {
		Limits: access.Limits{RequestsPerMinute: 4},
		Teams: map[string]access.Team{
			"research": {Limits: access.Limits{RequestsPerMinute: 3}, Agents: map[string]access.Agent{
				"bot":   {Limits: access.Limits{RequestsPerMinute: 1}},
				"other": {},
			}},
			"ops": {},
		},
	}}
	bot, other, ops := id("acme", "research", "bot"), id("acme", "research", "other"), id("acme", "ops", "")
	tests := []struct {
		name      string
		orgs      access.Orgs
		anonymous access.Limits
		steps     []step
	}{
		{"requests per minute: a burst of the limit, then one per refill", access.Orgs{"acme": {Limits: access.Limits{RequestsPerMinute: 3}}}, access.Limits{}, []step{
			{admit: admit(id("acme", "", ""))}, {admit: admit(id("acme", "", ""))}, {admit: admit(id("acme", "x", ""))},
			{admit: admit(id("acme", "", "")), wantLevel: LevelOrg, wantLimit: RequestsPerMinute, wantPath: "acme", wantRetry: 20 * time.Second},
			{advance: 19 * time.Second},
			{admit: admit(id("acme", "", "")), wantLevel: LevelOrg, wantLimit: RequestsPerMinute, wantPath: "acme", wantRetry: time.Second},
			{advance: time.Second}, {admit: admit(id("acme", "", ""))},
			refused(id("acme", "", ""), LevelOrg, RequestsPerMinute, "acme"),
		}},
		{"every level, top first; a refusal takes nothing", acme, access.Limits{}, []step{
			{admit: admit(bot)},
			refused(bot, LevelAgent, RequestsPerMinute, "acme/research/bot"),
			{admit: admit(other)}, {admit: admit(other)},
			refused(other, LevelTeam, RequestsPerMinute, "acme/research"),
			{admit: admit(ops)},
			refused(ops, LevelOrg, RequestsPerMinute, "acme"),
			refused(bot, LevelOrg, RequestsPerMinute, "acme"),
		}},
		{"concurrent: a slot comes back on release, once", access.Orgs{"acme": {Teams: map[string]access.Team{"t": {Limits: access.Limits{Concurrent: 2}}}}}, access.Limits{}, []step{
			{admit: admit(id("acme", "t", "")), hold: "a"}, {admit: admit(id("acme", "t", "")), hold: "b"},
			{admit: admit(id("acme", "t", "")), wantLevel: LevelTeam, wantLimit: Concurrent, wantPath: "acme/t", wantRetry: time.Second},
			{admit: admit(id("acme", "", ""))}, // the org has no limit
			{release: "a"}, {release: "a"},
			{admit: admit(id("acme", "t", "")), hold: "c"},
			refused(id("acme", "t", ""), LevelTeam, Concurrent, "acme/t"),
		}},
		{"tokens per minute: a debt, paid back by the refill", access.Orgs{"acme": {Limits: access.Limits{TokensPerMinute: 600}}}, access.Limits{}, []step{
			{admit: admit(id("acme", "", ""))}, {admit: admit(id("acme", "", ""))},
			{report: tokens(id("acme", "a", "b"), 500, 400)}, // 900 of 600: 300 in debt
			{admit: admit(id("acme", "", "")), wantLevel: LevelOrg, wantLimit: TokensPerMinute, wantPath: "acme", wantRetry: 30*time.Second + time.Millisecond},
			{advance: 30 * time.Second},
			refused(id("acme", "", ""), LevelOrg, TokensPerMinute, "acme"), // exactly zero is exhausted
			{advance: time.Second}, {admit: admit(id("acme", "", ""))},
		}},
		{"tokens per day: the council's and other model calls count", access.Orgs{"acme": {Limits: access.Limits{TokensPerDay: 1000}}}, access.Limits{}, []step{
			{report: &observe.Report{Identity: id("acme", "", ""), Council: &council.Result{Usage: council.Usage{Total: council.StageUsage{PromptTokens: 600, CompletionTokens: 300}}}}},
			{admit: admit(id("acme", "", ""))},
			{report: &observe.Report{Identity: id("acme", "", ""), ModelCalls: []observe.ModelCall{{PromptTokens: 50, CompletionTokens: 50}}}},
			{admit: admit(id("acme", "", "")), wantLevel: LevelOrg, wantLimit: TokensPerDay, wantPath: "acme", wantRetry: time.Millisecond},
			{advance: time.Hour}, {admit: admit(id("acme", "", ""))},
		}},
		{"tool calls per minute: a reused result is not a call", access.Orgs{"acme": {Teams: map[string]access.Team{"t": {Agents: map[string]access.Agent{"a": {Limits: access.Limits{ToolCallsPerMinute: 2}}}}}}}, access.Limits{}, []step{
			{report: &observe.Report{Identity: id("acme", "t", "a"), Outcome: &router.Outcome{Calls: []router.Call{{Step: 1}, {Step: 2, ReusedFrom: 1}}}}},
			{admit: admit(id("acme", "t", "a"))},
			{report: &observe.Report{Identity: id("acme", "t", "a"), Outcome: &router.Outcome{Calls: []router.Call{{Step: 1}}}}},
			{admit: admit(id("acme", "t", "a")), wantLevel: LevelAgent, wantLimit: ToolCallsPerMinute, wantPath: "acme/t/a", wantRetry: time.Millisecond},
			{admit: admit(id("acme", "t", ""))}, // the team has no limit of its own
		}},
		{"anonymous requests have their own limits", access.Orgs{"acme": {}}, access.Limits{RequestsPerMinute: 1}, []step{
			{admit: admit(anonymous)},
			refused(anonymous, LevelAnonymous, RequestsPerMinute, "default"),
			{admit: admit(id("default", "", ""))}, // a credential for org default is not anonymous
		}},
		{"an identity without limits is always admitted", access.Orgs{"acme": {Limits: access.Limits{RequestsPerMinute: 1}}}, access.Limits{}, []step{
			{admit: admit(id("beta", "", ""))}, {admit: admit(id("beta", "", ""))}, {admit: admit(anonymous)}, {admit: admit(anonymous)},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			var rejects []string
			l, err := New(Options{Orgs: tc.orgs, Anonymous: tc.anonymous, Now: c.now,
				OnReject: func(level, limit string) { rejects = append(rejects, level+"/"+limit) }})
			if err != nil {
				t.Fatal(err)
			}
			held := map[string]func(){}
			var wantRejects []string
			for i, s := range tc.steps {
				c.add(s.advance)
				if s.report != nil {
					l.Observe(context.Background(), s.report)
				}
				if s.release != "" {
					held[s.release]()
				}
				if s.admit == nil {
					continue
				}
				release, err := l.Admit(context.Background(), *s.admit)
				if s.wantLevel == "" {
					if err != nil {
						t.Fatalf("step %d: Admit(%s): got %v, want admitted", i, s.admit, err)
					}
					if s.hold != "" {
						held[s.hold] = release
					}
					continue
				}
				var ex *Exceeded
				if !errors.As(err, &ex) {
					t.Fatalf("step %d: Admit(%s): got %v, want *Exceeded", i, s.admit, err)
				}
				wantRejects = append(wantRejects, string(s.wantLevel)+"/"+string(s.wantLimit))
				if ex.Level != s.wantLevel || ex.Limit != s.wantLimit || ex.Identity != s.wantPath {
					t.Errorf("step %d: got %s %s %s, want %s %s %s", i, ex.Level, ex.Identity, ex.Limit, s.wantLevel, s.wantPath, s.wantLimit)
				}
				if s.wantRetry != 0 && ex.RetryAfter != s.wantRetry {
					t.Errorf("step %d: RetryAfter: got %v, want %v", i, ex.RetryAfter, s.wantRetry)
				}
				if msg := ex.Error(); !strings.Contains(msg, string(s.wantLevel)+" "+s.wantPath) || !strings.Contains(msg, string(s.wantLimit)) {
					t.Errorf("step %d: message %q does not name the level, identity and limit", i, msg)
				}
			}
			if strings.Join(rejects, ",") != strings.Join(wantRejects, ",") {
				t.Errorf("OnReject: got %v, want %v", rejects, wantRejects)
			}
			if got := l.Backend(); got != BackendLocal {
				t.Errorf("Backend: got %q, want %q", got, BackendLocal)
			}
		})
	}
}

func TestRetrySeconds(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want int
	}{{0, 1}, {time.Millisecond, 1}, {time.Second, 1}, {1001 * time.Millisecond, 2}, {30 * time.Second, 30}} {
		if got := RetrySeconds(tc.d); got != tc.want {
			t.Errorf("RetrySeconds(%v): got %d, want %d", tc.d, got, tc.want)
		}
	}
}

// TestBoundedKeys checks that the counters are only ever keyed by the configured levels: a flood
// of identities the configuration does not define adds none.
func TestBoundedKeys(t *testing.T) {
	l, err := New(Options{Orgs: access.Orgs{"acme": {Limits: access.Limits{RequestsPerMinute: 1000, Concurrent: 1000}}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		who := id("acme", "team"+strings.Repeat("x", i%50), "")
		if _, err := l.Admit(context.Background(), who); err != nil {
			t.Fatalf("Admit(%s): %v", who, err)
		}
		l.Observe(context.Background(), tokens(id("stranger", "t", "a"), i, i))
	}
	m := l.b.(*memory)
	if n := len(m.buckets) + len(m.leases); n != 2 {
		t.Errorf("counters: got %d, want 2 (acme's requests and concurrent)", n)
	}
}
