package retrieval

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
)

// NonEnglishLangs are the languages of the non-English sets (bench/data/nonenglish.json, the
// report set, and nonenglish_tune.json, the tune set), in the order their questions take them in
// turn.
var NonEnglishLangs = []string{"zh", "ja", "ko", "ru", "ar", "hi", "th", "es", "pt", "fr", "de", "vi"}

// latinLangs are those of NonEnglishLangs written in the Latin script.
var latinLangs = map[string]bool{"es": true, "pt": true, "fr": true, "de": true, "vi": true}

// Translated is one question of the non-English set: a query of a public pool, its translation,
// and the pool's own label of the query.
type Translated struct {
	Pool string
	// Part is the part of its pool the English query is in (PartOf).
	Part     string
	Lang     string
	English  string
	Question string
	// Gold is the qualified name of the tool the pool labels English with.
	Gold string
}

// Why a question of the non-English set is refused.
var (
	errUnknownPool  = errors.New("no such pool")
	errUnknownLang  = errors.New("no such language")
	errEmpty        = errors.New("empty")
	errNotQuery     = errors.New("not a query of its pool")
	errUnlabeled    = errors.New("no one tool labels it in its pool")
	errLooksEnglish = errors.New("question looks English")
	errRepeated     = errors.New("repeated")
)

// notInPart refuses a question whose English is a query of the other part of its pool (PartOf).
type notInPart struct{ part string }

func (e notInPart) Error() string { return "not in the " + e.part + " part" }

// NonEnglish reads a non-English set at path: translations of queries of part (PartTune or
// PartReport, see PartOf) of pools, each labeled with the tool its pool labels the English text
// with, found verbatim among the pool's queries, so that every label is the public data's own, and
// a set read for the report part holds nothing a rule was tuned on. It refuses an item whose pool
// is not among pools, whose English is not one labeled query of its pool or not in part, whose
// language or question is empty or unknown, whose question looks English (the English text
// itself, or, for a language of another script, no letter outside ASCII), or that repeats another.
func NonEnglish(path, part string, pools ...*Pool) ([]Translated, error) {
	if !slices.Contains(Parts, part) {
		return nil, fmt.Errorf("reading %s: no part %q (want one of %v)", filepath.Base(path), part, Parts)
	}
	var file struct {
		Questions []struct {
			Pool     string `json:"pool"`
			Lang     string `json:"lang"`
			English  string `json:"english"`
			Question string `json:"question"`
		} `json:"questions"`
	}
	if err := readJSON(path, &file); err != nil {
		return nil, err
	}
	if len(file.Questions) == 0 {
		return nil, fmt.Errorf("reading %s: no questions", filepath.Base(path))
	}
	golds := map[string]map[string][]string{}
	for _, p := range pools {
		byText := map[string][]string{}
		for _, q := range p.Queries {
			if !slices.Contains(byText[q.Text], q.Gold) {
				byText[q.Text] = append(byText[q.Text], q.Gold)
			}
		}
		golds[p.Name] = byText
	}
	out := make([]Translated, 0, len(file.Questions))
	seen := map[[2]string]bool{}
	for i, q := range file.Questions {
		t := Translated{Pool: q.Pool, Part: part, Lang: q.Lang, English: q.English, Question: q.Question}
		err := t.label(golds, part)
		if err == nil && seen[[2]string{q.Pool, q.English}] {
			err = errRepeated
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: question %d (%s, %s, %q): %w", filepath.Base(path), i+1, q.Pool, q.Lang, q.English, err)
		}
		seen[[2]string{q.Pool, q.English}] = true
		out = append(out, t)
	}
	return out, nil
}

// label checks t, whose English must be a query of part, and sets its gold from golds: pool name
// → query text → the tools labeling it.
func (t *Translated) label(golds map[string]map[string][]string, part string) error {
	byText, ok := golds[t.Pool]
	switch {
	case !ok:
		return errUnknownPool
	case t.Lang == "" || strings.TrimSpace(t.Question) == "" || t.English == "":
		return errEmpty
	case !slices.Contains(NonEnglishLangs, t.Lang):
		return errUnknownLang
	case normalise(t.Question) == normalise(t.English):
		return errLooksEnglish
	case !latinLangs[t.Lang] && asciiLetters(t.Question):
		return fmt.Errorf("%w: %s is not written in the Latin script", errLooksEnglish, t.Lang)
	}
	gs, ok := byText[t.English]
	switch {
	case !ok:
		return errNotQuery
	case len(gs) != 1 || gs[0] == "":
		return fmt.Errorf("%w: %q", errUnlabeled, gs)
	case PartOf(t.Pool, t.English) != part:
		return notInPart{part}
	}
	t.Gold = gs[0]
	return nil
}

// asciiLetters reports whether every letter of s is an ASCII one.
func asciiLetters(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) && r > unicode.MaxASCII {
			return false
		}
	}
	return true
}
