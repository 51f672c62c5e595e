package schema

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func nested(depth int) string {
	return strings.Repeat(`{"type":"object","properties":{"a":`, depth) + `{"type":"string"}` + strings.Repeat(`}}`, depth)
}

func TestCheckBounds(t *testing.T) {
	tests := []struct {
		name   string
		raw    string
		bounds Bounds
		ok     bool
	}{
		{"within", `{"type":"object","properties":{"a":{"type":"string"}}}`, Bounds{MaxBytes: 100, MaxDepth: 3}, true},
		{"too large", `{"type":"object","description":"` + strings.Repeat("x", 100) + `"}`, Bounds{MaxBytes: 100, MaxDepth: 3}, false},
		{"too deep", `{"a":{"b":{"c":{}}}}`, Bounds{MaxDepth: 3}, false},
		{"arrays count", `{"anyOf":[{"x":[1]}]}`, Bounds{MaxDepth: 3}, false},
		{"brackets in strings do not count", `{"description":"{{{{[[[[\"{{{{"}`, Bounds{MaxDepth: 1}, true},
		{"escaped backslash ends the string", `{"d":"\\","e":{}}`, Bounds{MaxDepth: 1}, false},
		{"zero bounds allow anything", nested(500), Bounds{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckBounds([]byte(tc.raw), tc.bounds)
			if (err == nil) != tc.ok {
				t.Fatalf("got %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrBounds) {
				t.Errorf("got %v, want it to wrap ErrBounds", err)
			}
		})
	}
}

// TestCheckBoundsIsCheapWhereCompileIsNot: a depth-2000 schema, which the compiler takes minutes
// over, is refused at once.
func TestCheckBoundsIsCheapWhereCompileIsNot(t *testing.T) {
	raw := []byte(nested(2000))
	start := time.Now()
	err := CheckBounds(raw, Bounds{MaxBytes: 256 << 10, MaxDepth: 64})
	if !errors.Is(err, ErrBounds) {
		t.Fatalf("got %v, want ErrBounds", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("got %v to check, want well under a second", d)
	}
}
