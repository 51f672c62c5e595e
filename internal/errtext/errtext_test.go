package errtext

import (
	"errors"
	"testing"
)

func TestOneLine(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"one line", "model failed: out of memory", "model failed: out of memory"},
		{"errors.Join", errors.Join(errors.New("a"), errors.New("b")).Error(), "a; b"},
		{"CRLF and CR", "a\r\nb\rc", "a; b; c"},
		{"trailing newline", "a\n", "a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := OneLine(tc.in); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
