// Package approval keeps the tool calls that wait for a person. A call the caller's auto_execute
// level does not run (access.AutoExecute) is held: its record, with the exact validated
// arguments, goes to a Store under the hash of a new single-use token, which the caller gets
// with the call's expiry. Presenting the token (POST /v1/approve) takes the record back, once,
// for the identity it was issued to and before it expires; the router then runs exactly that
// call. The token itself is never stored, so a reader of the database cannot approve anything.
// Each identity holds within its own Share of a Store, so that one caller cannot fill it for all.
package approval

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Call is a held call: what runs when its token is presented.
type Call struct {
	// RequestID and Step say where the call was chosen.
	RequestID string `json:"request_id"`
	Step      int    `json:"step"`
	// Identity is who the call was chosen for ("org/team/agent"): only it may approve.
	Identity string `json:"identity"`
	// Query is the request's query (masked, at most MaxQueryBytes), for the person who decides.
	Query     string         `json:"query,omitempty"`
	Server    string         `json:"server"`
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
	// Pin is the tool's definition (safety.Pin) when held: a tool whose definition changed since
	// is not run.
	Pin string `json:"pin"`
	// Reason says why the call was held.
	Reason    string    `json:"reason"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Share bounds what one identity may hold at once (safety.max_held_per_identity and its
// siblings, which each level of orgs may set for itself): a caller that fills its share is
// refused, and the others still hold. 0 sets no bound.
type Share struct {
	// Calls is how many of the identity's calls may await approval (unexpired, unused) at once.
	Calls int
	// Bytes is how many bytes their records may take together.
	Bytes int64
	// ArgumentBytes is how large one call's arguments may be, as JSON.
	ArgumentBytes int
}

// Check refuses a new call of identity, for a Store: calls is how many of its calls await
// approval already, bytes what their records take with the new one's. It answers ErrShareFull
// (wrapped) when they fill the share.
func (s Share) Check(identity string, calls int, bytes int64) error {
	switch {
	case s.Calls > 0 && calls >= s.Calls:
		return fmt.Errorf("%q has %d calls awaiting approval, its share: %w", identity, calls, ErrShareFull)
	case s.Bytes > 0 && bytes > s.Bytes:
		return fmt.Errorf("%q's calls awaiting approval would take %d bytes, over its share of %d: %w", identity, bytes, s.Bytes, ErrShareFull)
	}
	return nil
}

// DefaultShare is safety's share by default: 100 calls awaiting approval per identity (a person
// does not review more at once; 100 identities would fill MaxHeld), 4 MiB of records, and 64 KiB
// of arguments per call, larger than any call a person can read before approving it.
var DefaultShare = Share{Calls: 100, Bytes: 4 << 20, ArgumentBytes: 64 << 10}

// Held is a record a Store keeps: a held call, as JSON, for Identity, until Expires.
type Held struct {
	Identity string
	Expires  time.Time
	Record   []byte
}

// Store keeps held calls by key, the hash of their token; *usage.Store keeps them in the usage
// database, so that every replica sharing it honours a token, and Memory in the process.
type Store interface {
	// PutHeld stores h under key until h.Expires; it may drop records long expired. It keeps at
	// most MaxHeld, and refuses a new one with ErrFull (wrapped) when that many are unexpired; it
	// refuses one that would take h.Identity's unexpired, unused calls past share.Calls or their
	// records past share.Bytes with ErrShareFull (wrapped).
	PutHeld(ctx context.Context, key string, h Held, share Share) error
	// Held returns the record stored under key and whether it was used; found is false when no
	// record is stored under key.
	Held(ctx context.Context, key string) (record []byte, used, found bool, err error)
	// UseHeld marks key used and reports whether this call did: false when it was used already.
	UseHeld(ctx context.Context, key string) (bool, error)
	// ListHeld returns the unexpired, unused records that f selects, in key order.
	ListHeld(ctx context.Context, f Filter) ([]Record, error)
	// RecordDecision keeps d, dropping the oldest decisions past MaxDecisions.
	RecordDecision(ctx context.Context, d Decided) error
	// Decisions returns the newest decisions, at most limit, newest first: those recorded and the
	// calls that expired unused (Expired, at their expiry) while the Store keeps them.
	Decisions(ctx context.Context, limit int) ([]Decided, error)
}

// Filter selects held calls for ListHeld.
type Filter struct {
	// Identity, if not "", selects that identity's calls only.
	Identity string
	// After, if not "", selects the calls whose key sorts after it (the last key of a page).
	After string
	// Limit is how many records at most (a page); 0 is DefaultPage.
	Limit int
}

// DefaultPage is how many records ListHeld returns at most when its Filter sets no Limit.
const DefaultPage = 100

// Record is a held call as a Store lists it: its key and its record.
type Record struct {
	Key    string
	Record []byte
}

// MaxDecisions bounds the decisions a Store keeps: past it, the oldest are dropped.
const MaxDecisions = 10_000

// Decided is a decision on a held call, as recorded: who decided what, when, about which call.
type Decided struct {
	// ID is the call's public id (Key).
	ID      string   `json:"id"`
	Outcome Decision `json:"outcome"`
	// By is who decided: the identity ("org/team/agent"), and the key's name or token's subject
	// after a space when known; "" for a call withdrawn or expired.
	By        string    `json:"by,omitempty"`
	At        time.Time `json:"at"`
	RequestID string    `json:"request_id,omitempty"`
	Identity  string    `json:"identity"`
	Server    string    `json:"server"`
	Tool      string    `json:"tool"`
}

// MaxQueryBytes bounds Call.Query: a longer query is cut (on a rune boundary) and marked.
const MaxQueryBytes = 1024

// ClipQuery returns q cut to MaxQueryBytes, on a rune boundary, with "…" when it was cut.
func ClipQuery(q string) string {
	if len(q) <= MaxQueryBytes {
		return q
	}
	n := MaxQueryBytes - len("…")
	for n > 0 && !utf8.RuneStart(q[n]) {
		n-- // not inside a rune
	}
	return q[:n] + "…"
}

// Errors of Take, one per refusal.
var (
	ErrUnknownToken  = errors.New("no call is held under this token")
	ErrOtherIdentity = errors.New("the token was issued to another identity")
	ErrExpired       = errors.New("the token has expired")
	ErrUsed          = errors.New("the token was used already")
)

// Errors of Hold and PutHeld, one per refusal.
var (
	// ErrShareFull: the identity holds as many calls, or as many bytes, as its Share allows.
	ErrShareFull = errors.New("this identity's calls awaiting approval fill its share")
	// ErrTooLarge: the call's arguments are larger than Share.ArgumentBytes.
	ErrTooLarge = errors.New("the arguments are too large to hold")
)

// tokenPrefix marks toolrouter's approval tokens, so that a scanner (or a person) knows one.
const tokenPrefix = "tra_"

// Keeper holds calls and gives them back for their tokens. It is safe for concurrent use.
type Keeper struct {
	store Store
	ttl   time.Duration
	now   func() time.Time
}

// NewKeeper returns a Keeper whose tokens live ttl.
func NewKeeper(store Store, ttl time.Duration) *Keeper {
	return &Keeper{store: store, ttl: ttl, now: time.Now}
}

// Hold stores c within c.Identity's share and returns its token and expiry (also set in the
// stored record). Arguments larger than share.ArgumentBytes are refused with ErrTooLarge, a full
// share with ErrShareFull and a full store with ErrFull (each wrapped).
func (k *Keeper) Hold(ctx context.Context, c Call, share Share) (token string, expires time.Time, err error) {
	args, err := json.Marshal(c.Arguments)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("holding %s.%s: %w", c.Server, c.Tool, err)
	}
	if share.ArgumentBytes > 0 && len(args) > share.ArgumentBytes {
		return "", time.Time{}, fmt.Errorf("holding %s.%s: its arguments are %d bytes as JSON, and a held call may keep %d: %w",
			c.Server, c.Tool, len(args), share.ArgumentBytes, ErrTooLarge)
	}
	token = tokenPrefix + rand.Text()
	c.ExpiresAt = k.now().Add(k.ttl).UTC().Truncate(time.Millisecond)
	record, err := json.Marshal(c)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("holding %s.%s: %w", c.Server, c.Tool, err)
	}
	if err := k.store.PutHeld(ctx, key(token), Held{Identity: c.Identity, Expires: c.ExpiresAt, Record: record}, share); err != nil {
		return "", time.Time{}, fmt.Errorf("holding %s.%s: %w", c.Server, c.Tool, err)
	}
	return token, c.ExpiresAt, nil
}

// Take returns the call held under token for identity and marks the token used, so that it runs
// once. A token never issued, issued to another identity, expired or used already is refused
// with ErrUnknownToken, ErrOtherIdentity, ErrExpired or ErrUsed, in that order of checks; then
// check, when not nil, may refuse the call (the tool changed since, say). Only a Take that
// returns no error uses the token.
func (k *Keeper) Take(ctx context.Context, token, identity string, check func(Call) error) (Call, error) {
	if !strings.HasPrefix(token, tokenPrefix) {
		return Call{}, ErrUnknownToken
	}
	return k.take(ctx, key(token), func(c Call) error {
		if c.Identity != identity {
			return ErrOtherIdentity
		}
		return nil
	}, check)
}

// TakeKey is Take by the call's public id (Key) rather than its token, for a person who decides
// in the console: the same refusals, in the same order, but for the identity's, which whose makes
// instead (who may decide is the caller's policy), before anything else is told of the call;
// then check, as Take's. An id that is not a key is ErrUnknownToken.
func (k *Keeper) TakeKey(ctx context.Context, key string, whose, check func(Call) error) (Call, error) {
	if !isKey(key) {
		return Call{}, ErrUnknownToken
	}
	return k.take(ctx, key, whose, check)
}

// take is Take by key: whose, when not nil, refuses before the expiry and use are checked.
func (k *Keeper) take(ctx context.Context, kk string, whose, check func(Call) error) (Call, error) {
	record, used, found, err := k.store.Held(ctx, kk)
	if err != nil {
		return Call{}, fmt.Errorf("reading the held call: %w", err)
	}
	if !found {
		return Call{}, ErrUnknownToken
	}
	c, err := decode(record)
	if err != nil {
		return Call{}, err
	}
	if whose != nil {
		if err := whose(c); err != nil {
			return Call{}, err
		}
	}
	switch {
	case !k.now().Before(c.ExpiresAt):
		return Call{}, ErrExpired
	case used:
		return Call{}, ErrUsed
	}
	if check != nil {
		if err := check(c); err != nil {
			return Call{}, err
		}
	}
	won, err := k.store.UseHeld(ctx, kk)
	if err != nil {
		return Call{}, fmt.Errorf("using the token: %w", err)
	}
	if !won {
		return Call{}, ErrUsed
	}
	return c, nil
}

// decode reads a held call's record.
func decode(record []byte) (Call, error) {
	var c Call
	d := json.NewDecoder(bytes.NewReader(record))
	d.UseNumber() // the arguments' numbers exactly as held, as validation decodes them
	if err := d.Decode(&c); err != nil {
		return Call{}, fmt.Errorf("reading the held call: %w", err)
	}
	return c, nil
}

// Listed is a held call as Keeper.List gives it: its public id (Key) and the call.
type Listed struct {
	ID   string `json:"id"`
	Call Call   `json:"call"`
}

// List returns the unexpired, unused calls held that keep selects (all when nil), at most limit,
// soonest to expire first. It reads the Store a page at a time, and at most MaxHeld records, and
// keeps at most limit of them between pages, so that its time and memory are bounded however many
// calls are held; identity, if not "", reads only that identity's.
func (k *Keeper) List(ctx context.Context, identity string, limit int, keep func(Call) bool) ([]Listed, error) {
	var (
		out  []Listed
		f    = Filter{Identity: identity, Limit: DefaultPage}
		read int
		now  = k.now()
	)
	for read < MaxHeld {
		page, err := k.store.ListHeld(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("listing held calls: %w", err)
		}
		for _, r := range page {
			c, err := decode(r.Record)
			if err != nil {
				return nil, fmt.Errorf("listing held calls: %w", err)
			}
			if now.Before(c.ExpiresAt) && (keep == nil || keep(c)) {
				out = append(out, Listed{ID: r.Key, Call: c})
			}
		}
		read += len(page)
		out = soonest(out, limit) // what is kept stays within limit and a page
		if len(page) < f.Limit {
			break
		}
		f.After = page[len(page)-1].Key
	}
	return soonest(out, 0), nil
}

// soonest sorts ls soonest to expire first and keeps the first limit (all when limit is 0 or
// less).
func soonest(ls []Listed, limit int) []Listed {
	slices.SortFunc(ls, func(a, b Listed) int {
		if c := a.Call.ExpiresAt.Compare(b.Call.ExpiresAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	if limit > 0 && len(ls) > limit {
		clear(ls[limit:]) // the calls left out go, arguments and all
		ls = ls[:limit]
	}
	return ls
}

// Record keeps a decision on a held call; its errors are the Store's.
func (k *Keeper) Record(ctx context.Context, d Decided) error {
	if d.At.IsZero() {
		d.At = k.now().UTC().Truncate(time.Millisecond)
	}
	if err := k.store.RecordDecision(ctx, d); err != nil {
		return fmt.Errorf("recording a decision: %w", err)
	}
	return nil
}

// Decisions returns the newest decisions recorded, at most limit, newest first, with the calls
// that expired undecided.
func (k *Keeper) Decisions(ctx context.Context, limit int) ([]Decided, error) {
	ds, err := k.store.Decisions(ctx, limit)
	if err != nil {
		return nil, fmt.Errorf("reading decisions: %w", err)
	}
	return ds, nil
}

// Expired is the outcome of a held call nobody decided before it expired, and Withdrawn of one
// whose waiting route's client left; both are recorded, never handed to a route.
const (
	Expired   Decision = "expired"
	Withdrawn Decision = "withdrawn"
)

// ExpiredOf is what a Store lists for a held call whose record expired unused; false when the
// record cannot be read.
func ExpiredOf(key string, record []byte) (Decided, bool) {
	c, err := decode(record)
	if err != nil {
		return Decided{}, false
	}
	return Decided{ID: key, Outcome: Expired, At: c.ExpiresAt, RequestID: c.RequestID, Identity: c.Identity, Server: c.Server, Tool: c.Tool}, true
}

// MergeDecisions merges two lists each newest first into one, newest first, at most limit.
func MergeDecisions(a, b []Decided, limit int) []Decided {
	out := append(slices.Clone(a), b...)
	slices.SortStableFunc(out, func(x, y Decided) int { return y.At.Compare(x.At) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// isKey reports whether s is a key as key writes it: 64 lower-case hex digits.
func isKey(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Key is what a token's call is stored under, and its public id: the token's SHA-256, in hex.
// It approves nothing by itself.
func Key(token string) string { return key(token) }

// Withdraw uses up the token of the call held under key without running it (its route's client
// went away) and reports whether it was still unused.
func (k *Keeper) Withdraw(ctx context.Context, key string) (bool, error) {
	won, err := k.store.UseHeld(ctx, key)
	if err != nil {
		return false, fmt.Errorf("withdrawing the held call: %w", err)
	}
	return won, nil
}

// key is what a token is stored under: its SHA-256, in hex.
func key(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
