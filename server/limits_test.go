package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/ollama/ollama/api"

	"toolrouter/access"
	"toolrouter/auth"
	"toolrouter/limits"
	"toolrouter/observe"
	"toolrouter/router"
	"toolrouter/server"
)

// headerAuth takes the identity from X-Identity ("org/team/agent"); without it the request is
// anonymous, as a loopback listen without keys serves it.
type headerAuth struct{}

func (headerAuth) Authenticate(_ context.Context, header func(string) string) (auth.Identity, error) {
	if v := header("X-Identity"); v != "" {
		id, err := access.ParseIdentity(v)
		if err != nil {
			return auth.Identity{}, auth.ErrInvalid
		}
		return id, nil
	}
	return auth.Anonymous(), nil
}

func (headerAuth) IsAdmin(auth.Identity) bool { return true }

// limitsOrgs: org acme, its team research and the team's agent bot, each with the limits given.
func limitsOrgs(org, team, agent access.Limits) access.Orgs {
	return access.Orgs{"acme": {Limits: org, Teams: map[string]access.Team{
		"research": {Limits: team, Agents: map[string]access.Agent{"bot": {Limits: agent}, "other": {}}},
	}}}
}

// limitedApp is the API with a real Limiter over orgs and a router that answers at once with the
// usage given (or waits for gate, when not nil).
func limitedApp(t *testing.T, l *limits.Limiter, gate chan struct{}, started chan<- struct{}) *fiber.App {
	t.Helper()
	rt := routerFunc(func(ctx context.Context, req router.Request) (*router.Outcome, error) {
		if started != nil {
			started <- struct{}{}
		}
		if gate != nil {
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return &router.Outcome{Reasoning: "no tool needed", Usage: router.Usage{PromptTokens: 70, CompletionTokens: 30}}, nil
	})
	return server.New(server.Deps{Router: rt, Inventory: emptyInventory{}, Model: unprobedModel{}, Auth: headerAuth{},
		Limiter: l, Observer: observe.Fanout{l}}, server.Options{Logger: quiet, Model: "fake"})
}

// send sends one request with the identity header (none when who is "").
func send(t *testing.T, app *fiber.App, method, path, who, body string) (*http.Response, []byte) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if who != "" {
		req.Header.Set("X-Identity", who)
	}
	resp, err := app.Test(req, testTimeout)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, raw
}

// TestRateLimits: a request over a limit of any level is a 429 rate_limited naming the level, the
// identity and the limit, with Retry-After; other endpoints and other identities are not limited.
func TestRateLimits(t *testing.T) {
	one := access.Limits{RequestsPerMinute: 1}
	tests := []struct {
		name                string
		org, team, agent    access.Limits
		anonymous           access.Limits
		who                 string // "" anonymous
		wantMsg, wantRetry  string // wantRetry: the values Retry-After may have, "|" between them
		path                string
		otherWho, otherPath string // a request that must still pass
	}{
		{name: "org", org: one, who: "acme/research/bot", path: "/v1/route",
			wantMsg: "org acme is over its requests_per_minute limit of 1", wantRetry: "60", otherWho: "beta", otherPath: "/v1/route"},
		{name: "team", team: access.Limits{RequestsPerMinute: 2}, who: "acme/research", path: "/v1/answer",
			wantMsg: "team acme/research is over its requests_per_minute limit of 2", wantRetry: "30", otherWho: "acme", otherPath: "/v1/route"},
		{name: "agent", agent: one, who: "acme/research/bot", path: "/v1/route/stream",
			wantMsg: "agent acme/research/bot is over its requests_per_minute limit of 1", wantRetry: "60", otherWho: "acme/research/other", otherPath: "/v1/route"},
		{name: "anonymous", anonymous: access.Limits{TokensPerMinute: 60}, who: "", path: "/v1/answer/stream",
			wantMsg: "anonymous default is over its tokens_per_minute limit of 60", wantRetry: "40|41", otherWho: "acme", otherPath: "/v1/route"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := limits.New(limits.Options{Orgs: limitsOrgs(tc.org, tc.team, tc.agent), Anonymous: tc.anonymous, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			app := limitedApp(t, l, nil, nil)
			body := `{"query":"hi","synthesize":"never"}`
			if strings.HasPrefix(tc.path, "/v1/route") {
				body = `{"query":"hi"}`
			}
			var resp *http.Response
			var raw []byte
			for i := 0; ; i++ {
				resp, raw = send(t, app, http.MethodPost, tc.path, tc.who, body)
				if resp.StatusCode != http.StatusOK {
					break
				}
				if i > 5 {
					t.Fatalf("still admitted after %d requests", i+1)
				}
			}
			if resp.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("got %d %s, want 429", resp.StatusCode, raw)
			}
			code, msg := errorBody(t, raw)
			if code != "rate_limited" || !strings.Contains(msg, tc.wantMsg) {
				t.Errorf("got %s %q, want rate_limited containing %q", code, msg, tc.wantMsg)
			}
			// Whole seconds, rounded up: the time the request took may take one off.
			if got := resp.Header.Get("Retry-After"); !slices.Contains(strings.Split(tc.wantRetry, "|"), got) {
				t.Errorf("Retry-After: got %q, want %q", got, tc.wantRetry)
			}
			// Not a work endpoint: not limited.
			if resp, raw := send(t, app, http.MethodGet, "/v1/inventory", tc.who, ""); resp.StatusCode != http.StatusOK {
				t.Errorf("GET /v1/inventory over the limit: got %d %s, want 200", resp.StatusCode, raw)
			}
			if resp, raw := send(t, app, http.MethodPost, tc.otherPath, tc.otherWho, `{"query":"hi"}`); resp.StatusCode != http.StatusOK {
				t.Errorf("%s for %s, outside the limited level: got %d %s, want 200", tc.otherPath, tc.otherWho, resp.StatusCode, raw)
			}
			// /readyz shows where the counters are.
			if resp, raw := send(t, app, http.MethodGet, "/readyz", "acme", ""); !strings.Contains(string(raw), `"limits":{"backend":"local","dropped_charges":0}`) {
				t.Errorf("/readyz: got %d %s, want the limits' backend", resp.StatusCode, raw)
			}
		})
	}
}

// TestConcurrentReleasedAfterStream: a stream holds its identity's concurrent slot until its last
// event; then the slot is free again.
func TestConcurrentReleasedAfterStream(t *testing.T) {
	l, err := limits.New(limits.Options{Orgs: limitsOrgs(access.Limits{}, access.Limits{}, access.Limits{Concurrent: 1}), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	gate, started := make(chan struct{}), make(chan struct{}, 4)
	app := limitedApp(t, l, gate, started)
	const bot = "acme/research/bot"
	var wg sync.WaitGroup
	wg.Add(1)
	var streamBody []byte
	go func() {
		defer wg.Done()
		_, streamBody = send(t, app, http.MethodPost, "/v1/route/stream", bot, `{"query":"hi"}`)
	}()
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream's routing did not start within 5s")
	}
	resp, raw := send(t, app, http.MethodPost, "/v1/route", bot, `{"query":"hi"}`)
	if code, msg := errorBody(t, raw); resp.StatusCode != http.StatusTooManyRequests || code != "rate_limited" || !strings.Contains(msg, "agent acme/research/bot is over its concurrent limit of 1") {
		t.Fatalf("while the stream runs: got %d %s, want 429 concurrent", resp.StatusCode, raw)
	}
	if resp.Header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After: got %q, want \"1\"", resp.Header.Get("Retry-After"))
	}
	close(gate)
	wg.Wait()
	if !strings.Contains(string(streamBody), "event: complete") {
		t.Fatalf("stream: got %s, want it complete", streamBody)
	}
	if resp, raw := send(t, app, http.MethodPost, "/v1/route", bot, `{"query":"hi"}`); resp.StatusCode != http.StatusOK {
		t.Errorf("after the stream ended: got %d %s, want 200", resp.StatusCode, raw)
	}
}

// TestRateLimitUnavailable: with Redis unreachable and on_redis_down closed, a request with a
// limit is a 503 rate_limit_unavailable; one without a limit is served.
func TestRateLimitUnavailable(t *testing.T) {
	l, err := limits.New(limits.Options{Orgs: limitsOrgs(access.Limits{RequestsPerMinute: 100}, access.Limits{}, access.Limits{}),
		RedisURL: "redis://127.0.0.1:1/0", OnRedisDown: "closed", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	app := limitedApp(t, l, nil, nil)
	resp, raw := send(t, app, http.MethodPost, "/v1/route", "acme", `{"query":"hi"}`)
	if code, _ := errorBody(t, raw); resp.StatusCode != http.StatusServiceUnavailable || code != "rate_limit_unavailable" {
		t.Errorf("got %d %s, want 503 rate_limit_unavailable", resp.StatusCode, raw)
	}
	if resp, raw := send(t, app, http.MethodPost, "/v1/route", "beta", `{"query":"hi"}`); resp.StatusCode != http.StatusOK {
		t.Errorf("an identity without limits: got %d %s, want 200", resp.StatusCode, raw)
	}
	if _, raw := send(t, app, http.MethodGet, "/readyz", "acme", ""); !strings.Contains(string(raw), `"backend":"local-fallback"`) {
		t.Errorf("/readyz: got %s, want backend local-fallback", raw)
	}
}

// unprobedModel is a model server that has the model "fake".
type unprobedModel struct{}

func (unprobedModel) List(context.Context) (*api.ListResponse, error) {
	return &api.ListResponse{Models: []api.ListModelResponse{{Name: "fake", Model: "fake"}}}, nil
}

// TestRateLimitsOfTheNarrowedCaller: a team's key that names one of its agents as caller is
// admitted on that agent's limits too, not only its team's.
func TestRateLimitsOfTheNarrowedCaller(t *testing.T) {
	orgs := limitsOrgs(access.Limits{}, access.Limits{}, access.Limits{RequestsPerMinute: 1})
	l, err := limits.New(limits.Options{Orgs: orgs, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	h, err := access.New(orgs)
	if err != nil {
		t.Fatal(err)
	}
	rt := routerFunc(func(context.Context, router.Request) (*router.Outcome, error) {
		return &router.Outcome{Reasoning: "no tool needed"}, nil
	})
	app := server.New(server.Deps{Router: rt, Inventory: emptyInventory{}, Model: unprobedModel{}, Auth: headerAuth{}, Access: h,
		Limiter: l, Observer: observe.Fanout{l}}, server.Options{Logger: quiet, Model: "fake"})
	for i, want := range []int{http.StatusOK, http.StatusTooManyRequests} {
		resp, raw := send(t, app, http.MethodPost, "/v1/route", "acme/research", `{"query":"hi","caller":"bot"}`)
		if resp.StatusCode != want {
			t.Fatalf("request %d as acme/research acting for bot: got %d %s, want %d", i+1, resp.StatusCode, raw, want)
		}
		if want == http.StatusTooManyRequests {
			if _, msg := errorBody(t, raw); !strings.Contains(msg, "agent acme/research/bot") {
				t.Errorf("got %q, want the agent's limit named", msg)
			}
		}
	}
	// The team itself, and its other agent, have no limit.
	for _, caller := range []string{"", "other"} {
		if resp, raw := send(t, app, http.MethodPost, "/v1/route", "acme/research", `{"query":"hi","caller":"`+caller+`"}`); resp.StatusCode != http.StatusOK {
			t.Errorf("caller %q: got %d %s, want 200", caller, resp.StatusCode, raw)
		}
	}
}
