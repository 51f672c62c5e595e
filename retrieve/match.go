package retrieve

import (
	"unicode"
	"unicode/utf8"
)

// Matching says which of the index's ways of matching a word beyond its plain stem are on. The
// zero value is how the sidecar runs (config: retrieval.match). Each is measured on the held-out
// parts of the benchmark's pools (go run ./bench retrieval, "Matching, one way changed at a
// time"), which is where its cost and worth are reported; a way that does not pay there is off
// unless asked for.
type Matching struct {
	// Loose turns on the looser stem of a tool name's words ("discovered" → get_discoverer). It
	// is off by default: on the report parts it found no query more among the 10, 20 or 50
	// best-ranked on either pool and lost some at 5 (MetaTool R@5 0.637 → 0.635, BFCL 0.936 →
	// 0.930).
	Loose bool
	// NoAbbrev turns off abbreviations in tool names ("calculate" → calc_binomial_prob).
	NoAbbrev bool
	// NoDate turns off the date a query asks for meeting the word "date".
	NoDate bool
	// NoDerivation turns off Stem's derivational suffixes ("calculation" → calcul); plurals,
	// -ing and -ed stay.
	NoDerivation bool
	// NoBigrams keeps a run of a script written without spaces as one word, instead of its
	// overlapping pairs of characters.
	NoBigrams bool
	// NoRelated turns off a query word's derivationally related nouns and verbs from WordNet
	// ("multiplication" → multiply), which count relatedWeight of the word's own stem.
	NoRelated bool
	// NoValues turns off a question's values as evidence for the tools whose parameters take
	// them (see values.go): a URL, an email address, a file name, a date or two, a time of day, a
	// year, a unit of measure, an amount of money, a number of results, coordinates, a
	// percentage.
	NoValues bool
}

// hasUnspaced reports whether w holds a letter of a script written without spaces between words.
func hasUnspaced(w string) bool {
	for _, r := range w {
		if r >= utf8.RuneSelf && unspaced(r) {
			return true
		}
	}
	return false
}

// unspaced reports whether r is a letter of a script written without spaces between words: Han,
// Hiragana, Katakana, Thai, Lao, Khmer, Myanmar.
func unspaced(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar)
}

// unspacedWords calls fn with the words of w, a lower-cased word holding letters of a script
// written without spaces: each run of such letters as its overlapping pairs of characters (a
// single one alone), and each run of other letters and digits as a word of its own.
func unspacedWords(w string, m Matching, fn func(word, stem string)) {
	rs := []rune(w)
	for i := 0; i < len(rs); {
		j := i
		isU := unspaced(rs[i])
		for j < len(rs) && unspaced(rs[j]) == isU {
			j++
		}
		run := rs[i:j]
		switch {
		case !isU:
			s := string(run)
			if !stopWords[s] {
				fn(s, stem(s, !m.NoDerivation))
			}
		case len(run) == 1:
			fn(string(run), string(run))
		default:
			for k := 0; k+1 < len(run); k++ {
				s := string(run[k : k+2])
				fn(s, s)
			}
		}
		i = j
	}
}
