package retrieval

import (
	"runtime"
	"testing"
)

// touched is n bytes written to, so that they are resident.
func touched(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 1
	}
	return b
}

func TestRetained(t *testing.T) {
	const size = 8 << 20
	tests := []struct {
		name string
		// build makes the measured value; stay is what must stay alive until the measurement ends.
		build   func() (build func() any, stay func())
		wantErr bool
	}{
		{
			name: "holds what it allocates",
			build: func() (func() any, func()) {
				return func() any { return touched(size) }, func() {}
			},
		},
		{
			// What a started inventory does: garbage alive before the build is freed by its end.
			name: "other memory freed meanwhile",
			build: func() (func() any, func()) {
				before := touched(4 * size)
				return func() any { before = nil; return touched(size) }, func() { runtime.KeepAlive(before) }
			},
			wantErr: true,
		},
		{
			name: "other memory allocated meanwhile",
			build: func() (func() any, func()) {
				var other []byte
				return func() any { other = touched(size); return touched(size) }, func() { runtime.KeepAlive(other) }
			},
			wantErr: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			build, stay := tc.build()
			fp := retained(build)
			stay()
			if tc.wantErr {
				if fp.Heap.Err == nil || fp.Heap.MB() != nil {
					t.Errorf("got heap %.2f MB, no reason; want it left out with the reason", fp.Heap.Bytes/(1<<20))
				}
				return
			}
			if fp.Heap.Err != nil {
				t.Fatalf("got heap left out: %v; want %d MB", fp.Heap.Err, size>>20)
			}
			if got := fp.Heap.Bytes; got < size || got > size+heapSlack {
				t.Errorf("got heap %.0f bytes, want %d (within %d)", got, size, heapSlack)
			}
			if residentBytes() == 0 {
				return // no /proc: the resident set is not measured
			}
			if fp.RSS.Err != nil {
				t.Fatalf("got resident set left out: %v; want about %d MB", fp.RSS.Err, size>>20)
			}
			if got := fp.RSS.Bytes; got < size/2 || got > 2*size {
				t.Errorf("got resident set %.0f bytes, want about %d", got, size)
			}
		})
	}
}
