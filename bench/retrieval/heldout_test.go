package retrieval

import (
	"fmt"
	"testing"
)

// TestPartOf checks the held-out split: fixed (no seed), the same for a query however it is
// spaced or cased, different between pools, and about half and half.
func TestPartOf(t *testing.T) {
	if PartOf("MetaTool", "Find me a  Flight") != PartOf("MetaTool", "find me a flight") {
		t.Error("a query's part depends on its case or spacing, want repeated queries in one part")
	}
	tune, differ := 0, 0
	const n = 2000
	for i := range n {
		q := fmt.Sprintf("query number %d", i)
		if PartOf("MetaTool", q) == PartTune {
			tune++
		}
		if PartOf("MetaTool", q) != PartOf("BFCL pool", q) {
			differ++
		}
	}
	if tune < n*45/100 || tune > n*55/100 {
		t.Errorf("got %d of %d queries in the tune part, want about half", tune, n)
	}
	if differ == 0 {
		t.Error("every query has the same part in both pools, want the split drawn per pool")
	}
}

func TestSlices(t *testing.T) {
	tests := []struct {
		text string
		in   []string
	}{
		{"what time is it", []string{SliceAll, SliceShort, SliceLatin}},
		{"Können Sie mir bitte sagen, wie spät es gerade in der Stadt Berlin in Deutschland ist?", []string{SliceAll, SliceLong, SliceLatin}},
		{"明天北京的天气怎么样", []string{SliceAll, SliceShort, SliceOther}},
		{"покажи погоду в Москве", []string{SliceAll, SliceShort, SliceOther}},
	}
	for _, tc := range tests {
		for _, s := range sliceNames {
			want := false
			for _, w := range tc.in {
				want = want || w == s
			}
			if got := sliceOf(s, tc.text); got != want {
				t.Errorf("%q in %s: got %v, want %v", tc.text, s, got, want)
			}
		}
	}
}
