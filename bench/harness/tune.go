package harness

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"toolrouter/bench/dataset"
	"toolrouter/bench/metrics"
	"toolrouter/bench/report"
)

// Thresholds are tuned per source (a dataset's Family: BFCL's five categories together, MetaTool's
// selection and awareness together, the scenarios), by k-fold cross-fitting within the source:
// every case falls in one of Folds folds by a hash of the seed, its source, its dataset and its
// id, and the threshold that decides a fold's cases is the one that maximises routing accuracy on
// the source's other folds. So every case is scored, no case's own label ever sets the threshold
// applied to it, a single-label category (BFCL's irrelevance) is decided by a threshold learned on
// tool and no-tool queries alike, and a source's figures depend on its own cases only: adding rows
// to one source (say MetaTool's selection CSV) never moves another's thresholds.
//
// When a fold's training cases hold one tool-use label only (a run of BFCL's tool categories
// alone, say), the best threshold would just learn that label; no threshold is learned then, the
// fold keeps 0 (any match uses a tool) and the source's datasets carry a note saying so.

// Folds is the number of folds of the cross-fitting.
const Folds = 5

// tuningLine describes the tuning in one line of the report, naming the thresholded routers, the
// sources and their datasets.
func tuningLine(datasets []*dataset.Dataset, active []string) string {
	var sources []string
	members := map[string][]string{}
	for _, ds := range datasets {
		if _, ok := members[ds.Family]; !ok {
			sources = append(sources, ds.Family)
		}
		members[ds.Family] = append(members[ds.Family], ds.Name)
	}
	var parts []string
	for _, s := range sources {
		parts = append(parts, fmt.Sprintf("%s (%s)", s, strings.Join(members[s], " + ")))
	}
	return fmt.Sprintf("%s: \"no tool\" when the best score is at or below a threshold "+
		"tuned per source, the source's datasets pooled: %s; by %d-fold cross-fitting, each query is decided by "+
		"the threshold that maximises routing accuracy on the other %d folds of its source.",
		thresholdedNames(active), strings.Join(parts, "; "), Folds, Folds-1)
}

// thresholdedNames lists the thresholded routers among active ("keyword-overlap and bm25").
func thresholdedNames(active []string) string {
	var names []string
	for _, r := range active {
		if thresholded(r) {
			names = append(names, r)
		}
	}
	return strings.Join(names, " and ")
}

// fold assigns a case to one of Folds folds.
func fold(seed uint64, source, ds, id string) int {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%s/%s", seed, source, ds, id)
	return int(h.Sum64() % Folds)
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

// labels describes the tool-use labels of cases: "" when both occur, else what the cases hold.
func labels(cases []tuneCase) string {
	var tool, none bool
	for _, tc := range cases {
		tool = tool || tc.c.NeedsTool
		none = none || !tc.c.NeedsTool
	}
	switch {
	case tool && none:
		return ""
	case tool:
		return "only \"tool\" queries"
	case none:
		return "only \"no tool\" queries"
	}
	return "no query"
}

// tune chooses the thresholds of the thresholded routers per source and fold and applies them to
// their predictions (setting used and calls). all is indexed dataset → active router → case. It
// returns the thresholds and, by source, a note for sources with folds whose training cases hold
// one label only.
func tune(seed uint64, datasets []*dataset.Dataset, active []string, all [][][]prediction) ([]report.Threshold, map[string]string) {
	var sources []string
	bySource := map[string][]int{} // source → indexes of its datasets
	for i, ds := range datasets {
		if _, ok := bySource[ds.Family]; !ok {
			sources = append(sources, ds.Family)
		}
		bySource[ds.Family] = append(bySource[ds.Family], i)
	}
	var out []report.Threshold
	notes := map[string]string{}
	for j, name := range active {
		if !thresholded(name) {
			continue
		}
		for _, src := range sources {
			var folds [Folds][]tuneCase
			for _, i := range bySource[src] {
				ds := datasets[i]
				for k := range ds.Cases {
					tc := tuneCase{c: &ds.Cases[k], p: &all[i][j][k], fold: fold(seed, src, ds.Name, ds.Cases[k].ID)}
					folds[tc.fold] = append(folds[tc.fold], tc)
				}
			}
			var oneLabel []string
			for f := range Folds {
				var train []tuneCase
				for g := range Folds {
					if g != f {
						train = append(train, folds[g]...)
					}
				}
				th := report.Threshold{Source: src, Router: name, Fold: f, TunedOn: len(train), AppliedTo: len(folds[f])}
				if l := labels(train); l != "" {
					th.OneLabel = true
					if !slices.Contains(oneLabel, l) {
						oneLabel = append(oneLabel, l)
					}
				} else {
					th.Value = chooseThreshold(train)
				}
				for _, tc := range folds[f] {
					tc.p.used = tc.p.best != "" && tc.p.score > th.Value
					tc.p.calls = nil
					if tc.p.used {
						tc.p.calls = []metrics.Call{{Name: tc.p.best}}
					}
				}
				out = append(out, th)
			}
			if n := countOneLabel(out, src, name); n > 0 {
				notes[src] = fmt.Sprintf("the %s source's tuning cases hold %s in %d of %d folds, so no \"no tool\" threshold "+
					"is learned there: in those folds any match is a tool call for %s", src, strings.Join(oneLabel, " or "), n, Folds, thresholdedNames(active))
			}
		}
	}
	return out, notes
}

// countOneLabel counts a source's and router's folds that learned no threshold.
func countOneLabel(ths []report.Threshold, source, router string) int {
	n := 0
	for _, th := range ths {
		if th.Source == source && th.Router == router && th.OneLabel {
			n++
		}
	}
	return n
}
