package safety

import "strings"

// needleSet is a set of needles as bits, one per needle registered in needles.
type needleSet [8]uint64

func (s *needleSet) set(id int) { s[id>>6] |= 1 << (id & 63) }

// meets reports whether s and mask share a needle.
func (s needleSet) meets(mask needleSet) bool {
	return s[0]&mask[0]|s[1]&mask[1]|s[2]&mask[2]|s[3]&mask[3]|s[4]&mask[4]|s[5]&mask[5]|s[6]&mask[6]|s[7]&mask[7] != 0
}

// needleIndex finds, in one pass over a text, which of the rules' needles occur in it. A needle
// that starts with a letter or digit is looked for at the start of words (so "tool" is found in
// "tools" but not in "stool"); any other needle ("'", ".env", "/etc/passwd") anywhere. A space in
// a needle also matches a newline, as \s does in the patterns.
type needleIndex struct {
	byText   map[string]int
	atWord   [256][]indexed // by first byte
	anywhere []indexed
}

type indexed struct {
	s  string
	id int
}

// needles holds every needle of every pattern.
var needles = &needleIndex{byText: map[string]int{}}

// mask registers words and returns them as a set.
func (x *needleIndex) mask(words []string) needleSet {
	var m needleSet
	for _, w := range words {
		id, ok := x.byText[w]
		if !ok {
			id = len(x.byText)
			if id >= len(m)*64 {
				panic("safety: too many needles")
			}
			x.byText[w] = id
			if isWordByte(w[0]) {
				x.atWord[w[0]] = append(x.atWord[w[0]], indexed{w, id})
			} else {
				x.anywhere = append(x.anywhere, indexed{w, id})
			}
		}
		m.set(id)
	}
	return m
}

// find returns the needles that occur in lower.
func (x *needleIndex) find(lower string) needleSet {
	var found needleSet
	for i := 0; i < len(lower); i++ {
		c := lower[i]
		if !isWordByte(c) || i > 0 && isWordByte(lower[i-1]) {
			continue
		}
		for _, n := range x.atWord[c] {
			if hasPrefixSpace(lower[i:], n.s) {
				found.set(n.id)
			}
		}
	}
	for _, n := range x.anywhere {
		if strings.Contains(lower, n.s) {
			found.set(n.id)
		}
	}
	return found
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c >= 'A' && c <= 'Z'
}

// hasPrefixSpace is strings.HasPrefix where a space in prefix also matches a newline.
func hasPrefixSpace(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		if s[i] != prefix[i] && !(prefix[i] == ' ' && s[i] == '\n') {
			return false
		}
	}
	return true
}
