package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"
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
		if err := m.PutHeld(ctx, fmt.Sprint(i), expires, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.PutHeld(ctx, "new", now.Add(time.Hour), []byte("{}")); err != nil {
		t.Fatalf("one expired call should make room: %v", err)
	}
	if _, _, found, _ := m.Held(ctx, "0"); found {
		t.Error("the expired call was kept")
	}
	if err := m.PutHeld(ctx, "more", now.Add(time.Hour), []byte("{}")); !errors.Is(err, ErrFull) {
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
	token, _, err := k.Hold(ctx, Call{Identity: "acme", Server: "db", Tool: "get", Arguments: map[string]any{"id": json.Number("9007199254740993")}})
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
