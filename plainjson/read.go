package plainjson

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// Reader reads one plain JSON text, a string or a byte slice. Each method skips white space
// first and reports whether it could read what it was asked for; after a false the reader is left
// part way and the text is to be read another way.
type Reader[T string | []byte] struct {
	s T
	i int
}

// NewReader returns a reader at the start of s.
func NewReader[T string | []byte](s T) Reader[T] { return Reader[T]{s: s} }

func (p *Reader[T]) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// Next consumes c if it comes next.
func (p *Reader[T]) Next(c byte) bool {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// Ahead returns the byte that comes next without consuming it; ok is false at the end.
func (p *Reader[T]) Ahead() (c byte, ok bool) {
	p.space()
	if p.i == len(p.s) {
		return 0, false
	}
	return p.s[p.i], true
}

// End reports whether only white space is left.
func (p *Reader[T]) End() bool {
	p.space()
	return p.i == len(p.s)
}

// raw reads a string without escapes, in valid UTF-8, as its part of the text.
func (p *Reader[T]) raw() (T, bool) {
	var none T
	if !p.Next('"') {
		return none, false
	}
	start, high := p.i, false
	for ; p.i < len(p.s); p.i++ {
		switch c := p.s[p.i]; {
		case c == '"':
			s := p.s[start:p.i]
			p.i++
			if high && !validUTF8(s) {
				return none, false
			}
			return s, true
		case c == '\\' || c < 0x20:
			return none, false
		case c >= utf8.RuneSelf:
			high = true
		}
	}
	return none, false
}

// validUTF8 is utf8.Valid for either type: ranging over string(s) copies nothing.
func validUTF8[T string | []byte](s T) bool {
	for i, r := range string(s) {
		// RuneError is an invalid byte, unless it is U+FFFD written out.
		if r == utf8.RuneError && (len(s)-i < 3 || s[i] != 0xEF || s[i+1] != 0xBF || s[i+2] != 0xBD) {
			return false
		}
	}
	return true
}

// Str reads a string without escapes. From a string it is a part of the text, from a byte slice
// a copy.
func (p *Reader[T]) Str() (string, bool) {
	s, ok := p.raw()
	return string(s), ok
}

// word reads a literal: true, false or null.
func (p *Reader[T]) word(w string) bool {
	p.space()
	if len(p.s)-p.i >= len(w) && string(p.s[p.i:p.i+len(w)]) == w {
		p.i += len(w)
		return true
	}
	return false
}

// Bool reads true or false.
func (p *Reader[T]) Bool() (v, ok bool) {
	switch {
	case p.word("true"):
		return true, true
	case p.word("false"):
		return false, true
	}
	return false, false
}

// Null reads null.
func (p *Reader[T]) Null() bool { return p.word("null") }

// Number reads a number as JSON's grammar has it, as its literal.
func (p *Reader[T]) Number() (json.Number, bool) {
	p.space()
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.i < len(p.s) && p.s[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.s) && p.s[p.i] == '0':
		p.i++
	case digits() == 0:
		return "", false
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return "", false
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return "", false
		}
	}
	return json.Number(p.s[start:p.i]), true
}

// Int reads an integer literal (JSON's grammar, no fraction or exponent) that fits an int.
func (p *Reader[T]) Int() (int, bool) {
	p.space()
	start := p.i
	if p.i < len(p.s) && p.s[p.i] == '-' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	if p.i == digits || p.s[digits] == '0' && p.i-digits > 1 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(p.s[start:p.i]), 10, strconv.IntSize)
	if err != nil {
		return 0, false
	}
	return int(n), true
}

// Object reads an object, calling member for each key with the reader at its value; member reads
// the value and reports whether it could. The key is a part of the text (from a byte slice,
// compare string(key), which copies nothing).
func (p *Reader[T]) Object(member func(key T) bool) bool {
	if !p.Next('{') {
		return false
	}
	if p.Next('}') {
		return true
	}
	for {
		key, ok := p.raw()
		if !ok || !p.Next(':') || !member(key) {
			return false
		}
		if p.Next('}') {
			return true
		}
		if !p.Next(',') {
			return false
		}
	}
}

// Array reads an array, calling element for each element with the reader at it; element reads
// the element and reports whether it could.
func (p *Reader[T]) Array(element func() bool) bool {
	if !p.Next('[') {
		return false
	}
	if p.Next(']') {
		return true
	}
	for {
		if !element() {
			return false
		}
		if p.Next(']') {
			return true
		}
		if !p.Next(',') {
			return false
		}
	}
}
