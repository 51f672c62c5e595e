package harness

import (
	"fmt"
	"hash/fnv"
	"slices"

	"toolrouter/bench/dataset"
	"toolrouter/bench/metrics"
	"toolrouter/bench/report"
)

// Thresholds are chosen by two-fold cross-fitting within each dataset: every case falls in fold 0
// or 1 by a hash of the seed, its dataset and its id; the threshold that decides a fold's cases is
// the one that maximises routing accuracy on the other fold's cases of the same dataset. So every
// case is scored, no case's own label ever sets the threshold applied to it, and a dataset's
// figures depend on its own cases only: adding rows to one dataset (say MetaTool's selection CSV)
// never moves another's thresholds.

// fold assigns a case to fold 0 or 1.
func fold(seed uint64, ds, id string) int {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%s", seed, ds, id)
	return int(h.Sum64() % 2)
}

// tuneCase is one case's label and a thresholded router's raw answer.
type tuneCase struct {
	c    *dataset.Case
	p    *prediction
	fold int
}

// rightAt reports whether using the best tool when score > t routes the case right.
func rightAt(tc tuneCase, t float64) bool {
	used := tc.p.best != "" && tc.p.score > t
	switch {
	case !tc.c.NeedsTool:
		return !used
	case !used:
		return false
	case len(tc.c.Answers) == 0:
		return true
	}
	for _, a := range tc.c.Answers {
		if tools := a.Tools(); len(tools) == 1 && tools[0] == tc.p.best {
			return true
		}
	}
	return false
}

// chooseThreshold returns the threshold with the most cases routed right: the candidates are 0
// and every score seen (using a tool needs a score above the threshold); ties go to the lowest.
// With no case it is 0: any match uses a tool.
func chooseThreshold(cases []tuneCase) float64 {
	cands := []float64{0}
	for _, tc := range cases {
		cands = append(cands, tc.p.score)
	}
	slices.Sort(cands)
	cands = slices.Compact(cands)
	best, bestRight := 0.0, -1
	for _, t := range cands {
		right := 0
		for _, tc := range cases {
			if rightAt(tc, t) {
				right++
			}
		}
		if right > bestRight {
			best, bestRight = t, right
		}
	}
	return best
}

// tune chooses the thresholds of the thresholded routers per dataset and fold and applies them to
// their predictions (setting used and calls). all is indexed dataset → active router → case.
func tune(seed uint64, datasets []*dataset.Dataset, active []string, all [][][]prediction) []report.Threshold {
	var out []report.Threshold
	for j, name := range active {
		if !thresholded(name) {
			continue
		}
		for i, ds := range datasets {
			var folds [2][]tuneCase
			for k := range ds.Cases {
				tc := tuneCase{c: &ds.Cases[k], p: &all[i][j][k], fold: fold(seed, ds.Name, ds.Cases[k].ID)}
				folds[tc.fold] = append(folds[tc.fold], tc)
			}
			for f := range 2 {
				t := chooseThreshold(folds[1-f])
				for _, tc := range folds[f] {
					tc.p.used = tc.p.best != "" && tc.p.score > t
					tc.p.calls = nil
					if tc.p.used {
						tc.p.calls = []metrics.Call{{Name: tc.p.best}}
					}
				}
				out = append(out, report.Threshold{Dataset: ds.Name, Router: name, Fold: f, Value: t, TunedOn: len(folds[1-f]), AppliedTo: len(folds[f])})
			}
		}
	}
	return out
}
