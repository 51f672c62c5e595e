package main

import (
	"strings"
	"testing"
	"time"
)

// TestMemoryMarkdown: the section says whether the target was met, and an interrupted run says
// how far it went instead of passing for a whole one.
func TestMemoryMarkdown(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    memoryResult
		want []string
	}{
		{"met", memoryResult{Routes: 1000, Done: 1000, IdleMB: 40, PeakMB: 120, HWMMB: 125}, []string{"| 40.0 | 120.0 | 80.0 | 85.0 |", "): met."}},
		{"over", memoryResult{Routes: 1000, Done: 1000, IdleMB: 40, PeakMB: 120, HWMMB: 200}, []string{"): not met."}},
		{"errors", memoryResult{Routes: 1000, Done: 1000, IdleMB: 40, PeakMB: 50, HWMMB: 50, Errors: 1, FirstError: "route: got 502"}, []string{"): not met.", "First error: route: got 502"}},
		{"interrupted", memoryResult{Routes: 1000, Done: 400, IdleMB: 40, PeakMB: 50, HWMMB: 50},
			[]string{"**Interrupted after 400 of the 1000 routes asked for**", "not shown (fewer than 1,000 routes ran)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := memoryMarkdown("go run ./bench memory", time.Date(2026, 11, 28, 20, 0, 0, 0, time.UTC), &tc.r, -1, -1)
			for _, w := range tc.want {
				if !strings.Contains(md, w) {
					t.Errorf("got\n%s\nwant it to contain %q", md, w)
				}
			}
		})
	}
}
