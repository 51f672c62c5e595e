package baseline

// Overlap scores tools by the number of distinct terms (Terms) a query shares with the tool's name,
// description and parameter names.
type Overlap struct {
	names []string
	docs  []map[string]bool
}

// NewOverlap indexes tools.
func NewOverlap(tools []Tool) *Overlap {
	o := &Overlap{}
	for _, t := range tools {
		o.names = append(o.names, t.Name)
		o.docs = append(o.docs, set(Terms(toolText(t, false))))
	}
	return o
}

// Best returns the tool sharing the most terms with the query (the earlier tool on ties); Score is
// that count, and Tool is "" when it is 0.
func (o *Overlap) Best(query string) Match {
	q := set(Terms(query))
	var m Match
	for i, doc := range o.docs {
		shared := 0
		for w := range q {
			if doc[w] {
				shared++
			}
		}
		if float64(shared) > m.Score {
			m = Match{Tool: o.names[i], Score: float64(shared)}
		}
	}
	return m
}
