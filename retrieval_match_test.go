package main

import (
	"testing"

	"toolrouter/config"
	"toolrouter/retrieve"
)

// TestRetrievalMatch checks that retrieval.match reaches the index: the defaults are the index's
// own (every way on but the loose stem), and each key changed changes its own way alone. A question naming an act by its
// noun then finds, or no longer finds, the tool named by the verb (related words are looked up by
// stems without their derivational suffixes, so they need derivations on), and a question holding
// a web address finds, or no longer finds, a tool whose parameter takes one.
func TestRetrievalMatch(t *testing.T) {
	on := config.Default().Retrieval.Match
	if got := matching(on); got != (retrieve.Matching{}) {
		t.Fatalf("defaults: got %+v, want the index's zero Matching", got)
	}
	tests := []struct {
		name string
		set  func(*config.Match)
		want retrieve.Matching
	}{
		{"loose", func(m *config.Match) { m.Loose = true }, retrieve.Matching{Loose: true}},
		{"abbreviations", func(m *config.Match) { m.Abbreviations = false }, retrieve.Matching{NoAbbrev: true}},
		{"dates", func(m *config.Match) { m.Dates = false }, retrieve.Matching{NoDate: true}},
		{"derivations", func(m *config.Match) { m.Derivations = false }, retrieve.Matching{NoDerivation: true}},
		{"bigrams", func(m *config.Match) { m.Bigrams = false }, retrieve.Matching{NoBigrams: true}},
		{"related", func(m *config.Match) { m.Related = false }, retrieve.Matching{NoRelated: true}},
		{"values", func(m *config.Match) { m.Values = false }, retrieve.Matching{NoValues: true}},
	}
	docs := []retrieve.Doc{
		{Server: "math", Name: "multiply", Description: "Returns a times b."},
		{Server: "web", Name: "get_page", Description: "Reads one page.", Params: []retrieve.Param{{Name: "target", Type: "string", Format: "uri"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := on
			tc.set(&m)
			if got := matching(m); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			idx := retrieve.NewIndexWith(matching(m))
			idx.Sync(1, docs)
			hits := idx.Search("the multiplication of 3 and 2", 1, nil)
			found := len(hits) == 1 && hits[0].Score > 0 && hits[0].Qualified == "math.multiply"
			// The related words are keyed by stems with their derivational suffixes stripped.
			if want := m.Related && m.Derivations; found != want {
				t.Errorf("related %v, derivations %v: the question found multiply %v, want %v", m.Related, m.Derivations, found, want)
			}
			// A web address meets a parameter of format "uri" through no word, only as a value.
			hits = idx.Search("what does https://example.org/pricing say", 1, nil)
			if found := len(hits) == 1 && hits[0].Score > 0; found != m.Values {
				t.Errorf("values %v: the question with a URL found get_page %v, want %v", m.Values, found, m.Values)
			}
		})
	}
}
