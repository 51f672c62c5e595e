// Package metrics scores routing outcomes against labels: the tool-use decision (precision, recall,
// F1 of "needs a tool"), ratios such as selection and end-to-end accuracy, BFCL's argument checker
// and latency percentiles. It knows nothing about datasets, routers or reports; every function is
// pure and covered by hand-computed fixtures.
package metrics

import (
	"math"
	"slices"
	"time"
)

// Confusion counts "needs a tool" decisions; the positive class is "uses a tool". A degraded
// answer (the model failed and the router fell back) is no decision: it is counted apart, as DT on
// a case that needed a tool and DN on one that needed none, and is never right. On a tool case it
// is a miss (recall and F1 count it like FN); on a no-tool case it is not a true negative.
type Confusion struct {
	TP int `json:"tp"`            // needed a tool, used one
	FP int `json:"fp"`            // needed none, used one
	FN int `json:"fn"`            // needed a tool, used none
	TN int `json:"tn"`            // needed none, used none
	DT int `json:"degraded_tool"` // needed a tool, the answer degraded
	DN int `json:"degraded_none"` // needed none, the answer degraded
}

// Add counts one decision.
func (c *Confusion) Add(needed, used bool) {
	switch {
	case needed && used:
		c.TP++
	case !needed && used:
		c.FP++
	case needed && !used:
		c.FN++
	default:
		c.TN++
	}
}

// AddDegraded counts one degraded answer.
func (c *Confusion) AddDegraded(needed bool) {
	if needed {
		c.DT++
	} else {
		c.DN++
	}
}

// Total is the number of answers counted, degraded ones included.
func (c Confusion) Total() int { return c.TP + c.FP + c.FN + c.TN + c.DT + c.DN }

// Degraded is the number of degraded answers.
func (c Confusion) Degraded() int { return c.DT + c.DN }

// Precision is TP / (TP + FP); ok is false when no tool was used at all.
func (c Confusion) Precision() (v float64, ok bool) { return ratio(c.TP, c.TP+c.FP) }

// Recall is TP / (TP + FN + DT); ok is false when no case needed a tool.
func (c Confusion) Recall() (v float64, ok bool) { return ratio(c.TP, c.TP+c.FN+c.DT) }

// F1 is the harmonic mean of precision and recall, 2TP / (2TP + FP + FN + DT); ok is false when
// there is no positive case and no positive decision.
func (c Confusion) F1() (v float64, ok bool) { return ratio(2*c.TP, 2*c.TP+c.FP+c.FN+c.DT) }

// Ratio is a count of correct cases out of the cases it applies to.
type Ratio struct {
	Correct int `json:"correct"`
	Total   int `json:"total"`
}

// Add counts one case.
func (r *Ratio) Add(correct bool) {
	r.Total++
	if correct {
		r.Correct++
	}
}

// Value is Correct / Total; ok is false when Total is 0.
func (r Ratio) Value() (v float64, ok bool) { return ratio(r.Correct, r.Total) }

func ratio(num, den int) (float64, bool) {
	if den == 0 {
		return 0, false
	}
	return float64(num) / float64(den), true
}

// Latency summarises per-query wall times.
type Latency struct {
	P50, P95, P99, Mean, Max time.Duration
}

// Latencies returns the nearest-rank percentiles, the mean and the maximum of ds (any order; ds is
// not modified). All are zero for no samples.
func Latencies(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Latency{
		P50: Percentile(s, 50), P95: Percentile(s, 95), P99: Percentile(s, 99),
		Mean: sum / time.Duration(len(s)), Max: s[len(s)-1],
	}
}

// Percentile returns the nearest-rank p-th percentile (0 < p ≤ 100) of sorted: the smallest value
// such that at least p% of the samples are less than or equal to it. It is 0 for no samples.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}
