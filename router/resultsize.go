package router

import (
	"unicode/utf8"

	"toolrouter/plainjson"
)

// jsonSize is the length of v's JSON as the outcome writes it (plainjson.AppendValue), counted
// without writing it whole: a value of megabytes is measured in a buffer of a few hundred bytes.
// It stops counting once past limit, so the answer is exact up to limit and only "more" beyond.
// A value of another type than decoded JSON's (an in-process server may send its own) is
// encoded to be measured.
func jsonSize(v any, limit int) int {
	var scratch [512]byte
	s := sizer{limit: limit, buf: scratch[:0]}
	s.add(v)
	return s.n
}

type sizer struct {
	limit, n int
	buf      []byte
}

func (s *sizer) add(v any) {
	if s.n > s.limit {
		return
	}
	switch t := v.(type) {
	case string:
		s.str(t)
	case map[string]any:
		if t == nil {
			s.n += len("null")
			return
		}
		s.n += 2 + max(len(t)-1, 0) + len(t) // braces, commas, colons
		for k, e := range t {
			s.str(k)
			s.add(e)
			if s.n > s.limit {
				return
			}
		}
	case []any:
		if t == nil {
			s.n += len("null")
			return
		}
		s.n += 2 + max(len(t)-1, 0)
		for _, e := range t {
			s.add(e)
			if s.n > s.limit {
				return
			}
		}
	default:
		b, _ := plainjson.AppendValue(s.buf[:0], v, plainjson.Format{})
		s.n += len(b)
	}
}

// str counts s quoted and escaped, a chunk at a time (escaping is per character, so the chunks'
// lengths add up to the whole's).
func (s *sizer) str(v string) {
	s.n += 2
	const chunk = 64
	for len(v) > 0 && s.n <= s.limit {
		end := min(chunk, len(v))
		for end < len(v) && !utf8.RuneStart(v[end]) {
			end++
		}
		s.n += len(plainjson.AppendString(s.buf[:0], v[:end], plainjson.EncodingJSON)) - 2
		v = v[end:]
	}
}
