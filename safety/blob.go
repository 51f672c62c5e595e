package safety

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Encoded blobs. A run of base64 or hex characters is reported when it decodes to readable text
// (a hidden message) or when it is long enough that no description has a reason to carry it.
// Words, identifiers, URLs and hashes decode to noise and stay below the length limits.
const (
	minBase64Text = 32  // base64 characters that must decode to text: 24 bytes
	minHexText    = 40  // hex digits that must decode to text: 20 bytes
	minBase64Any  = 100 // a base64-looking run this long is reported whatever it decodes to
	minHexAny     = 128 // a hex run this long likewise (a SHA-512 is 128)
)

type blob struct {
	s, e   int // in normText.norm
	detail string
}

// encodedBlobs finds the blobs in norm.
func encodedBlobs(norm string) []blob {
	var out []blob
	for i := 0; i < len(norm); {
		if !isBase64Char(norm[i]) {
			i++
			continue
		}
		j := i
		for j < len(norm) && isBase64Char(norm[j]) {
			j++
		}
		end := j
		for end < len(norm) && end-j < 2 && norm[end] == '=' {
			end++
		}
		if d := classifyRun(norm[i:j]); d != "" {
			out = append(out, blob{s: i, e: end, detail: d})
		}
		i = end
	}
	return out
}

func isBase64Char(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '-' || c == '_'
}

// classifyRun says why run is a blob, or "" when it is not one.
func classifyRun(run string) string {
	n := len(run)
	if n < min(minHexText, minBase64Text) {
		return ""
	}
	var upper, lower, digit, hexOnly int
	for i := 0; i < n; i++ {
		c := run[i]
		switch {
		case c >= 'A' && c <= 'Z':
			upper++
		case c >= 'a' && c <= 'z':
			lower++
		case c >= '0' && c <= '9':
			digit++
		}
		if c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' {
			hexOnly++
		}
	}
	if hexOnly == n {
		if n >= minHexText {
			if raw, err := hex.DecodeString(run[:n&^1]); err == nil && readable(raw) {
				return fmt.Sprintf("%d hex digits that decode to text: %s", n, quoteShort(string(raw)))
			}
		}
		if n >= minHexAny {
			return fmt.Sprintf("a run of %d hex digits", n)
		}
		return ""
	}
	if n < minBase64Text {
		return ""
	}
	enc := base64.RawStdEncoding
	if strings.ContainsAny(run, "-_") {
		enc = base64.RawURLEncoding
	}
	body := run
	if len(body)%4 == 1 {
		body = body[:len(body)-1]
	}
	if raw, err := enc.DecodeString(body); err == nil && readable(raw) {
		return fmt.Sprintf("%d base64 characters that decode to text: %s", n, quoteShort(string(raw)))
	}
	if n >= minBase64Any && upper > 0 && lower > 0 && digit > 0 && transitions(run)*10 >= 3*n {
		return fmt.Sprintf("a run of %d base64 characters", n)
	}
	return ""
}

// readable reports whether decoded bytes are text rather than noise: valid UTF-8, every rune
// printable or white space, and mostly letters, digits and spaces.
func readable(raw []byte) bool {
	if len(raw) < 16 || !utf8.Valid(raw) || !printable(string(raw)) {
		return false
	}
	plain := 0
	for _, r := range string(raw) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == ' ' {
			plain++
		}
	}
	return plain*10 >= utf8.RuneCount(raw)*6
}

// transitions counts adjacent characters of different classes (upper, lower, digit, other):
// frequent in base64, rare in words and paths.
func transitions(s string) int {
	class := func(c byte) int {
		switch {
		case c >= 'A' && c <= 'Z':
			return 0
		case c >= 'a' && c <= 'z':
			return 1
		case c >= '0' && c <= '9':
			return 2
		}
		return 3
	}
	t := 0
	for i := 1; i < len(s); i++ {
		if class(s[i]) != class(s[i-1]) {
			t++
		}
	}
	return t
}
