package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestMemoryBounded: a full Memory drops expired calls to make room and refuses a new one when
// every held call is still live; a token is used once.
func TestMemoryBounded(t *testing.T) {
	m := NewMemory()
	now := time.Now()
	m.now = func() time.Time { return now }
	ctx := context.Background()
	for i := range MaxHeld {
		expires := now.Add(time.Hour)
		if i == 0 {
			expires = now.Add(-time.Second)
		}
		if err := m.PutHeld(ctx, fmt.Sprint(i), Held{Expires: expires, Record: []byte("{}")}, Share{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.PutHeld(ctx, "new", Held{Expires: now.Add(time.Hour), Record: []byte("{}")}, Share{}); err != nil {
		t.Fatalf("one expired call should make room: %v", err)
	}
	if _, _, found, _ := m.Held(ctx, "0"); found {
		t.Error("the expired call was kept")
	}
	if err := m.PutHeld(ctx, "more", Held{Expires: now.Add(time.Hour), Record: []byte("{}")}, Share{}); !errors.Is(err, ErrFull) {
		t.Errorf("got %v, want ErrFull", err)
	}
	for i, want := range []bool{true, false} {
		if won, err := m.UseHeld(ctx, "new"); err != nil || won != want {
			t.Errorf("use %d: got %v, %v; want %v", i+1, won, err, want)
		}
	}
}

// TestTakeKeepsNumbers: the arguments come back exactly as held, an integer past 2^53 included.
func TestTakeKeepsNumbers(t *testing.T) {
	k := NewKeeper(NewMemory(), time.Hour)
	ctx := context.Background()
	token, _, err := k.Hold(ctx, Call{Identity: "acme", Server: "db", Tool: "get", Arguments: map[string]any{"id": json.Number("9007199254740993")}}, DefaultShare)
	if err != nil {
		t.Fatal(err)
	}
	c, err := k.Take(ctx, token, "acme", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Arguments["id"].(json.Number); got != "9007199254740993" {
		t.Errorf("got id %#v, want json.Number 9007199254740993", c.Arguments["id"])
	}
}

// TestShares: an identity that fills its share, in calls or in bytes, is refused with
// ErrShareFull while another identity still holds; a call whose arguments are larger than a held
// call may keep is refused with ErrTooLarge; calls used or expired leave the share.
func TestShares(t *testing.T) {
	big := strings.Repeat("x", 1000)
	tests := []struct {
		name  string
		share Share
		args  map[string]any
		holds int   // by the first identity before the checked call
		use   bool  // its first call is approved (used) before the checked call
		want  error // of the checked call, by the first identity
	}{
		{name: "within the share", share: Share{Calls: 3}, holds: 2},
		{name: "calls fill the share", share: Share{Calls: 3}, holds: 3, want: ErrShareFull},
		{name: "a used call leaves the share", share: Share{Calls: 3}, holds: 3, use: true},
		{name: "bytes fill the share", share: Share{Bytes: 2500}, args: map[string]any{"s": big}, holds: 2, want: ErrShareFull},
		{name: "bytes within the share", share: Share{Bytes: 4000}, args: map[string]any{"s": big}, holds: 2},
		{name: "arguments too large", share: Share{ArgumentBytes: 999}, args: map[string]any{"s": big}, want: ErrTooLarge},
		{name: "arguments at the bound", share: Share{ArgumentBytes: len(`{"s":""}`) + 1000}, args: map[string]any{"s": big}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			k := NewKeeper(NewMemory(), time.Hour)
			hold := func(identity string) (string, error) {
				token, _, err := k.Hold(ctx, Call{Identity: identity, Server: "fs", Tool: "delete", Arguments: tc.args}, tc.share)
				return token, err
			}
			var first string
			for i := range tc.holds {
				token, err := hold("acme/ops")
				if err != nil {
					t.Fatalf("hold %d: %v", i+1, err)
				}
				if i == 0 {
					first = token
				}
			}
			if tc.use {
				if _, err := k.Take(ctx, first, "acme/ops", nil); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := hold("acme/ops"); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
			if tc.want == ErrShareFull {
				if _, err := hold("globex/ops"); err != nil {
					t.Errorf("another identity: got %v, want it held", err)
				}
			}
		})
	}
}

// TestShareCountsUnexpiredOnly: calls that expired leave their identity's share.
func TestShareCountsUnexpiredOnly(t *testing.T) {
	m := NewMemory()
	now := time.Now()
	m.now = func() time.Time { return now }
	ctx := context.Background()
	share := Share{Calls: 1}
	if err := m.PutHeld(ctx, "old", Held{Identity: "acme", Expires: now.Add(time.Minute), Record: []byte("{}")}, share); err != nil {
		t.Fatal(err)
	}
	if err := m.PutHeld(ctx, "new", Held{Identity: "acme", Expires: now.Add(time.Hour), Record: []byte("{}")}, share); !errors.Is(err, ErrShareFull) {
		t.Fatalf("got %v, want ErrShareFull", err)
	}
	now = now.Add(time.Minute)
	if err := m.PutHeld(ctx, "new", Held{Identity: "acme", Expires: now.Add(time.Hour), Record: []byte("{}")}, share); err != nil {
		t.Errorf("after the first call expired: got %v, want it held", err)
	}
}

// TestMemoryDecisionsBounded: Memory keeps the newest MaxDecisions decisions.
func TestMemoryDecisionsBounded(t *testing.T) {
	m := NewMemory()
	ctx := context.Background()
	at := time.Now()
	for i := range MaxDecisions + 5 {
		if err := m.RecordDecision(ctx, Decided{ID: fmt.Sprint(i), Outcome: Approved, At: at.Add(time.Duration(i) * time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := m.Decisions(ctx, MaxDecisions+10)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != MaxDecisions || ds[0].ID != fmt.Sprint(MaxDecisions+4) || ds[len(ds)-1].ID != "5" {
		t.Errorf("got %d decisions, newest %q, oldest %q; want %d, from %d down to 5", len(ds), ds[0].ID, ds[len(ds)-1].ID, MaxDecisions, MaxDecisions+4)
	}
}

// TestListPages: List reads every page of the Store and answers the soonest to expire of what
// keep selects, at most limit.
func TestListPages(t *testing.T) {
	k := NewKeeper(NewMemory(), time.Hour)
	ctx := context.Background()
	start := time.Now()
	n := 3*DefaultPage + 7
	for i := range n {
		at := start.Add(time.Duration(n-i) * time.Second) // held later, expires sooner
		k.now = func() time.Time { return at }
		if _, _, err := k.Hold(ctx, Call{Identity: fmt.Sprint("acme/t", i%2), Tool: fmt.Sprint(i)}, Share{}); err != nil {
			t.Fatal(err)
		}
	}
	k.now = time.Now
	got, err := k.List(ctx, "", 3, func(c Call) bool { return c.Identity == "acme/t1" })
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, l := range got {
		tools = append(tools, l.Call.Tool)
	}
	// The last held of acme/t1 (odd i) expire soonest.
	if want := []string{fmt.Sprint(n - 2), fmt.Sprint(n - 4), fmt.Sprint(n - 6)}; fmt.Sprint(tools) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", tools, want)
	}
}

// TestClipQuery: a query past MaxQueryBytes is cut on a rune boundary and marked; a shorter one is
// kept whole.
func TestClipQuery(t *testing.T) {
	for _, tc := range []struct {
		name string
		q    string
	}{
		{"short", "wipe the staging database"},
		{"exactly the bound", strings.Repeat("a", MaxQueryBytes)},
		{"long", strings.Repeat("a", 5000)},
		{"long, multi-byte runes across the cut", strings.Repeat("é", 3000)},
		{"long, a four-byte rune at the cut", strings.Repeat("a", MaxQueryBytes-4) + strings.Repeat("😀", 10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ClipQuery(tc.q)
			switch {
			case len(tc.q) <= MaxQueryBytes && got != tc.q:
				t.Errorf("got %q, want it whole", got)
			case len(tc.q) > MaxQueryBytes && (len(got) > MaxQueryBytes || !strings.HasSuffix(got, "…") || !utf8.ValidString(got) ||
				!strings.HasPrefix(tc.q, strings.TrimSuffix(got, "…")) || len(got) < MaxQueryBytes-6):
				t.Errorf("got %d bytes %q…, want at most %d valid bytes, a prefix of the query, marked", len(got), got[:min(len(got), 20)], MaxQueryBytes)
			}
		})
	}
}
