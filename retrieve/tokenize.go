package retrieve

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Terms turns text into index terms: words split at every rune that is not a letter or digit and
// inside identifiers (snake_case, kebab-case, dotted.names, camelCase, PDFFile, v2), lower-cased,
// stop words dropped, and each word stemmed by Stem. Queries and documents go through the same
// function, so "Searching files" matches "search_file".
func Terms(s string) []string {
	var out []string
	splitWords(s, func(w string) {
		w = strings.ToLower(w)
		if stopWords[w] {
			return
		}
		out = append(out, Stem(w))
	})
	return out
}

// Words splits s into its words without lower-casing, stop-word removal or stemming: at every
// rune that is not a letter or digit, at lower→upper case changes, before the last capital of a
// run of capitals followed by a lower-case letter ("PDFFile" → PDF File) and between letters and
// digits ("v2" → v 2).
func Words(s string) []string {
	var out []string
	splitWords(s, func(w string) { out = append(out, w) })
	return out
}

// splitWords calls fn with each word of s (see Words); the words are substrings of s.
func splitWords(s string, fn func(string)) {
	start := -1
	var prev rune
	for i, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			if start >= 0 {
				fn(s[start:i])
			}
			start = -1
			continue
		}
		if start < 0 {
			start, prev = i, r
			continue
		}
		split := unicode.IsLower(prev) && unicode.IsUpper(r) ||
			unicode.IsDigit(prev) != unicode.IsDigit(r)
		if !split && unicode.IsUpper(prev) && unicode.IsUpper(r) {
			// "PDFFile": split before the F of File, the last capital before a lower-case letter.
			next, _ := utf8.DecodeRuneInString(s[i+utf8.RuneLen(r):])
			split = unicode.IsLower(next)
		}
		if split {
			fn(s[start:i])
			start = i
		}
		prev = r
	}
	if start >= 0 {
		fn(s[start:])
	}
}

// stopWords are dropped from documents and queries: function words that say nothing about which
// tool fits. Tool verbs (get, find, list, search) stay; IDF weighs them down where they are common.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the and or but if then else of to in on at by for from with
		without into onto over about as is are was were be been being am do does did done has have had
		it its this that these those there here which who whom whose what when where why how
		i me my mine we us our you your yours he him his she her they them their
		can could would should will shall may might must please pls just also any some all
		not no so than too very s t d ll re ve m`) {
		stopWords[w] = true
	}
}

// Stem strips a few English suffixes from a lower-case word so inflections meet: plurals
// ("queries" → query, "boxes" → box, "files" → file), "-ing" and "-ed" (with a doubled final
// consonant undone: "running" → run), then a final silent e ("cache", "caches", "cached",
// "caching" → cach). It is deliberately small: a miss costs a little recall, a wrong merge costs
// precision, and both are visible in the tests.
func Stem(w string) string {
	if len(w) <= 3 || !isASCIILower(w) {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"), strings.HasSuffix(w, "xes"),
		strings.HasSuffix(w, "ches"), strings.HasSuffix(w, "shes"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") &&
		!strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:len(w)-1]
	case strings.HasSuffix(w, "ing") && len(w) >= 6:
		w = undouble(w[:len(w)-3])
	case strings.HasSuffix(w, "ed") && !strings.HasSuffix(w, "eed") && len(w) >= 5:
		w = undouble(w[:len(w)-2])
	}
	if len(w) >= 4 && w[len(w)-1] == 'e' && w[len(w)-2] != 'e' {
		w = w[:len(w)-1]
	}
	return w
}

// undouble drops one of two equal final consonants ("runn" → run), except ll, ss and zz, which
// English keeps ("install", "process").
func undouble(w string) string {
	n := len(w)
	if n >= 3 && w[n-1] == w[n-2] && !strings.ContainsRune("aeioulsz", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}

func isASCIILower(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}
