package main

import (
	"strings"
	"testing"
	"time"
)

func TestParsePath(t *testing.T) {
	const out = `goos: linux
BenchmarkSidecarPath-2   	   20000	    291371 ns/op	        92.35 hop-p50-µs	         1.725 ratio	       121.4 route-allocs	       159.3 sidecar-p50-µs
BenchmarkSidecarPath-2   	   20000	    301371 ns/op	        95.00 hop-p50-µs	         1.800 ratio	       122.0 route-allocs	       171.0 sidecar-p50-µs
PASS
`
	got, err := parsePath(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []pathRun{{HopP50: 92.35, SidecarP50: 159.3, Ratio: 1.725, RouteAllocs: 121.4}, {HopP50: 95, SidecarP50: 171, Ratio: 1.8, RouteAllocs: 122}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	md := pathMarkdown("go run ./bench load -path", time.Date(2026, 11, 26, 13, 0, 0, 0, time.UTC), "20000x", got, 1.2, 1.5)
	for _, w := range []string{"| 1 | 92.3 | 159.3 | 1.73 | 121 |", "| median | 93.7 | 165.2 | 1.76 | 122 |", "20000 iterations", "1.2 at the start"} {
		if !strings.Contains(md, w) {
			t.Errorf("markdown lacks %q:\n%s", w, md)
		}
	}
	for _, bad := range []string{
		"BenchmarkSidecarPath-2 100 5 ns/op 1 hop-p50-µs 2 ratio", // figures missing
		"BenchmarkSidecarPath-2 100 x hop-p50-µs 1 ratio 1 route-allocs 1 sidecar-p50-µs",
	} {
		if _, err := parsePath(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
