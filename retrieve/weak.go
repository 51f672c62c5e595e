package retrieve

import (
	"strings"
	"unicode"
)

// coverage is what a query shares with the index: how many of its words some tool's text holds
// (its name, description, parameters or example queries), of how many distinct words it has (stop
// words dropped, each stem once, a run of a script written without spaces as its pairs of
// characters); and how many of its words, as written, are English function words (stopWords), of
// how many words with a letter it has.
type coverage struct{ known, words, stop, written int }

// Known reports how many of query's words some tool's text holds, of how many it has (see
// coverage).
func (x *Index) Known(query string) (known, words int) {
	s := x.cur.Load()
	c := s.coverage(query, queryTerms(query, s.terms, s.match))
	return c.known, c.words
}

// coverage counts the query's own words among its terms (those with the word as written; the
// other terms are partial or related matches and evidence) and those the index holds, and the
// function words among the words of query.
func (s *snapshot) coverage(query string, terms []queryTerm) coverage {
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
	splitWords(query, func(w string) {
		if strings.IndexFunc(w, unicode.IsLetter) < 0 {
			return
		}
		c.written++
		if stopWords[strings.ToLower(w)] {
			c.stop++
		}
	})
	return c
}

// weak reports whether a lexical ranking rests on little because the query is in another language
// than the tools': fewer than half of its words are in any tool's text, and fewer than a quarter
// of its words are English function words ("the", "is", "to", …; an English question has many,
// whatever its topic, so a question in the tools' own words that no tool uses is not weak). A
// query without words is not weak: there is nothing to search for. Both fractions were chosen on
// the tune parts of the benchmark's questions (English, needing no tool, and in twelve other
// languages): see docs/benchmarks.md.
func (c coverage) weak() bool {
	return c.words > 0 && 2*c.known < c.words && 4*c.stop < c.written
}
