package baseline

import (
	"math"
	"slices"
)

// BM25 parameters (Robertson et al.; the usual defaults).
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// BM25 ranks tools with Okapi BM25 over tool documents: the name split into terms, the
// description, and each parameter's name and description.
type BM25 struct {
	names []string
	tf    []map[string]int
	lens  []float64
	avgdl float64
	idf   map[string]float64
}

// NewBM25 indexes tools. IDF is Lucene's non-negative form, ln(1 + (N − n + 0.5)/(n + 0.5)).
func NewBM25(tools []Tool) *BM25 {
	x := &BM25{idf: map[string]float64{}}
	df := map[string]int{}
	var total float64
	for _, t := range tools {
		terms := Terms(toolText(t, true))
		tf := map[string]int{}
		for _, w := range terms {
			tf[w]++
		}
		for w := range tf {
			df[w]++
		}
		x.names = append(x.names, t.Name)
		x.tf = append(x.tf, tf)
		x.lens = append(x.lens, float64(len(terms)))
		total += float64(len(terms))
	}
	n := float64(len(tools))
	if n > 0 {
		x.avgdl = total / n
	}
	for w, d := range df {
		x.idf[w] = math.Log(1 + (n-float64(d)+0.5)/(float64(d)+0.5))
	}
	return x
}

// Best returns the highest-scoring tool (the earlier tool on ties) for the query's distinct terms;
// Tool is "" when no term matches.
func (x *BM25) Best(query string) Match {
	// Sorted distinct terms: a fixed order of float additions, so ties break the same way every run.
	q := slices.Compact(slices.Sorted(slices.Values(Terms(query))))
	var m Match
	for i, tf := range x.tf {
		s := 0.0
		for _, w := range q {
			f := float64(tf[w])
			if f == 0 {
				continue
			}
			norm := 1 - bm25B
			if x.avgdl > 0 {
				norm += bm25B * x.lens[i] / x.avgdl
			}
			s += x.idf[w] * f * (bm25K1 + 1) / (f + bm25K1*norm)
		}
		if s > m.Score {
			m = Match{Tool: x.names[i], Score: s}
		}
	}
	return m
}
