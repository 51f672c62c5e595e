package approval

import (
	"errors"
	"testing"
)

func TestWaiters(t *testing.T) {
	w := NewWaiters[Decision](2)
	a, endA, err := w.Add("a")
	if err != nil {
		t.Fatalf("Add a: %v", err)
	}
	_, endB, err := w.Add("b")
	if err != nil {
		t.Fatalf("Add b: %v", err)
	}
	if _, _, err := w.Add("c"); !errors.Is(err, ErrTooManyWaiting) {
		t.Fatalf("third Add with max 2: %v, want ErrTooManyWaiting", err)
	}
	if !w.Decide("a", Approved) {
		t.Fatal("Decide a: no route was waiting")
	}
	if got := <-a; got != Approved {
		t.Errorf("decision %q, want %q", got, Approved)
	}
	if w.Decide("a", Declined) {
		t.Error("a second decision found a route still waiting")
	}
	endA() // after the decision: a no-op
	endB() // the wait for b ends without a decision
	if w.Decide("b", Approved) {
		t.Error("a decision reached a route that stopped waiting")
	}
	if n := w.Len(); n != 0 {
		t.Errorf("%d routes wait, want 0", n)
	}
	if _, end, err := w.Add("c"); err != nil {
		t.Errorf("Add after the others ended: %v", err)
	} else {
		end()
	}
}
