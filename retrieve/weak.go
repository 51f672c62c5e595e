package retrieve

// coverage is how many of a query's words some tool's text holds (its name, description,
// parameters or example queries), of how many distinct words the query has: stop words dropped,
// each stem once, a run of a script written without spaces as its pairs of characters.
type coverage struct{ known, words int }

// Known reports how many of query's words some tool's text holds, of how many it has (see
// coverage).
func (x *Index) Known(query string) (known, words int) {
	s := x.cur.Load()
	c := s.coverage(queryTerms(query, s.terms, s.match))
	return c.known, c.words
}

// coverage counts the query's own words among its terms (those with the word as written; the
// other terms are partial or related matches and evidence) and those the index holds.
func (s *snapshot) coverage(terms []queryTerm) coverage {
	var c coverage
	for _, t := range terms {
		if len(t.exact) == 0 {
			continue
		}
		c.words++
		if len(s.terms[t.key]) > 0 {
			c.known++
		}
	}
	return c
}

// weak reports whether a lexical ranking rests on little: fewer than half of the query's words
// are in any tool's text, as with a question in another language than the tools' or in words
// none of them uses. A query without words is not weak: there is nothing to search for.
func (c coverage) weak() bool { return c.words > 0 && 2*c.known < c.words }
