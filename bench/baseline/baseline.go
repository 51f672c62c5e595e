// Package baseline holds the routers toolrouter is compared with, none of which uses a model: the
// council's keyword gate as it was before the proposal (council-keywords), generic word overlap
// (keyword-overlap) and BM25. Each is a pure function of a query and a list of tools; choosing a
// score threshold for "no tool" is the caller's business (the harness tunes it on a separate split).
package baseline

import (
	"strings"
	"unicode"
)

// Tool is what a keyword router sees of a tool: the inventory's qualified name, description and
// parameters.
type Tool struct {
	Name        string
	Description string
	Params      []Param
}

// Param is one parameter of a tool.
type Param struct {
	Name        string
	Description string
}

// Match is a router's best tool for a query. Score is 0 when nothing matched, and Tool is then
// "" for the scoring routers.
type Match struct {
	Tool  string
	Score float64
}

// Words splits s into lower-case runs of letters and digits: the council's notion of a word.
func Words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// Terms is the tokenizer of keyword-overlap and BM25: identifiers are split at "_", ".", "-" and
// camelCase boundaries ("getFileInfo" → get file info), everything is lower-cased, stop words
// are dropped and plurals reduced by the S-stemmer (Harman 1991).
func Terms(s string) []string {
	var out []string
	for _, w := range splitIdentifiers(s) {
		w = strings.ToLower(w)
		if stopWords[w] {
			continue
		}
		out = append(out, stem(w))
	}
	return out
}

// splitIdentifiers splits at every rune that is not a letter or digit, at lower→upper case
// changes, before the last capital of a run of capitals followed by a lower-case letter ("PDFFile"
// → PDF File) and between letters and digits.
func splitIdentifiers(s string) []string {
	var out []string
	rs := []rune(s)
	start := -1
	flush := func(end int) {
		if start >= 0 && end > start {
			out = append(out, string(rs[start:end]))
		}
		start = -1
	}
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			continue
		}
		if start < 0 {
			start = i
			continue
		}
		prev := rs[i-1]
		switch {
		case unicode.IsLower(prev) && unicode.IsUpper(r),
			unicode.IsDigit(prev) != unicode.IsDigit(r),
			unicode.IsUpper(prev) && unicode.IsUpper(r) && i+1 < len(rs) && unicode.IsLower(rs[i+1]):
			flush(i)
			start = i
		}
	}
	flush(len(rs))
	return out
}

// stem is the S-stemmer: "ies" → "y" (not after e or a), "es" → "e" (not after a, e or o),
// a final "s" dropped (not after u or s). Words of three letters or fewer are kept.
func stem(w string) string {
	if len(w) <= 3 {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && !strings.HasSuffix(w, "eies") && !strings.HasSuffix(w, "aies"):
		return w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "es") && !strings.HasSuffix(w, "aes") && !strings.HasSuffix(w, "ees") && !strings.HasSuffix(w, "oes"):
		return w[:len(w)-1]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "ss"):
		return w[:len(w)-1]
	}
	return w
}

// stopWords are common English function words; they carry no evidence of a tool.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all am an and any are as at be because been
		before being below between both but by can could did do does doing down during each few for from
		further had has have having he her here hers herself him himself his how i if in into is it its
		itself just me more most my myself no nor not now of off on once only or other our ours ourselves
		out over own same she should so some such than that the their theirs them themselves then there
		these they this those through to too under until up very was we were what when where which while
		who whom why will with would you your yours yourself yourselves s t don let lets please tell
		give get want need know like using use also etc`) {
		m[w] = true
	}
	return m
}()

func toolText(t Tool, paramDescriptions bool) string {
	var b strings.Builder
	b.WriteString(t.Name)
	b.WriteByte(' ')
	b.WriteString(t.Description)
	for _, p := range t.Params {
		b.WriteByte(' ')
		b.WriteString(p.Name)
		if paramDescriptions {
			b.WriteByte(' ')
			b.WriteString(p.Description)
		}
	}
	return b.String()
}

func set(words []string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}
