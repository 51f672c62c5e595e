package retrieve_test

import (
	"slices"
	"testing"

	"toolrouter/retrieve"
)

func TestShortlist(t *testing.T) {
	hits := []retrieve.Hit{{"a.x", 3}, {"b.y", 2}, {"c.z", 1}, {"d.w", 0}}
	costs := map[string]int{"a.x": 100, "b.y": 50, "c.z": 400, "d.w": 10}
	cost := func(q string) int { return costs[q] }
	tests := []struct {
		name     string
		budget   int
		want     []string
		wantLeft int
	}{
		{"everything fits", 560, []string{"a.x", "b.y", "c.z", "d.w"}, 0},
		{"budget exactly used", 550, []string{"a.x", "b.y", "c.z"}, 1},
		{"stops at the first that does not fit", 500, []string{"a.x", "b.y"}, 2},
		{"first shown even over budget", 10, []string{"a.x"}, 3},
		{"zero budget", 0, []string{"a.x"}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			shown, left := retrieve.Shortlist(hits, cost, tc.budget)
			if !slices.Equal(names(shown), tc.want) || left != tc.wantLeft {
				t.Errorf("got %q and %d left, want %q and %d left", names(shown), left, tc.want, tc.wantLeft)
			}
		})
	}
	if shown, left := retrieve.Shortlist(nil, cost, 100); len(shown) != 0 || left != 0 {
		t.Errorf("no hits: got %v and %d left, want none and 0", shown, left)
	}
}
