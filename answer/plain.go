package answer

import (
	"strconv"
	"unicode/utf8"

	"toolrouter/router"
)

// plainBody reads a route or answer body of the shape clients send — one object of the body's
// own fields, each once, strings without escapes, whole numbers and no null — into what
// DecodeJSON decodes it to, without encoding/json's reflection and allocations. ok is false for
// any other body, which DecodeJSON then decodes and reports on: plainBody never decides anything
// DecodeJSON would decide otherwise. synthesize says whether the body may have synthesize (an
// answer body's field).
func plainBody(body []byte, synthesize bool) (req AnswerBody, ok bool) {
	if !utf8.Valid(body) {
		return AnswerBody{}, false
	}
	p := bodyReader{b: body}
	var seen [6]bool // query, history, caller, max_tool_calls, deadline_ms, synthesize
	ok = p.object(func(key string) bool {
		field := -1
		switch key {
		case "query":
			field = 0
		case "history":
			field = 1
		case "caller":
			field = 2
		case "max_tool_calls":
			field = 3
		case "deadline_ms":
			field = 4
		case "synthesize":
			if synthesize {
				field = 5
			}
		}
		if field < 0 || seen[field] {
			return false // unknown, or a second value encoding/json would decode over the first
		}
		seen[field] = true
		var ok bool
		switch field {
		case 0:
			var s string
			if s, ok = p.str(); ok {
				req.Query = &s
			}
		case 1:
			req.History, ok = p.history()
		case 2:
			req.Caller, ok = p.str()
		case 3:
			req.MaxToolCalls, ok = p.whole()
		case 4:
			req.DeadlineMS, ok = p.whole()
		case 5:
			var s string
			if s, ok = p.str(); ok {
				mode := Synthesize(s)
				req.Synthesize = &mode
			}
		}
		return ok
	})
	if !ok || !p.end() {
		return AnswerBody{}, false
	}
	return req, true
}

// bodyReader reads the plain JSON of a body (plainBody).
type bodyReader struct {
	b []byte
	i int
}

func (p *bodyReader) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

// next skips white space and consumes c if it comes next.
func (p *bodyReader) next(c byte) bool {
	p.space()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// end reports whether only white space is left.
func (p *bodyReader) end() bool {
	p.space()
	return p.i == len(p.b)
}

// str reads a string without escapes (the body is valid UTF-8), as a copy.
func (p *bodyReader) str() (string, bool) {
	if !p.next('"') {
		return "", false
	}
	for start := p.i; p.i < len(p.b); p.i++ {
		switch c := p.b[p.i]; {
		case c == '"':
			p.i++
			return string(p.b[start : p.i-1]), true
		case c == '\\' || c < 0x20:
			return "", false
		}
	}
	return "", false
}

// whole reads an integer literal (JSON's grammar, no fraction or exponent) that fits an int.
func (p *bodyReader) whole() (*int, bool) {
	p.space()
	start := p.i
	if p.i < len(p.b) && p.b[p.i] == '-' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	if p.i == digits || p.b[digits] == '0' && p.i-digits > 1 {
		return nil, false
	}
	n, err := strconv.ParseInt(string(p.b[start:p.i]), 10, strconv.IntSize)
	if err != nil {
		return nil, false
	}
	v := int(n)
	return &v, true
}

// object reads an object, calling member for each key with the reader at its value; member
// reads the value and reports whether it could.
func (p *bodyReader) object(member func(key string) bool) bool {
	if !p.next('{') {
		return false
	}
	if p.next('}') {
		return true
	}
	for {
		key, ok := p.str()
		if !ok || !p.next(':') || !member(key) {
			return false
		}
		if p.next('}') {
			return true
		}
		if !p.next(',') {
			return false
		}
	}
}

// history reads a list of messages, each an object of role and content.
func (p *bodyReader) history() ([]router.Message, bool) {
	if !p.next('[') {
		return nil, false
	}
	history := []router.Message{} // an empty list is a list, not nil
	if p.next(']') {
		return history, true
	}
	for {
		var m router.Message
		var role, content bool
		ok := p.object(func(key string) bool {
			var ok bool
			switch {
			case key == "role" && !role:
				role = true
				m.Role, ok = p.str()
			case key == "content" && !content:
				content = true
				m.Content, ok = p.str()
			}
			return ok
		})
		if !ok {
			return nil, false
		}
		history = append(history, m)
		if p.next(']') {
			return history, true
		}
		if !p.next(',') {
			return nil, false
		}
	}
}
