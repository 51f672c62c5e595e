package mcpserver

import (
	"testing"
	"time"
)

// TestParkedStateServesOnlyItsOwnRetry: a request state is taken by the retry of the identity and
// call that parked it, once; a retry of another identity, or of another call, finds nothing and
// does not use it up.
func TestParkedStateServesOnlyItsOwnRetry(t *testing.T) {
	now := time.Now()
	var k parking
	state, ok := k.put(&parked{identity: "acme", bind: "call-1", expires: now.Add(time.Minute)}, now)
	if !ok {
		t.Fatal("could not park")
	}
	for _, tc := range []struct {
		name, identity, bind string
		want                 bool
	}{
		{"another identity", "beta", "call-1", false},
		{"another call", "acme", "call-2", false},
		{"its own", "acme", "call-1", true},
		{"its own, again", "acme", "call-1", false},
	} {
		if _, got := k.take(state, tc.identity, tc.bind, now); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
