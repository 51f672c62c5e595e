package router

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// canonicalCall is the dedup key of a call: the tool and its arguments in canonical JSON (sorted
// keys, numbers normalised: json.Number and float64 of the same number alike). The JSON is what
// encoding/json writes for the normalised arguments, written directly: arguments are decoded
// JSON (objects, arrays, strings, numbers, booleans, null), which json.Marshal would reach through
// reflection and a sorted copy of each object's keys. Any other value is marshalled by
// encoding/json; a value it cannot marshal leaves the arguments' JSON empty, as json.Marshal's
// error did.
func canonicalCall(server, tool string, args map[string]any) string {
	var buf [256]byte
	b := append(buf[:0], server...)
	b = append(b, '.')
	b = append(b, tool...)
	b = append(b, ' ')
	n := len(b)
	b, ok := appendJSON(b, args, true)
	if !ok {
		b = b[:n]
	}
	return string(b)
}

// appendJSON appends v's JSON to b as encoding/json writes it, with keys sorted; canonical also
// normalises numbers (a json.Number is written as the float64 it parses to, so 2, 2.0 and 2e0
// are alike). ok is false when v holds a value encoding/json refuses (NaN, an infinity, an
// invalid json.Number, a channel, …).
func appendJSON(b []byte, v any, canonical bool) (_ []byte, ok bool) {
	switch t := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, t), true
	case string:
		return appendJSONString(b, t), true
	case float64:
		return appendJSONFloat(b, t)
	case json.Number:
		if !canonical {
			return appendNumber(b, t)
		}
		if f, err := t.Float64(); err == nil {
			return appendJSONFloat(b, f)
		}
	case map[string]any:
		if t == nil && !canonical {
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
			b = appendJSONString(b, k)
			b = append(b, ':')
			if b, ok = appendJSON(b, t[k], canonical); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	case []any:
		if t == nil && !canonical {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, e := range t {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendJSON(b, e, canonical); !ok {
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

// appendJSONFloat appends f as encoding/json writes a float64.
func appendJSONFloat(b []byte, f float64) ([]byte, bool) {
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

const hexDigits = "0123456789abcdef"

// appendJSONString appends s quoted as encoding/json writes a string (HTML characters escaped,
// invalid UTF-8 replaced by \ufffd).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
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
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
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
