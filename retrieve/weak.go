package retrieve

// Known reports how many of query's words some tool's text holds (its name, description,
// parameters or example queries), of how many distinct words the query has: stop words dropped,
// each stem once, a run of a script written without spaces as its pairs of characters.
func (x *Index) Known(query string) (known, words int) {
	s := x.cur.Load()
	return s.known(query)
}

func (s *snapshot) known(query string) (known, total int) {
	seen := map[string]bool{}
	words(query, s.match, func(_, stem string) {
		if seen[stem] {
			return
		}
		seen[stem] = true
		total++
		if len(s.terms[stem]) > 0 {
			known++
		}
	})
	return known, total
}

// weak reports whether a lexical ranking rests on little: fewer than half of the query's words
// are in any tool's text, as with a question in another language than the tools' or in words
// none of them uses. A query without words is not weak: there is nothing to search for.
func weak(known, total int) bool { return total > 0 && 2*known < total }
