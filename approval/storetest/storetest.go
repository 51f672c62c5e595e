// Package storetest checks that an approval.Store lists held calls, gives them back by key and
// keeps decisions as Keeper needs: Memory and the usage database run the same checks.
package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"toolrouter/approval"
)

var errRefused = errors.New("refused by check")

// Listing holds calls for two identities through store (which must be empty), one of them
// expired and one used, and checks Keeper.List, Keeper.TakeKey and the decisions recorded.
func Listing(t *testing.T, store approval.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	k := approval.NewKeeper(store, time.Hour)
	hold := func(k *approval.Keeper, identity, tool string) string {
		t.Helper()
		token, _, err := k.Hold(ctx, approval.Call{Identity: identity, Query: "clean up", Server: "fs", Tool: tool,
			Arguments: map[string]any{"path": "/tmp/" + tool}, Pin: "p1", Reason: "destructive"}, approval.DefaultShare)
		if err != nil {
			t.Fatal(err)
		}
		return approval.Key(token)
	}
	ops1, ops2, dev := hold(k, "acme/ops", "delete"), hold(k, "acme/ops", "move"), hold(k, "acme/dev", "write")
	expired := hold(approval.NewKeeper(store, time.Nanosecond), "acme/ops", "old")
	used := hold(k, "acme/ops", "used")
	if won, err := k.Withdraw(ctx, used); err != nil || !won {
		t.Fatalf("withdrawing: %v, %v", won, err)
	}

	ids := func(ls []approval.Listed) map[string]string {
		m := map[string]string{}
		for _, l := range ls {
			m[l.ID] = l.Call.Tool
		}
		return m
	}
	all, err := k.List(ctx, "", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(all); len(got) != 3 || got[ops1] != "delete" || got[ops2] != "move" || got[dev] != "write" {
		t.Errorf("listing all: got %v, want the three unexpired, unused calls", got)
	}
	if len(all) > 0 && (all[0].Call.Query != "clean up" || all[0].Call.Arguments["path"] == nil) {
		t.Errorf("listed call %+v: want its query and arguments", all[0].Call)
	}
	ops, err := k.List(ctx, "acme/ops", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(ops); len(got) != 2 || got[ops1] == "" || got[ops2] == "" {
		t.Errorf("listing acme/ops: got %v, want its two calls", got)
	}
	kept, err := k.List(ctx, "", 1, func(c approval.Call) bool { return c.Identity == "acme/dev" })
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(kept); len(got) != 1 || got[dev] == "" {
		t.Errorf("listing what keep selects: got %v, want acme/dev's call", got)
	}

	refuse := func(approval.Call) error { return errRefused }
	for _, tc := range []struct {
		name         string
		key          string
		whose, check func(approval.Call) error
		want         error
	}{
		{"not a key", "tra_token", nil, nil, approval.ErrUnknownToken},
		{"a key never held", approval.Key("tra_never"), nil, nil, approval.ErrUnknownToken},
		{"expired", expired, nil, nil, approval.ErrExpired},
		{"used", used, nil, nil, approval.ErrUsed},
		{"expired, not the caller's to decide: told only that", expired, refuse, nil, errRefused},
		{"used, not the caller's to decide: told only that", used, refuse, nil, errRefused},
		{"refused by the check, left unused", ops1, nil, refuse, errRefused},
		{"not the caller's to decide, left unused", ops1, refuse, nil, errRefused},
		{"taken", ops1, func(c approval.Call) error {
			if c.Identity != "acme/ops" {
				return errRefused
			}
			return nil
		}, nil, nil},
		{"taken twice", ops1, nil, nil, approval.ErrUsed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := k.TakeKey(ctx, tc.key, tc.whose, tc.check)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if err == nil && (c.Tool != "delete" || c.Arguments["path"] != "/tmp/delete") {
				t.Errorf("got %+v, want the held call", c)
			}
		})
	}
	if after, err := k.List(ctx, "", 0, nil); err != nil || len(after) != 2 {
		t.Errorf("after taking one: got %d calls (%v), want 2", len(after), err)
	}

	at := time.Now().UTC().Truncate(time.Millisecond)
	for i, d := range []approval.Decided{
		{ID: ops1, Outcome: approval.Approved, By: "acme/admin alice", At: at.Add(-time.Second), Identity: "acme/ops", Server: "fs", Tool: "delete"},
		{ID: dev, Outcome: approval.Declined, By: "acme/dev", At: at, RequestID: "r1", Identity: "acme/dev", Server: "fs", Tool: "write"},
	} {
		if err := k.Record(ctx, d); err != nil {
			t.Fatalf("recording decision %d: %v", i, err)
		}
	}
	ds, err := k.Decisions(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]approval.Decision{}
	for _, d := range ds {
		outcomes[d.ID] = d.Outcome
	}
	if len(ds) != 3 || outcomes[ops1] != approval.Approved || outcomes[dev] != approval.Declined || outcomes[expired] != approval.Expired {
		t.Errorf("decisions: got %+v, want approved, declined and the expired call", ds)
	}
	if len(ds) == 3 && (ds[0].ID != dev || ds[0].By != "acme/dev" || ds[0].RequestID != "r1" || !ds[0].At.Equal(at)) {
		t.Errorf("newest decision: got %+v, want the decline, as recorded", ds[0])
	}
	if one, err := k.Decisions(ctx, 1); err != nil || len(one) != 1 {
		t.Errorf("decisions with limit 1: got %d (%v)", len(one), err)
	}
}
