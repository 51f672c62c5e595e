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
	if _, ok := endA(); ok { // after the decision was received: nothing left
		t.Error("stop after the decision was received returned one")
	}
	if _, ok := endB(); ok { // the wait for b ends without a decision
		t.Error("stop without a decision returned one")
	}
	if w.Decide("b", Approved) {
		t.Error("a decision reached a route that stopped waiting")
	}
	if n := w.Len(); n != 0 {
		t.Errorf("%d routes wait, want 0", n)
	}
	// A decision handed over as the wait ends (the route's timer fired) is returned by stop.
	_, stopC, err := w.Add("c")
	if err != nil {
		t.Fatalf("Add after the others ended: %v", err)
	}
	if !w.Decide("c", Declined) {
		t.Fatal("Decide c: no route was waiting")
	}
	if d, ok := stopC(); !ok || d != Declined {
		t.Errorf("stop with a decision not yet received: got %q, %v; want %q", d, ok, Declined)
	}
}
