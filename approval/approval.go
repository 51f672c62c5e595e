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
	"strings"
	"time"
)

// Call is a held call: what runs when its token is presented.
type Call struct {
	// RequestID and Step say where the call was chosen.
	RequestID string `json:"request_id"`
	Step      int    `json:"step"`
	// Identity is who the call was chosen for ("org/team/agent"): only it may approve.
	Identity  string         `json:"identity"`
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
	kk := key(token)
	record, used, found, err := k.store.Held(ctx, kk)
	if err != nil {
		return Call{}, fmt.Errorf("reading the held call: %w", err)
	}
	if !found {
		return Call{}, ErrUnknownToken
	}
	var c Call
	d := json.NewDecoder(bytes.NewReader(record))
	d.UseNumber() // the arguments' numbers exactly as held, as validation decodes them
	if err := d.Decode(&c); err != nil {
		return Call{}, fmt.Errorf("reading the held call: %w", err)
	}
	switch {
	case c.Identity != identity:
		return Call{}, ErrOtherIdentity
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
