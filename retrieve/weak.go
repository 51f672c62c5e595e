package retrieve

import (
	"strings"
	"unicode"
)

// coverage is what a query shares with the index: how many of its words some tool's text holds
// (its name, description, parameters or example queries), of how many distinct words it has (stop
// words dropped, each stem once, a run of a script written without spaces as its pairs of
// characters, words without a letter left out); and how many of its words, as written, are
// English function words (englishMarkers), of how many words with a letter it has.
type coverage struct{ known, words, stop, written int }

// englishMarkers are the stop words that mark English: those of stopWords that are not also common
// words of other languages written in the Latin script (a, no, me, do, as, in, on, so, was, will,
// also, …: Spanish, Portuguese, French, German, Italian) nor fragments of elisions (d', l', s').
var englishMarkers = map[string]bool{}

func init() {
	notMarkers := map[string]bool{}
	for _, w := range strings.Fields(`a an am as do no me in on i so also will was he has her or but all
		s t d m ll re ve`) {
		notMarkers[w] = true
	}
	for w := range stopWords {
		if !notMarkers[w] {
			englishMarkers[w] = true
		}
	}
}

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
		// Only the query's own words with a letter: a number is rarely in a tool's text, and a
		// question of figures ("sum 17 23 41") is not in another language.
		if len(t.exact) == 0 || strings.IndexFunc(t.exact[0], unicode.IsLetter) < 0 {
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
		if englishMarkers[strings.ToLower(w)] {
			c.stop++
		}
	})
	return c
}

// weak reports whether a lexical ranking rests on little because the query is in another language
// than the tools': fewer than half of its words are in any tool's text, and fewer than a tenth of
// its words are English function words ("the", "is", "to", …; an English question has many,
// whatever its topic, so a question in the tools' own words that no tool uses is seldom weak). A
// query without words is not weak: there is nothing to search for. Both fractions were chosen on
// the tune parts of the benchmark's questions (English, needing no tool, and in twelve other
// languages): see docs/benchmarks.md.
func (c coverage) weak() bool {
	return c.words > 0 && 2*c.known < c.words && 10*c.stop < c.written
}
