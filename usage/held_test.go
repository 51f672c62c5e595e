package usage

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"toolrouter/approval"
)

// TestHeldCalls: a call held through one replica is honoured by another on the same database
// (SQLite file or PostgreSQL), once: for its identity only, not used up by a refusing check,
// refused when replayed, and of two replicas taking one token at once exactly one gets it. An
// expired token is refused as expired.
var errChanged = errors.New("the tool changed")

func TestHeldCalls(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			open := b.open(t)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			a, c := open(), open()
			defer a.Close()
			defer c.Close()
			ka, kc := approval.NewKeeper(a, time.Hour), approval.NewKeeper(c, time.Hour)
			held := approval.Call{Identity: "acme/ops", Server: "fs", Tool: "delete", Arguments: map[string]any{"path": "/tmp/x"}, Pin: "p1", Reason: "destructive"}
			token, expires, err := ka.Hold(ctx, held)
			if err != nil {
				t.Fatal(err)
			}
			if until := time.Until(expires); until < 59*time.Minute || until > time.Hour {
				t.Errorf("expires in %s, want an hour", until)
			}
			if _, err := kc.Take(ctx, token, "acme/other", nil); !errors.Is(err, approval.ErrOtherIdentity) {
				t.Errorf("another identity: got %v, want ErrOtherIdentity", err)
			}
			if _, err := kc.Take(ctx, token, "acme/ops", func(approval.Call) error { return errChanged }); !errors.Is(err, errChanged) {
				t.Errorf("a refusing check: got %v", err)
			}
			got, err := kc.Take(ctx, token, "acme/ops", nil)
			if err != nil {
				t.Fatalf("the other replica: %v", err)
			}
			if got.Tool != "delete" || got.Arguments["path"] != "/tmp/x" || got.Pin != "p1" {
				t.Errorf("got %+v, want the held call", got)
			}
			if _, err := ka.Take(ctx, token, "acme/ops", nil); !errors.Is(err, approval.ErrUsed) {
				t.Errorf("replay: got %v, want ErrUsed", err)
			}
			if _, err := ka.Take(ctx, "tra_never-issued", "acme/ops", nil); !errors.Is(err, approval.ErrUnknownToken) {
				t.Errorf("unknown token: got %v, want ErrUnknownToken", err)
			}

			race, _, err := ka.Hold(ctx, held)
			if err != nil {
				t.Fatal(err)
			}
			var (
				wg   sync.WaitGroup
				errs [2]error
			)
			for i, k := range []*approval.Keeper{ka, kc} {
				wg.Go(func() { _, errs[i] = k.Take(ctx, race, "acme/ops", nil) })
			}
			wg.Wait()
			if won := (errs[0] == nil) != (errs[1] == nil); !won || !(errors.Is(errs[0], approval.ErrUsed) || errors.Is(errs[1], approval.ErrUsed)) {
				t.Errorf("two replicas taking one token: got %v and %v, want exactly one success and ErrUsed", errs[0], errs[1])
			}

			short := approval.NewKeeper(a, time.Nanosecond)
			old, _, err := short.Hold(ctx, held)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := kc.Take(ctx, old, "acme/ops", nil); !errors.Is(err, approval.ErrExpired) {
				t.Errorf("expired: got %v, want ErrExpired", err)
			}
		})
	}
}
