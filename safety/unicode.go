package safety

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// invisibleRune reports whether r renders as nothing or reorders the text around it: controls
// other than tab, newline and carriage return; format characters (Unicode category Cf: zero-width
// space and joiners, bidirectional marks, embeddings, overrides and isolates, word joiner, BOM, tag
// characters U+E0000–E007F, soft hyphen); variation selectors; the Hangul and Khmer fillers, the
// Mongolian selectors, the combining grapheme joiner and the braille blank. A few Cf characters that do print (Arabic
// number signs and the like) are left out.
func invisibleRune(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return false
	case r < 0x20 || (r >= 0x7F && r <= 0x9F):
		return true
	case r < 0xAD:
		return false
	case r == 0x034F, r == 0x115F, r == 0x1160, r == 0x17B4, r == 0x17B5, r == 0x3164, r == 0xFFA0, r == 0x2800:
		return true
	case r >= 0x180B && r <= 0x180F:
		return true
	case isVariationSelector(r):
		return true
	case r >= 0x0600 && r <= 0x0605, r == 0x06DD, r == 0x070F, r == 0x08E2, r == 0x110BD, r == 0x110CD:
		return false
	}
	return unicode.Is(unicode.Cf, r)
}

// blankRune is an invisible character that shows as a blank, which normalize reads as a space:
// the braille blank and the Hangul fillers.
func blankRune(r rune) bool {
	return r == 0x2800 || r == 0x3164 || r == 0x115F || r == 0x1160 || r == 0xFFA0
}

func isVariationSelector(r rune) bool {
	return (r >= 0xFE00 && r <= 0xFE0F) || (r >= 0xE0100 && r <= 0xE01EF)
}

func isTagChar(r rune) bool { return r >= 0xE0000 && r <= 0xE007F }

func isBidiMark(r rune) bool { return r == 0x200E || r == 0x200F || r == 0x061C }

// emojiLike is a rune that starts or continues an emoji sequence.
func emojiLike(r rune) bool {
	return r >= 0x1F000 && r <= 0x1FAFF || unicode.Is(unicode.So, r)
}

func rtlLetter(r rune) bool {
	return r >= 0x0590 && r <= 0x08FF || r >= 0xFB1D && r <= 0xFDFF || r >= 0xFE70 && r <= 0xFEFC
}

// plainASCII reports whether s is printable ASCII, tabs and line breaks only: the common case,
// which needs no Unicode work at all.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x7F || (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
			return false
		}
	}
	return true
}

type runeAt struct {
	r    rune
	at   int // byte offset
	size int
}

// invisibleHits returns the invisible characters in s that are not part of ordinary text. Allowed,
// because real text needs them: a zero-width joiner between emoji, a zero-width non-joiner between
// letters of scripts that use it, one variation selector where Unicode defines variation sequences
// (see selects), the tag sequence of a subdivision flag (see subdivisionTags), left-to-right and
// right-to-left marks in text that contains right-to-left letters, and a BOM as the first
// character. Everything else is a hit, including every run of two or more variation selectors
// (the "emoji smuggling" encoding).
func invisibleHits(s string) []runeAt {
	if plainASCII(s) {
		return nil
	}
	rs := make([]runeAt, 0, len(s))
	hasRTL := false
	for i, r := range s {
		size := utf8.RuneLen(r)
		if r == utf8.RuneError {
			_, size = utf8.DecodeRuneInString(s[i:])
		}
		rs = append(rs, runeAt{r: r, at: i, size: size})
		hasRTL = hasRTL || rtlLetter(r)
	}
	var hits []runeAt
	for i := 0; i < len(rs); i++ {
		r := rs[i].r
		if !invisibleRune(r) {
			continue
		}
		var prev, next rune
		if i > 0 {
			prev = rs[i-1].r
		}
		if i+1 < len(rs) {
			next = rs[i+1].r
		}
		switch {
		case r == 0x200D && (emojiLike(prev) || prev == 0xFE0F) && emojiLike(next):
			continue
		case r == 0x200C && unicode.IsLetter(prev) && prev > 0x052F && unicode.IsLetter(next) && next > 0x052F:
			continue
		case isVariationSelector(r):
			j := i
			for j < len(rs) && isVariationSelector(rs[j].r) {
				j++
			}
			if j-i == 1 && selects(prev, r) {
				continue
			}
			hits = append(hits, rs[i:j]...)
			i = j - 1
			continue
		case isTagChar(r) && prev == 0x1F3F4:
			if n := subdivisionTags(rs[i:]); n > 0 {
				i += n - 1
				continue
			}
		case isBidiMark(r) && hasRTL:
			continue
		case r == 0xFEFF && i == 0:
			continue
		}
		hits = append(hits, rs[i])
	}
	return hits
}

// selects reports whether the variation selector vs after base can be a real variation sequence:
// text or emoji style (VS15, VS16) after an emoji, a symbol or a keycap base; a standardized
// variant (VS1–VS14) after a symbol or a Han ideograph; an ideographic variant (VS17–VS256) after
// a Han ideograph. After a letter of any other script, or any character where none of these
// applies, a selector carries nothing but hidden data: one byte a character.
func selects(base, vs rune) bool {
	han := unicode.Is(unicode.Han, base)
	symbol := emojiLike(base) || unicode.In(base, unicode.Sm, unicode.So) || base >= '0' && base <= '9' ||
		base == '#' || base == '*' || base == 0x203C || base == 0x2049 || base == 0x3030 || base == 0x303D
	switch {
	case vs == 0xFE0E || vs == 0xFE0F:
		return symbol
	case vs >= 0xFE00 && vs <= 0xFE0D:
		return han || unicode.In(base, unicode.Sm, unicode.So)
	}
	return han
}

// subdivisionTags returns how many characters of rs, which starts after a black flag (U+1F3F4),
// make a subdivision flag's tag sequence, or 0 when they do not: two to six tag letters a–z and
// tag digits 0–9, then CANCEL TAG (U+E007F). Any other tag character (upper case, punctuation,
// space) is no part of a flag and spells hidden text.
func subdivisionTags(rs []runeAt) int {
	n := 0
	for n < len(rs) && n < 7 && (rs[n].r >= 0xE0061 && rs[n].r <= 0xE007A || rs[n].r >= 0xE0030 && rs[n].r <= 0xE0039) {
		n++
	}
	if n < 2 || n > 6 || n >= len(rs) || rs[n].r != 0xE007F {
		return 0
	}
	return n + 1
}

var runeNames = map[rune]string{
	0x00AD: "SOFT HYPHEN", 0x034F: "COMBINING GRAPHEME JOINER", 0x061C: "ARABIC LETTER MARK",
	0x180E: "MONGOLIAN VOWEL SEPARATOR", 0x200B: "ZERO WIDTH SPACE", 0x200C: "ZERO WIDTH NON-JOINER",
	0x200D: "ZERO WIDTH JOINER", 0x200E: "LEFT-TO-RIGHT MARK", 0x200F: "RIGHT-TO-LEFT MARK",
	0x202A: "LEFT-TO-RIGHT EMBEDDING", 0x202B: "RIGHT-TO-LEFT EMBEDDING", 0x202C: "POP DIRECTIONAL FORMATTING",
	0x202D: "LEFT-TO-RIGHT OVERRIDE", 0x202E: "RIGHT-TO-LEFT OVERRIDE", 0x2060: "WORD JOINER",
	0x2061: "FUNCTION APPLICATION", 0x2062: "INVISIBLE TIMES", 0x2063: "INVISIBLE SEPARATOR",
	0x2064: "INVISIBLE PLUS", 0x2066: "LEFT-TO-RIGHT ISOLATE", 0x2067: "RIGHT-TO-LEFT ISOLATE",
	0x2068: "FIRST STRONG ISOLATE", 0x2069: "POP DIRECTIONAL ISOLATE", 0xFEFF: "ZERO WIDTH NO-BREAK SPACE",
	0x1B: "ESCAPE", 0x2800: "BRAILLE PATTERN BLANK",
}

func runeName(r rune) string {
	if n, ok := runeNames[r]; ok {
		return n
	}
	switch {
	case r < 0x20 || r >= 0x7F && r <= 0x9F:
		return "CONTROL CHARACTER"
	}
	return "FORMAT CHARACTER"
}

// describeInvisible summarises hits for Finding.Detail: counts by character, and any text
// smuggled in tag characters or variation selectors.
func describeInvisible(hits []runeAt) string {
	// Tag characters and variation selectors are counted as a class: listed one by one they would
	// spell out the payload in code points.
	const tagClass, selectorClass rune = -1, -2
	var order []rune
	count := map[rune]int{}
	var tags, selectors []byte
	for _, h := range hits {
		key := h.r
		switch {
		case isTagChar(h.r):
			key = tagClass
			if h.r >= 0xE0020 && h.r <= 0xE007E {
				tags = append(tags, byte(h.r-0xE0000))
			}
		case h.r >= 0xFE00 && h.r <= 0xFE0F:
			key = selectorClass
			selectors = append(selectors, byte(h.r-0xFE00))
		case h.r >= 0xE0100 && h.r <= 0xE01EF:
			key = selectorClass
			selectors = append(selectors, byte(h.r-0xE0100+16))
		}
		if count[key] == 0 {
			order = append(order, key)
		}
		count[key]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d invisible or bidirectional character", len(hits))
	if len(hits) > 1 {
		b.WriteByte('s')
	}
	b.WriteString(": ")
	for i, r := range order {
		if i == 5 {
			fmt.Fprintf(&b, ", and %d more kinds", len(order)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		switch r {
		case tagClass:
			b.WriteString("TAG CHARACTERS (U+E0000–E007F)")
		case selectorClass:
			b.WriteString("VARIATION SELECTORS")
		default:
			fmt.Fprintf(&b, "U+%04X %s", r, runeName(r))
		}
		if count[r] > 1 {
			fmt.Fprintf(&b, " ×%d", count[r])
		}
	}
	if len(tags) > 0 {
		fmt.Fprintf(&b, "; the tag characters spell %s", quoteShort(string(tags)))
	}
	if len(selectors) > 1 && utf8.Valid(selectors) && printable(string(selectors)) {
		fmt.Fprintf(&b, "; the variation selectors encode %s", quoteShort(string(selectors)))
	}
	return b.String()
}

// foldExtra folds what neither the confusables table nor compatibility decomposition brings to
// ASCII: typographic quotes and dashes, and the letters of Latin-script languages that carry a
// stroke rather than a combining mark.
var foldExtra = map[rune]string{
	'‘': "'", '’': "'", '‚': "'", '‛': "'", '“': `"`, '”': `"`, '„': `"`, '‟': `"`, '–': "-", '—': "-",
	'ł': "l", 'Ł': "L", 'đ': "d", 'Đ': "D", 'ø': "o", 'Ø': "O", 'ß': "ss", 'ı': "i", 'ħ': "h",
	'«': `"`, '»': `"`,
}

// fold is how normalize writes one character that is not ASCII: its compatibility decomposition
// when that is ASCII (fullwidth "Ｉ", mathematical "𝐢", circled "ⓘ"), else its ASCII look-alike
// when Unicode lists one (UTS #39's confusables with an ASCII prototype: Cyrillic "о", Greek "ο",
// a capital I look-alike as "I" rather than the table's "l"), else its compatibility decomposition (NFKD: fullwidth, ligatures, circled
// and styled letters), combining marks dropped when the base is a Latin, Greek or Cyrillic letter
// ("é" reads "e"); other scripts keep their composed form (NFKC), since a mark there is part of
// the letter. The result may be the character itself.
func fold(r rune) string {
	if t, ok := foldExtra[r]; ok {
		return t
	}
	d := norm.NFKD.String(string(r))
	if d != string(r) && plainASCII(d) { // fullwidth, mathematical and styled letters
		return d
	}
	if t, ok := confusables[r]; ok {
		if t == "l" && unicode.IsUpper(r) { // a capital I look-alike ("Ι", "І") stands for I
			return "I"
		}
		return t
	}
	if base, _ := utf8.DecodeRuneInString(d); base >= markedScripts {
		return norm.NFKC.String(string(r))
	}
	var b strings.Builder
	for _, x := range d {
		switch {
		case isMark(x):
		case x < 0x80:
			b.WriteRune(x)
		default:
			if t, ok := confusables[x]; ok {
				b.WriteString(t)
			} else if t, ok := foldExtra[x]; ok {
				b.WriteString(t)
			} else {
				b.WriteRune(x)
			}
		}
	}
	return b.String()
}

// markedScripts is where the scripts whose combining marks fold away end: Latin, Greek, Cyrillic,
// Armenian.
const markedScripts = 0x0590

func isMark(r rune) bool { return unicode.In(r, unicode.Mn, unicode.Me) }

// normText is a text prepared for the phrase rules: invisible characters removed, every other
// character folded (see fold), combining marks after Latin, Greek and Cyrillic letters dropped,
// each run of white space made one space (or one newline if it held one), and letters
// lower-cased. at maps each byte of lower back to the text.
type normText struct {
	src   string
	norm  string // as lower, case kept (for encoded blobs)
	lower string
	at    []int // len(lower)+1 offsets into src; nil means the identity
}

func normalize(s string) normText {
	if plainASCII(s) && !hasSpaceRun(s) {
		return normText{src: s, norm: s, lower: asciiLower(s)}
	}
	b := make([]byte, 0, len(s))
	low := make([]byte, 0, len(s))
	at := make([]int, 0, len(s)+1)
	space := -1   // index in b of the white space that stands for the current run, or -1
	var base rune // the last character that was not a mark
	for i, r := range s {
		size := utf8.RuneLen(r)
		if r == utf8.RuneError {
			_, size = utf8.DecodeRuneInString(s[i:])
		}
		switch {
		case invisibleRune(r) && !blankRune(r):
			continue
		case unicode.IsSpace(r) || blankRune(r):
			base = ' '
			if space >= 0 {
				if r == '\n' {
					b[space], low[space] = '\n', '\n'
				}
				continue
			}
			space = len(b)
			c := byte(' ')
			if r == '\n' {
				c = '\n'
			}
			b, low = append(b, c), append(low, c)
			at = append(at, i)
			continue
		case r >= 0x80 && isMark(r):
			if base < markedScripts {
				continue
			}
		case r >= 0x80:
			base = r
		default:
			base = r
		}
		space = -1
		var out string
		if r < 0x80 || r == utf8.RuneError {
			out = s[i : i+size]
		} else {
			out = fold(r)
		}
		b = append(b, out...)
		for _, x := range out {
			l := unicode.ToLower(x)
			if utf8.RuneLen(l) != utf8.RuneLen(x) || x == utf8.RuneError {
				l = x
			}
			low = utf8.AppendRune(low, l)
		}
		if len(low) != len(b) { // invalid bytes: keep them as they are
			low = append(low[:len(b)-len(out)], out...)
		}
		for k := 0; k < len(out); k++ {
			at = append(at, i)
		}
	}
	at = append(at, len(s))
	return normText{src: s, norm: string(b), lower: string(low), at: at}
}

// span maps [s, e) in lower to src.
func (n normText) span(s, e int) span {
	if n.at == nil {
		return span{s, e}
	}
	if e == s {
		return span{n.at[s], n.at[s]}
	}
	// The end is just past the last byte: find where that byte's character ends in src, so that
	// characters dropped after it (invisible ones, folded white space) stay outside.
	last := n.at[e-1]
	_, size := utf8.DecodeRuneInString(n.src[last:])
	return span{n.at[s], last + size}
}

func hasSpaceRun(s string) bool {
	for i := 1; i < len(s); i++ {
		if isASCIISpace(s[i]) && isASCIISpace(s[i-1]) || s[i] == '\t' || s[i] == '\r' || s[i] == '\v' || s[i] == '\f' {
			return true
		}
	}
	return len(s) > 0 && (s[0] == '\t' || s[0] == '\r')
}

func isASCIISpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// escape makes s safe to log: invisible and unprintable characters become \uXXXX (or \UXXXXXXXX),
// line breaks and tabs \n \r \t, invalid bytes \xXX; everything else stays as it is.
func escape(s string) string {
	out, _ := escapeMax(s, len(s)*10)
	return out
}

// escapeMax is escape with the result cut to at most max bytes; cut reports whether it was.
func escapeMax(s string, max int) (out string, cut bool) {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		var piece string
		switch {
		case r == utf8.RuneError && size == 1:
			piece = fmt.Sprintf(`\x%02X`, s[i])
		case r == '\n':
			piece = `\n`
		case r == '\r':
			piece = `\r`
		case r == '\t':
			piece = `\t`
		case invisibleRune(r) || (r != ' ' && !unicode.IsPrint(r)):
			if r > 0xFFFF {
				piece = fmt.Sprintf(`\U%08X`, r)
			} else {
				piece = fmt.Sprintf(`\u%04X`, r)
			}
		default:
			piece = s[i : i+size]
		}
		if b.Len()+len(piece) > max {
			return b.String(), true
		}
		b.WriteString(piece)
		i += size
	}
	return b.String(), false
}

// printable reports whether s reads as text: every rune printable or white space.
func printable(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) && !unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

// quoteShort is s escaped, cut to 80 bytes and quoted.
func quoteShort(s string) string {
	out, cut := escapeMax(s, 80)
	if cut {
		return `"` + out + `…"`
	}
	return `"` + out + `"`
}
