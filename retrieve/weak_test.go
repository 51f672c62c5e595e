package retrieve_test

import (
	"testing"

	"toolrouter/retrieve"
)

// TestWeakRanking: a lexical ranking is weak when fewer than half of the query's words are in any
// tool's text and fewer than a tenth are English function words; a ranking fused with embedding
// similarity never is.
func TestWeakRanking(t *testing.T) {
	idx := retrieve.NewIndex()
	lexical, err := retrieve.NewRetriever(idx, nil, retrieve.DenseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lexical.Sync(t.Context(), 1, smallDocs()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		query        string
		known, words int
		weak         bool
	}{
		{"What is the weather forecast for the city?", 3, 3, false}, // weather, forecast, city
		{"Read the file notes.txt", 2, 4, false},                    // read, file of read, file, notes, txt: half
		{"明天北京的天气怎么样", 0, 9, true},                                  // pairs of characters none of the tools has
		{"¿Qué tiempo hará mañana en Madrid?", 0, 6, true},
		{"Multiply deux nombres, s'il te plaît", 1, 6, true},
		{"weather por favor", 1, 3, true},
		{"weather forecast por favor", 2, 4, false}, // half is not fewer than half
		{"the of and", 0, 0, false},                 // no word: nothing to search for
		// English in words no tool uses: many function words, so not another language.
		{"I am so tired of this, can you cheer me up a bit?", 0, 4, false},
		{"multiply 17 23 41", 1, 1, false}, // figures are not words another language has
		// Words English shares with other languages ("a", "do", "no", "me", "in") do not make them English.
		{"Qual é a previsão do tempo no Rio?", 0, 5, true},
		{"No me gusta la lluvia en Madrid", 0, 5, true},
		{"Peux-tu me dire s'il pleut?", 0, 5, true},
		{"Was kostet ein Ticket an der Kasse?", 0, 5, true},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			known, words := idx.Known(tc.query)
			if known != tc.known || words != tc.words {
				t.Errorf("Known: %d of %d words, want %d of %d", known, words, tc.known, tc.words)
			}
			if res := lexical.Search(t.Context(), tc.query, 3, nil); res.Weak != tc.weak {
				t.Errorf("Weak %v, want %v", res.Weak, tc.weak)
			}
		})
	}

	srv := newEmbedServer(t, "embedder")
	dense := newRetriever(t, srv, "embedder", "")
	if _, err := dense.Sync(t.Context(), 1, smallDocs()); err != nil {
		t.Fatal(err)
	}
	if res := dense.Search(t.Context(), "明天北京的天气怎么样", 3, nil); res.Fallback != "" || res.Weak {
		t.Errorf("fused ranking: weak %v (fallback %q), want not weak", res.Weak, res.Fallback)
	}
	srv.status.Store(500)
	if res := dense.Search(t.Context(), "明天北京的天气怎么样", 3, nil); res.Fallback == "" || !res.Weak {
		t.Errorf("lexical fallback: weak %v (fallback %q), want weak", res.Weak, res.Fallback)
	}
}
