package notify

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var secret = []byte("s3cret-from-the-environment")

// receiver is a webhook endpoint that checks each notice's signature as a user's would, answers
// with the next of its statuses (the last one repeats), and records what it accepted.
type receiver struct {
	t        *testing.T
	mu       sync.Mutex
	statuses []int
	got      []Notice
	bodies   []string
	bad      int
	hits     chan int // the status of each answered request
	block    chan struct{}
}

func newReceiver(t *testing.T, statuses ...int) (*receiver, *httptest.Server) {
	r := &receiver{t: t, statuses: statuses, hits: make(chan int, 100)}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return r, srv
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if r.block != nil {
		select {
		case <-r.block:
		case <-req.Context().Done():
			return
		}
	}
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	if err := Verify(secret, req.Header, body, time.Now(), 5*time.Minute); err != nil {
		r.bad++
		r.mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
		r.hits <- http.StatusUnauthorized
		return
	}
	status := r.statuses[0]
	if len(r.statuses) > 1 {
		r.statuses = r.statuses[1:]
	}
	if status < 300 {
		var n Notice
		if err := json.Unmarshal(body, &n); err != nil {
			r.t.Errorf("notice does not parse: %v", err)
		}
		r.got = append(r.got, n)
		r.bodies = append(r.bodies, string(body))
	}
	r.mu.Unlock()
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "0")
	}
	w.WriteHeader(status)
	r.hits <- status
}

func notice() Notice {
	return Notice{ID: "9f2c", RequestID: "req-1", Org: "acme", Identity: "acme/ops/bot", Server: "files",
		Tool: "delete_file", Reason: "destructive", ExpiresAt: time.Date(2026, 11, 28, 20, 0, 0, 0, time.UTC),
		URL: "https://toolrouter.example/ui/approvals/9f2c"}
}

// closeNow waits for the deliveries under way to end.
func closeNow(t *testing.T, nf *Notifier) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := nf.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestDelivery(t *testing.T) {
	tests := []struct {
		name     string
		statuses []int
		secret   []byte
		want     Counts
		accepted int
	}{
		{name: "delivered", statuses: []int{200}, secret: secret, want: Counts{Delivered: 1}, accepted: 1},
		{name: "retried after server errors", statuses: []int{503, 500, 204}, secret: secret,
			want: Counts{Delivered: 1, Retries: 2}, accepted: 1},
		{name: "retried after 429", statuses: []int{429, 200}, secret: secret, want: Counts{Delivered: 1, Retries: 1}, accepted: 1},
		{name: "refused is not retried", statuses: []int{400}, secret: secret, want: Counts{Failed: 1}},
		{name: "out of attempts", statuses: []int{502}, secret: secret, want: Counts{Failed: 1, Retries: 2}},
		{name: "wrong secret fails the receiver's check", statuses: []int{200}, secret: []byte("other"),
			want: Counts{Failed: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, srv := newReceiver(t, tc.statuses...)
			nf := New(Options{Attempts: 3, Backoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond})
			if !nf.Notify(Hook{URL: srv.URL, Secret: tc.secret}, notice()) {
				t.Fatal("Notify refused the notice")
			}
			closeNow(t, nf)
			if got := nf.Counts(); got != tc.want {
				t.Errorf("counts %+v, want %+v", got, tc.want)
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			if len(r.got) != tc.accepted {
				t.Fatalf("receiver accepted %d notices, want %d", len(r.got), tc.accepted)
			}
			if tc.accepted == 0 {
				return
			}
			want := notice()
			want.Event = EventApprovalRequired
			if g := r.got[0]; g != want {
				t.Errorf("notice %+v, want %+v", g, want)
			}
			if strings.Contains(r.bodies[0], "tra_") || strings.Contains(r.bodies[0], "token") {
				t.Errorf("notice carries a token: %s", r.bodies[0])
			}
		})
	}
}

func TestDroppedBeyondMaxInFlight(t *testing.T) {
	r, srv := newReceiver(t, 200)
	r.block = make(chan struct{})
	nf := New(Options{MaxInFlight: 1})
	h := Hook{URL: srv.URL, Secret: secret}
	if !nf.Notify(h, notice()) {
		t.Fatal("first notice refused")
	}
	if nf.Notify(h, notice()) {
		t.Error("second notice accepted with one delivery under way and MaxInFlight 1")
	}
	close(r.block)
	closeNow(t, nf)
	if got, want := nf.Counts(), (Counts{Delivered: 1, Dropped: 1}); got != want {
		t.Errorf("counts %+v, want %+v", got, want)
	}
	if nf.Notify(h, notice()) {
		t.Error("a closed notifier accepted a notice")
	}
}

// TestCloseStopsRetries: a delivery waiting an hour to retry ends when Close's deadline passes.
func TestCloseStopsRetries(t *testing.T) {
	r, srv := newReceiver(t, 503)
	nf := New(Options{Backoff: time.Hour})
	nf.Notify(Hook{URL: srv.URL, Secret: secret}, notice())
	select {
	case s := <-r.hits:
		if s != 503 {
			t.Fatalf("first attempt got %d, want 503", s)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the first attempt never reached the receiver")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := nf.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Close: %v, want context.Canceled", err)
	}
	// The attempt may be cut before or after its answer is read: one failure either way.
	if got := nf.Counts(); got.Failed != 1 || got.Delivered != 0 {
		t.Errorf("counts %+v, want one failed and none delivered", got)
	}
}

func TestVerify(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"event":"approval_required"}`)
	ts := strconv.FormatInt(now.Unix(), 10)
	header := func(ts, sig string) http.Header {
		h := http.Header{}
		h.Set(HeaderTimestamp, ts)
		h.Set(HeaderSignature, sig)
		return h
	}
	tests := []struct {
		name string
		h    http.Header
		body []byte
		now  time.Time
		want error
	}{
		{name: "good", h: header(ts, Sign(secret, ts, body)), body: body, now: now},
		{name: "tampered body", h: header(ts, Sign(secret, ts, body)), body: []byte(`{"event":"x"}`), now: now, want: ErrBadSignature},
		{name: "other secret", h: header(ts, Sign([]byte("x"), ts, body)), body: body, now: now, want: ErrBadSignature},
		{name: "timestamp changed", h: header("1800000001", Sign(secret, ts, body)), body: body, now: now, want: ErrBadSignature},
		{name: "replayed later", h: header(ts, Sign(secret, ts, body)), body: body, now: now.Add(6 * time.Minute), want: ErrStale},
		{name: "no timestamp", h: header("", Sign(secret, ts, body)), body: body, now: now, want: ErrStale},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Verify(secret, tc.h, tc.body, tc.now, 5*time.Minute)
			if !errors.Is(err, tc.want) {
				t.Errorf("Verify: %v, want %v", err, tc.want)
			}
		})
	}
}
