// Package notify tells a person that a tool call waits for their decision: for each held call it
// POSTs a signed JSON notice to the webhook of the caller's org, with a link to the console's
// approval and never the call's token. It owns the delivery (signing, retries with backoff, the
// bounds on what may be in flight) and its counts; what is held, and who may decide, is package
// approval's.
//
// A notice is signed as Slack signs its requests: the X-Toolrouter-Signature header holds
// "v1=" and the hex HMAC-SHA256, under the hook's secret, of "v1:", the X-Toolrouter-Timestamp
// header's Unix seconds, ":" and the body. A receiver recomputes it (Verify) and refuses a stale
// timestamp, so a captured notice cannot be replayed later.
package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Headers of a notice.
const (
	HeaderSignature = "X-Toolrouter-Signature"
	HeaderTimestamp = "X-Toolrouter-Timestamp"
	HeaderDelivery  = "X-Toolrouter-Delivery"
	HeaderEvent     = "X-Toolrouter-Event"
)

// EventApprovalRequired is the event of a notice about a held call.
const EventApprovalRequired = "approval_required"

// Notice is the body of a webhook delivery.
type Notice struct {
	Event string `json:"event"`
	// ID is the held call's public id (the hash of its token, which approves nothing by itself).
	ID        string    `json:"id"`
	RequestID string    `json:"request_id"`
	Org       string    `json:"org"`
	Identity  string    `json:"identity"`
	Server    string    `json:"server"`
	Tool      string    `json:"tool"`
	Reason    string    `json:"reason"`
	ExpiresAt time.Time `json:"expires_at"`
	// URL is the console's page for the call, where a person who may decide approves or declines.
	URL string `json:"url,omitempty"`
}

// Hook is where an org's notices go.
type Hook struct {
	URL    string
	Secret []byte
}

// Options configure a Notifier. The zero value works with the defaults below.
type Options struct {
	// Client sends the deliveries; nil is a client without its own timeout (each attempt has
	// AttemptTimeout).
	Client *http.Client
	// MaxInFlight bounds the deliveries under way, retries included; a notice beyond it is
	// dropped and counted. Default 256.
	MaxInFlight int
	// Attempts is how many times a delivery is tried. Default 5.
	Attempts int
	// Backoff is the wait before the first retry; it doubles up to MaxBackoff. Defaults 1 s, 1 min.
	Backoff, MaxBackoff time.Duration
	// AttemptTimeout bounds one attempt. Default 10 s.
	AttemptTimeout time.Duration
	Log            *slog.Logger
	// Now is the clock of the timestamps; nil is time.Now.
	Now func() time.Time
}

// Defaults of Options.
const (
	DefaultMaxInFlight    = 256
	DefaultAttempts       = 5
	DefaultBackoff        = time.Second
	DefaultMaxBackoff     = time.Minute
	DefaultAttemptTimeout = 10 * time.Second
)

// Counts are what a Notifier did, for metrics.
type Counts struct {
	// Delivered notices got a 2xx answer; Failed ones ran out of attempts or were refused with a
	// 4xx; Dropped ones found MaxInFlight deliveries under way (or the notifier closed).
	Delivered, Failed, Dropped uint64
	// Retries counts attempts after a delivery's first.
	Retries uint64
}

// Notifier delivers notices in the background. It is safe for concurrent use.
type Notifier struct {
	o      Options
	slots  chan struct{} // one per delivery under way
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex // guards closed and the start of a delivery (wg.Add) against Close
	closed bool
	wg     sync.WaitGroup

	delivered, failed, dropped, retries atomic.Uint64
}

// New returns a Notifier; Close stops it.
func New(o Options) *Notifier {
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	if o.Attempts <= 0 {
		o.Attempts = DefaultAttempts
	}
	if o.Backoff <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.AttemptTimeout <= 0 {
		o.AttemptTimeout = DefaultAttemptTimeout
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Notifier{o: o, slots: make(chan struct{}, o.MaxInFlight), ctx: ctx, cancel: cancel}
}

// Notify starts delivering n to h and reports whether it did: false when MaxInFlight deliveries
// are under way or the notifier is closed (the notice is dropped and counted). It never blocks.
func (nf *Notifier) Notify(h Hook, n Notice) bool {
	if n.Event == "" {
		n.Event = EventApprovalRequired
	}
	body, err := json.Marshal(n)
	if err != nil { // a Notice always marshals
		nf.dropped.Add(1)
		return false
	}
	nf.mu.Lock()
	defer nf.mu.Unlock()
	if nf.closed {
		nf.dropped.Add(1)
		return false
	}
	select {
	case nf.slots <- struct{}{}:
	default:
		nf.dropped.Add(1)
		nf.o.Log.Warn("approval notice dropped: too many deliveries under way", "org", n.Org, "id", n.ID)
		return false
	}
	nf.wg.Add(1)
	go func() {
		defer nf.wg.Done()
		defer func() { <-nf.slots }()
		nf.deliver(h, n, body)
	}()
	return true
}

// Close refuses new notices and lets the deliveries under way finish until ctx is done; then it
// stops the rest (they count as failed) and returns ctx's error once they have ended.
func (nf *Notifier) Close(ctx context.Context) error {
	nf.mu.Lock()
	nf.closed = true
	nf.mu.Unlock()
	done := make(chan struct{})
	go func() { nf.wg.Wait(); close(done) }()
	defer nf.cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		nf.cancel()
		<-done // every wait and attempt ends with nf.ctx
		return fmt.Errorf("closing the notifier: %w", ctx.Err())
	}
}

// Counts returns what the notifier did so far.
func (nf *Notifier) Counts() Counts {
	return Counts{Delivered: nf.delivered.Load(), Failed: nf.failed.Load(), Dropped: nf.dropped.Load(),
		Retries: nf.retries.Load()}
}

// deliver tries a notice until it is delivered, refused or out of attempts.
func (nf *Notifier) deliver(h Hook, n Notice, body []byte) {
	delivery := rand.Text()
	wait := nf.o.Backoff
	var err error
	for attempt := 1; attempt <= nf.o.Attempts; attempt++ {
		if attempt > 1 {
			nf.retries.Add(1)
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-nf.ctx.Done():
				t.Stop()
				nf.fail(n, fmt.Errorf("closed before attempt %d: %w", attempt, err))
				return
			}
			wait = min(2*wait, nf.o.MaxBackoff)
		}
		var retry bool
		var after time.Duration
		retry, after, err = nf.attempt(h, n, delivery, body)
		if err == nil {
			nf.delivered.Add(1)
			return
		}
		if !retry {
			break
		}
		if after > wait {
			wait = min(after, nf.o.MaxBackoff)
		}
	}
	nf.fail(n, err)
}

func (nf *Notifier) fail(n Notice, err error) {
	nf.failed.Add(1)
	nf.o.Log.Warn("approval notice not delivered", "org", n.Org, "id", n.ID, "err", err)
}

// attempt sends one attempt. It reports whether another attempt may succeed (a network error, a
// 5xx, 408 or 429) and the wait a 429 or 503 asked for.
func (nf *Notifier) attempt(h Hook, n Notice, delivery string, body []byte) (retry bool, after time.Duration, err error) {
	ctx, cancel := context.WithTimeout(nf.ctx, nf.o.AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return false, 0, fmt.Errorf("building the request: %w", err)
	}
	ts := strconv.FormatInt(nf.o.Now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "toolrouter-webhook")
	req.Header.Set(HeaderEvent, n.Event)
	req.Header.Set(HeaderDelivery, delivery)
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSignature, Sign(h.Secret, ts, body))
	resp, err := nf.o.Client.Do(req)
	if err != nil {
		return nf.ctx.Err() == nil, 0, fmt.Errorf("posting to the webhook: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return false, 0, nil
	case resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode >= 500:
		return true, retryAfter(resp.Header.Get("Retry-After")), fmt.Errorf("the webhook answered %s", resp.Status)
	default:
		return false, 0, fmt.Errorf("the webhook refused the notice: %s", resp.Status)
	}
}

// retryAfter reads a Retry-After of delay seconds (an HTTP date is ignored).
func retryAfter(v string) time.Duration {
	s, err := strconv.Atoi(v)
	if err != nil || s < 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}

// Sign is the X-Toolrouter-Signature of body sent at Unix time ts (decimal seconds).
func Sign(secret []byte, ts string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("v1:" + ts + ":"))
	m.Write(body)
	return "v1=" + hex.EncodeToString(m.Sum(nil))
}

// Errors of Verify.
var (
	ErrBadSignature = errors.New("the signature does not match the body")
	ErrStale        = errors.New("the timestamp is outside the tolerated window")
)

// Verify checks a received notice's signature and that its timestamp is within tolerance of now,
// as a receiver should before trusting it.
func Verify(secret []byte, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	ts := h.Get(HeaderTimestamp)
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s %q", ErrStale, HeaderTimestamp, ts)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: sent %s ago", ErrStale, d.Round(time.Second))
	}
	if !hmac.Equal([]byte(h.Get(HeaderSignature)), []byte(Sign(secret, ts, body))) {
		return ErrBadSignature
	}
	return nil
}
