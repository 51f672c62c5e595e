package plainjson

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Escaping is how AppendString writes a string.
type Escaping uint8

const (
	// EncodingJSON escapes as encoding/json does: '"', '\\' and the controls below U+0020 (\b \f
	// \n \r \t, others as \u00XX), the HTML characters <, > and & as \u003c, \u003e and \u0026, and
	// U+2028 and U+2029 as \u2028 and \u2029; an invalid UTF-8 byte is written as \ufffd.
	EncodingJSON Escaping = iota
	// Minimal escapes only what JSON requires: '"', '\\' and the controls below U+0020, as
	// EncodingJSON does. Everything else is written as raw UTF-8, an invalid UTF-8 byte as a raw
	// U+FFFD.
	Minimal
)

// safeASCII says which ASCII bytes each Escaping writes as they are.
var safeASCII = func() (t [2][utf8.RuneSelf]bool) {
	for c := byte(0x20); c < utf8.RuneSelf; c++ {
		if c != '"' && c != '\\' {
			t[Minimal][c] = true
			t[EncodingJSON][c] = c != '<' && c != '>' && c != '&'
		}
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// AppendString appends s quoted, escaped as e says.
func AppendString(b []byte, s string, e Escaping) []byte {
	safe := &safeASCII[EncodingJSON]
	if e == Minimal {
		safe = &safeASCII[Minimal]
	}
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if safe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			if e == Minimal {
				b = append(b, "\uFFFD"...)
			} else {
				b = append(b, `\ufffd`...)
			}
		case (r == '\u2028' || r == '\u2029') && e != Minimal:
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendFloat appends f as encoding/json writes a float64; ok is false for NaN and the
// infinities, which encoding/json refuses.
func AppendFloat(b []byte, f float64) (_ []byte, ok bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	if m, ok := thousandths(f); ok {
		return appendThousandths(b, m), true
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 becomes e-9, as encoding/json writes it.
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// thousandths is f×1000 when f is the float64 nearest a whole number of thousandths below 1e12
// in size, as every millisecond figure rounded to the microsecond is. The shortest decimal of
// such an f is that number of thousandths: below 1e12 the float64s are closer together than a
// thousandth, so no shorter decimal rounds to f.
func thousandths(f float64) (int64, bool) {
	if f == 0 || math.Abs(f) >= 1e12 {
		return 0, false
	}
	m := math.Round(f * 1000)
	if m/1000 != f {
		return 0, false
	}
	return int64(m), true
}

// appendThousandths appends m/1000 in decimal without trailing zeros ("0.545", "12.5", "3").
func appendThousandths(b []byte, m int64) []byte {
	if m < 0 {
		b = append(b, '-')
		m = -m
	}
	b = strconv.AppendInt(b, m/1000, 10)
	frac := m % 1000
	if frac == 0 {
		return b
	}
	digits := [3]byte{byte('0' + frac/100), byte('0' + frac/10%10), byte('0' + frac%10)}
	n := 3
	for digits[n-1] == '0' {
		n--
	}
	b = append(b, '.')
	return append(b, digits[:n]...)
}

// AppendNumber appends n as encoding/json writes a json.Number: its text, "0" when empty; ok is
// false when it is not a JSON number.
func AppendNumber(b []byte, n json.Number) (_ []byte, ok bool) {
	if n == "" {
		return append(b, '0'), true
	}
	if !ValidNumber(string(n)) {
		return b, false
	}
	return append(b, n...), true
}

// ValidNumber reports whether s is a JSON number, as encoding/json checks a json.Number.
func ValidNumber(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '-' {
		s = s[1:]
		if s == "" {
			return false
		}
	}
	switch {
	case s[0] == '0':
		s = s[1:]
	case '1' <= s[0] && s[0] <= '9':
		s = skipDigits(s[1:])
	default:
		return false
	}
	if len(s) >= 2 && s[0] == '.' && isDigit(s[1]) {
		s = skipDigits(s[2:])
	}
	if len(s) >= 2 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if s[0] == '+' || s[0] == '-' {
			s = s[1:]
			if s == "" {
				return false
			}
		}
		if !isDigit(s[0]) {
			return false
		}
		s = skipDigits(s)
	}
	return s == ""
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func skipDigits(s string) string {
	for s != "" && isDigit(s[0]) {
		s = s[1:]
	}
	return s
}

// Numbers is how AppendValue writes a json.Number.
type Numbers uint8

const (
	// NumberAsWritten writes a number as encoding/json does (AppendNumber).
	NumberAsWritten Numbers = iota
	// NumberAsFloat64 writes a number as the float64 it parses to (AppendFloat), so 2, 2.0 and
	// 2e0 are alike; a number beyond float64's range is written as it is.
	NumberAsFloat64
	// NumberAsInteger writes a whole number below 2^53 in size as an integer (1, 1.0 and 1e0 are
	// all 1; -0 is 0), another integer literal as it is, and any other number in Go's shortest
	// form (strconv.FormatFloat 'g', -1). Safety's pins are computed with it: a change to its
	// output invalidates them.
	NumberAsInteger
)

// appendNumberAs appends n in the form as names. NumberAsFloat64 and NumberAsInteger are for
// decoded JSON: they check only a literal that strconv.ParseFloat refuses (as AppendNumber).
func appendNumberAs(b []byte, n json.Number, as Numbers) ([]byte, bool) {
	switch as {
	case NumberAsFloat64:
		if f, err := n.Float64(); err == nil {
			return AppendFloat(b, f)
		}
	case NumberAsInteger:
		f, err := strconv.ParseFloat(string(n), 64)
		switch {
		case err != nil: // beyond float64's range: as written
		case f == math.Trunc(f) && math.Abs(f) < 1<<53:
			return strconv.AppendInt(b, int64(f), 10), true
		case !isIntegerLiteral(string(n)):
			return strconv.AppendFloat(b, f, 'g', -1, 64), true
		}
	}
	return AppendNumber(b, n)
}

func isIntegerLiteral(s string) bool {
	if s != "" && s[0] == '-' {
		s = s[1:]
	}
	return s != "" && skipDigits(s) == ""
}

// Format is how AppendValue writes a value. The zero Format writes what encoding/json writes.
type Format struct {
	// Escaping is how strings and object keys are written.
	Escaping Escaping
	// Numbers is how a json.Number is written.
	Numbers Numbers
	// NilAsEmpty writes a nil map[string]any or []any as {} or [] rather than null.
	NilAsEmpty bool
}

// AppendValue appends v's JSON to b as f says, with object keys sorted by their bytes, as
// encoding/json sorts a map's. Decoded JSON (nil, bool, string, float64, json.Number,
// map[string]any, []any) is written directly; any other value is marshalled by encoding/json,
// whatever f says. ok is false when v holds a value encoding/json refuses (NaN, an infinity, an
// invalid json.Number, a channel, …).
func AppendValue(b []byte, v any, f Format) (_ []byte, ok bool) {
	switch t := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, t), true
	case string:
		return AppendString(b, t, f.Escaping), true
	case float64:
		return AppendFloat(b, t)
	case json.Number:
		return appendNumberAs(b, t, f.Numbers)
	case map[string]any:
		if t == nil && !f.NilAsEmpty {
			return append(b, "null"...), true
		}
		var small [8]string
		keys := small[:0]
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, k, f.Escaping)
			b = append(b, ':')
			if b, ok = AppendValue(b, t[k], f); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	case []any:
		if t == nil && !f.NilAsEmpty {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, e := range t {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = AppendValue(b, e, f); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return b, false
	}
	return append(b, raw...), true
}
