package baseline

import (
	"cmp"
	"slices"
	"strings"
)

// Indicators of the council's keyword gate before the proposal (seed 003, "simple keyword
// matching"): a query uses tools when its lower-cased text contains any of them.
var (
	MathIndicators = []string{
		"calculate", "compute", "what is", "how much", "+", "-", "*", "/", "×", "÷", "plus", "minus",
		"times", "divided", "multiply", "add", "subtract", "sum", "difference", "product", "quotient",
	}
	SearchIndicators = []string{
		"current", "latest", "recent", "today", "yesterday", "this week", "this month", "this year",
		"2024", "2025", "news", "update", "price", "stock", "weather", "who is", "what happened",
		"when did", "where is", "search for", "look up", "find out", "google", "breaking", "announced",
		"released", "launched",
	}
)

// Gate is the council's keyword gate: whether the query contains a math or a search indicator,
// as a substring of its lower-cased text (so "address" contains "add" and "2024-05-01" contains
// "-" and "2024": the port keeps those behaviours, they are the gate's).
func Gate(query string) bool {
	q := strings.ToLower(query)
	for _, list := range [][]string{MathIndicators, SearchIndicators} {
		for _, ind := range list {
			if strings.Contains(q, ind) {
				return true
			}
		}
	}
	return false
}

// Council routes like the council did: when Gate passes, the tool is the one whose name and
// description share the most words with the query (Words; ties go to the earlier tool, and with no
// shared word at all the first tool is still used: the gate has decided).
type Council struct {
	names []string
	words []map[string]bool
}

// NewCouncil indexes tools: the words of each name and description.
func NewCouncil(tools []Tool) *Council {
	c := &Council{}
	for _, t := range tools {
		c.names = append(c.names, t.Name)
		c.words = append(c.words, set(Words(t.Name+" "+t.Description)))
	}
	return c
}

// Route returns the chosen tool with its number of shared words as Score; ok is false when the
// gate does not pass or there is no tool.
func (c *Council) Route(query string) (m Match, ok bool) {
	if !Gate(query) || len(c.names) == 0 {
		return Match{}, false
	}
	q := set(Words(query))
	best := -1
	for i, words := range c.words {
		shared := 0
		for w := range q {
			if words[w] {
				shared++
			}
		}
		if shared > best {
			best, m = shared, Match{Tool: c.names[i], Score: float64(shared)}
		}
	}
	return m, true
}

// Ranked is what the gate passes on: every tool, ordered as Route would prefer them (most shared
// words first, ties to the earlier tool), each with its number of shared words as Score; ok is
// false, and the list empty, when the gate does not pass.
func (c *Council) Ranked(query string) (ranked []Match, ok bool) {
	if !Gate(query) {
		return nil, false
	}
	q := set(Words(query))
	ranked = make([]Match, len(c.names))
	for i, words := range c.words {
		shared := 0
		for w := range q {
			if words[w] {
				shared++
			}
		}
		ranked[i] = Match{Tool: c.names[i], Score: float64(shared)}
	}
	slices.SortStableFunc(ranked, func(a, b Match) int { return cmp.Compare(b.Score, a.Score) })
	return ranked, true
}
