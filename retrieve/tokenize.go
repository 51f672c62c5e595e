package retrieve

import (
	"slices"
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
// consonant undone: "running" → run), then one derivational suffix ("calculation", "calculator",
// "calculate" → calcul; "similarity" → similar; "genetically" → genetic; "preference" → prefer),
// then a final silent e ("cache", "caches", "cached", "caching" → cach). It is deliberately small:
// a miss costs a little recall, a wrong merge costs precision, and both are visible in the tests
// and the benchmark (go run ./bench retrieval), which chose the suffixes. "-er" and "-or" are left
// alone: they cost more on the benchmark's pools than they gained. A tool's name gets a looser,
// weaker match besides (looseStem, abbreviations: see partialKeys).
func Stem(w string) string { return stem(w, true) }

// stem is Stem, with its derivational suffixes only when derive is set.
func stem(w string, derive bool) string {
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
	for _, r := range derivations {
		if !derive {
			break
		}
		if strings.HasSuffix(w, r.suffix) && len(w)-len(r.suffix) >= r.keep {
			w = w[:len(w)-len(r.suffix)] + r.repl
			break
		}
	}
	if len(w) >= 4 && w[len(w)-1] == 'e' && w[len(w)-2] != 'e' {
		w = w[:len(w)-1]
	}
	return w
}

// derivations are the derivational suffixes Stem strips, the first that matches: the suffix, what
// replaces it, and how many letters must remain before it.
var derivations = []struct {
	suffix, repl string
	keep         int
}{
	{"ically", "ic", 4},
	{"ational", "", 4},
	{"ation", "", 4},
	{"ator", "", 4},
	{"ity", "", 5},
	{"ence", "", 5},
	{"ance", "", 5},
	{"ment", "", 5},
	{"ion", "", 4},
	{"ate", "", 4},
	{"ally", "al", 4},
	{"ive", "", 5},
	{"ly", "", 5},
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

// Index keys besides stems. None can come out of Terms, whose keys are letters and digits only.
const (
	// exactKey prefixes a word as written (lower-cased, not stemmed), so that "times" in a query
	// meets "times" before it meets "time".
	exactKey = "\x01"
	// opKey prefixes an arithmetic operator between numbers ("17 × 23", "17 times 23", "15%").
	opKey = "\x02op"
	// fileKey stands for a file named in the text ("notes.txt", "reports/q3.csv", "the csv
	// files").
	fileKey = "\x02file"
	// looseKey prefixes the looseStem of a word of a tool's name, where it differs from the
	// stem: "get_discoverer" is found by "discovered".
	looseKey = "\x03loose"
	// abbrevKey prefixes a short word of a tool's name as written, which a longer query word may
	// start with: "calc_binomial_prob" is found by "calculate" and "probability".
	abbrevKey = "\x03abbrev"
)

// Abbreviations a tool's name is indexed under (abbrevKey): its words of minAbbrev to maxAbbrev
// letters.
const (
	minAbbrev = 4
	maxAbbrev = 6
)

// looseStem strips from a stem one suffix Stem leaves alone, of an agent or a noun: "-er",
// "-or", "-y" ("discoverer", "discovery" → discover), keeping four letters at least.
func looseStem(stem string) string {
	for _, suf := range []string{"er", "or", "y"} {
		if strings.HasSuffix(stem, suf) && len(stem)-len(suf) >= 4 {
			return stem[:len(stem)-len(suf)]
		}
	}
	return stem
}

// partialKeys calls fn with the index keys of a word of a tool's name besides its stem: its
// looseStem, and the word as an abbreviation.
func partialKeys(word, stem string, m Matching, fn func(key string)) {
	if l := looseStem(stem); l != stem && m.Loose {
		fn(looseKey + l)
	}
	if !m.NoAbbrev && len(word) >= minAbbrev && len(word) <= maxAbbrev && isASCIILower(word) {
		fn(abbrevKey + word)
	}
}

// partialQueryKeys calls fn with the keys a query word looks up in tool names besides its stem,
// each as its prefix (looseKey or abbrevKey) and the text after it, so that a caller can look a
// key up without building it: the stem as a looseStem, and each start of the word of minAbbrev
// to maxAbbrev letters that is not the same word (its stem differs): "probability" looks up the
// abbreviations "prob", "proba" and "probab".
func partialQueryKeys(word, stem string, m Matching, fn func(prefix, text string)) {
	if m.Loose {
		fn(looseKey, stem)
	}
	if m.NoAbbrev || !isASCIILower(word) {
		return
	}
	for n := minAbbrev; n < len(word) && n <= maxAbbrev; n++ {
		if Stem(word[:n]) != stem {
			fn(abbrevKey, word[:n])
		}
	}
}

// asksDate reports whether a text asks for a date or names one: the word "when", a month named
// beside a number ("July 4, 1976", "3 Jan") or a date in figures ("2024-01-31", "1/31/2024").
// toks are the text's lexTokens.
func asksDate(toks []token) bool {
	num := func(i int) bool { return i >= 0 && i < len(toks) && toks[i].kind == tokNumber }
	for i, t := range toks {
		switch {
		case t.date,
			t.kind == tokWord && t.text == "when",
			t.kind == tokWord && months[t.text] && (num(i-1) || num(i+1)):
			return true
		}
	}
	return false
}

// months are the names of the months, in full and abbreviated.
var months = map[string]bool{}

func init() {
	for _, m := range strings.Fields(`january february march april may june july august september
		october november december jan feb mar apr jun jul aug sep sept oct nov dec`) {
		months[m] = true
	}
}

// words calls fn with each word of s lower-cased, stop words dropped, and its stem (see
// Matching for what m changes): a run of a script written without spaces (Chinese, Japanese,
// Thai, …) gives its overlapping pairs of characters as words.
func words(s string, m Matching, fn func(word, stem string)) {
	splitWords(s, func(w string) {
		w = strings.ToLower(w)
		if stopWords[w] {
			return
		}
		if !m.NoBigrams && hasUnspaced(w) {
			unspacedWords(w, m, fn)
			return
		}
		fn(w, stem(w, !m.NoDerivation))
	})
}

// evidence calls fn with a key for what a text's form says beyond its words: each arithmetic
// operator written between numbers, in symbols or in words: × * "times" "multiplied by" (all
// "*"), ÷ "divided by" "over" ("/"), + "plus", − "minus", ^ "to the power of" "raised to"
// "squared" "cubed" ("^"), % "percent" ("%"), √ "square root of" ("√"); - and / only between two
// numbers that do not make a date (2024-01-31, 1/31/2024). A symbol needs a number on one side
// (so the * of "*.csv" is not one), a word operator on both (or before it: "5 squared"). And each
// file it names: "notes.txt", "reports/q3.csv", "the csv files" (fileKey).
func evidence(s string, fn func(key string)) { evidenceIn(s, lexTokens(s), fn) }

// evidenceIn is evidence with s's lexTokens.
func evidenceIn(s string, toks []token, fn func(key string)) {
	num := func(i int) bool { return i >= 0 && i < len(toks) && toks[i].kind == tokNumber }
	word := func(i int, ws ...string) bool {
		return i >= 0 && i < len(toks) && toks[i].kind == tokWord && slices.Contains(ws, toks[i].text)
	}
	for i, t := range toks {
		op := ""
		switch t.kind {
		case tokSymbol:
			switch t.text {
			case "×", "✕", "*":
				if num(i-1) || num(i+1) {
					op = "*"
				}
			case "÷":
				if num(i-1) || num(i+1) {
					op = "/"
				}
			case "+":
				if num(i-1) || num(i+1) {
					op = "+"
				}
			case "−":
				if num(i-1) || num(i+1) {
					op = "-"
				}
			case "^":
				if num(i - 1) {
					op = "^"
				}
			case "%":
				if num(i - 1) {
					op = "%"
				}
			case "√":
				if num(i + 1) {
					op = "√"
				}
			case "-", "/":
				if num(i-1) && num(i+1) && !t.date {
					op = t.text
				}
			}
		case tokWord:
			switch t.text {
			case "times", "x":
				if num(i-1) && num(i+1) {
					op = "*"
				}
			case "multiplied", "divided":
				if num(i-1) && (num(i+1) || word(i+1, "by") && num(i+2)) {
					op = map[string]string{"multiplied": "*", "divided": "/"}[t.text]
				}
			case "over":
				if num(i-1) && num(i+1) {
					op = "/"
				}
			case "plus":
				if num(i-1) && num(i+1) {
					op = "+"
				}
			case "minus":
				if num(i-1) && num(i+1) {
					op = "-"
				}
			case "percent":
				if num(i - 1) {
					op = "%"
				}
			case "squared", "cubed":
				if num(i - 1) {
					op = "^"
				}
			case "power":
				if word(i-1, "the") && word(i-2, "to") && num(i-3) || word(i+1, "of") && num(i+2) && word(i-1, "the") {
					op = "^"
				}
			case "raised":
				if num(i-1) && word(i+1, "to") {
					op = "^"
				}
			case "root":
				if word(i+1, "of") && num(i+2) || num(i+1) {
					op = "√"
				}
			}
		}
		if op != "" {
			fn(opKey + op)
		}
	}
	fs := strings.Fields(s)
	for i := range fs {
		if fileAt(fs, i) {
			fn(fileKey)
		}
	}
}

// fileAt reports whether the whitespace-separated field fs[i] names a file: by its form
// ("notes.txt", fileLike) or as a file type before "file" or "files" ("the csv files").
func fileAt(fs []string, i int) bool {
	return fileLike(fs[i]) || i+1 < len(fs) && fileTypes[strings.ToLower(strings.Trim(fs[i], ".*"))] && fileWord(fs[i+1])
}

// fileWord reports whether a field is "file", "files", "document" or "documents" (any case,
// punctuation after it).
func fileWord(f string) bool {
	f = strings.ToLower(strings.TrimRight(f, ".,;:!?)'\""))
	return f == "file" || f == "files" || f == "document" || f == "documents"
}

// fileTypes are the file types a text may name before "file" or "files" ("the csv files").
var fileTypes = map[string]bool{}

func init() {
	for _, t := range strings.Fields(`txt md csv tsv json yaml yml xml html pdf doc docx xls xlsx ppt pptx
		log png jpg jpeg gif svg mp3 mp4 wav zip tar gz py go js ts java rs sh text markdown image audio video`) {
		fileTypes[t] = true
	}
}

// fileLike reports whether a whitespace-separated field names a file: a name, a dot and an
// extension of 1 to 5 letters or digits starting with a letter, possibly after a path and before
// punctuation ("notes.txt", "src/main.go,", "'todo.md'").
func fileLike(f string) bool {
	f = strings.TrimRight(strings.TrimLeft(f, "'\"`([{<"), "'\"`)]}>.,;:!?")
	i := strings.LastIndexByte(f, '.')
	if i <= 0 || i == len(f)-1 {
		return false
	}
	ext, name := f[i+1:], f[:i]
	if len(ext) > 5 || ext[0] < 'a' || ext[0] > 'z' {
		return false
	}
	for _, r := range ext {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	last := name[strings.LastIndexAny(name, "/\\")+1:]
	return len(last) >= 2 && !strings.Contains(f, "://") && !strings.Contains(f, "@")
}

// Kinds of lexical token, for evidence.
const (
	tokWord = iota
	tokNumber
	tokSymbol
)

type token struct {
	kind int
	text string // lower-cased for words
	// date marks a - or / that joins numbers into a date.
	date bool
}

// lexTokens splits s into words (letters, and digits stuck to letters as in "3pm" or "v2"),
// numbers (digits, with inner '.' or ',' between digits) and single symbols; spaces separate.
func lexTokens(s string) []token {
	rs := []rune(s)
	var out []token
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case unicode.IsSpace(r):
			i++
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			j := i
			letters := false
			for j < len(rs) && (unicode.IsLetter(rs[j]) || unicode.IsDigit(rs[j]) ||
				(rs[j] == '.' || rs[j] == ',') && j > i && unicode.IsDigit(rs[j-1]) && j+1 < len(rs) && unicode.IsDigit(rs[j+1])) {
				letters = letters || unicode.IsLetter(rs[j])
				j++
			}
			kind := tokNumber
			if letters {
				kind = tokWord
			}
			out = append(out, token{kind: kind, text: strings.ToLower(string(rs[i:j]))})
			i = j
		default:
			out = append(out, token{kind: tokSymbol, text: string(r), date: (r == '-' || r == '/') && dateLike(rs, i)})
			i++
		}
	}
	return out
}

// dateLike reports whether the - or / at i joins numbers into a date: the same separator
// again on either side, between digits, with no spaces ("2024-01-31", "1/31/2024").
func dateLike(rs []rune, i int) bool {
	sep := rs[i]
	if i == 0 || i+1 >= len(rs) || !unicode.IsDigit(rs[i-1]) || !unicode.IsDigit(rs[i+1]) {
		return false
	}
	for _, dir := range []int{-1, 1} {
		j := i + dir
		for j >= 0 && j < len(rs) && unicode.IsDigit(rs[j]) {
			j += dir
		}
		if j >= 0 && j < len(rs) && rs[j] == sep && j+dir >= 0 && j+dir < len(rs) && unicode.IsDigit(rs[j+dir]) {
			return true
		}
	}
	return false
}
