package router

import (
	"encoding/json"
	"unicode/utf8"
)

// Model answers written under a format schema are plain JSON: one object whose keys and strings
// need no unescaping, with booleans, numbers, null and, in a selection, a list of calls.
// encoding/json decodes them through reflection and allocates for every value; the readers below
// take the plain ones directly, and decline anything else (an escape, a nested value they do not
// expect, an unknown key, trailing text), which is then decoded by encoding/json as before. When
// they accept a text, the result is what encoding/json makes of it.

// plainJSON reads one text.
type plainJSON struct {
	s string
	i int
}

func (p *plainJSON) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// next skips white space and consumes c if it comes next.
func (p *plainJSON) next(c byte) bool {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// end reports whether only white space is left.
func (p *plainJSON) end() bool {
	p.space()
	return p.i == len(p.s)
}

// str reads a string without escapes, as its text (a part of the input, not a copy).
func (p *plainJSON) str() (string, bool) {
	if !p.next('"') {
		return "", false
	}
	start := p.i
	for ; p.i < len(p.s); p.i++ {
		switch c := p.s[p.i]; {
		case c == '"':
			s := p.s[start:p.i]
			p.i++
			return s, utf8.ValidString(s)
		case c == '\\' || c < 0x20:
			return "", false
		}
	}
	return "", false
}

// word reads a literal: true, false or null.
func (p *plainJSON) word(w string) bool {
	p.space()
	if len(p.s)-p.i >= len(w) && p.s[p.i:p.i+len(w)] == w {
		p.i += len(w)
		return true
	}
	return false
}

// boolean reads true or false.
func (p *plainJSON) boolean() (v, ok bool) {
	switch {
	case p.word("true"):
		return true, true
	case p.word("false"):
		return false, true
	}
	return false, false
}

// number reads a number as JSON's grammar has it, as its literal.
func (p *plainJSON) number() (json.Number, bool) {
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

// object reads an object, calling member for each key with the reader at its value; member
// reads the value and reports whether it could.
func (p *plainJSON) object(member func(key string) bool) bool {
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

// plainArguments reads phase 2's answer as decodeObject reads it into a map[string]any (numbers
// as json.Number): a plain object of strings, numbers, booleans and null.
func plainArguments(text string) (map[string]any, bool) {
	p := plainJSON{s: trimAnswer(text)}
	args := map[string]any{}
	ok := p.object(func(key string) bool {
		p.space()
		if p.i == len(p.s) {
			return false
		}
		switch c := p.s[p.i]; {
		case c == '"':
			s, ok := p.str()
			args[key] = s
			return ok
		case c == 't' || c == 'f':
			b, ok := p.boolean()
			args[key] = b
			return ok
		case c == 'n':
			args[key] = nil
			return p.word("null")
		default:
			n, ok := p.number()
			args[key] = n
			return ok
		}
	})
	if !ok || !p.end() {
		return nil, false
	}
	return args, true
}

// plainSelection reads phase 1's answer into sel as decodeObject reads it: a plain object of the
// selection's own keys, calls given as names or as objects of tool and task.
func plainSelection(text string, sel *selection) bool {
	p := plainJSON{s: trimAnswer(text)}
	seenCalls := false
	ok := p.object(func(key string) bool {
		var ok bool
		switch key {
		case "reasoning":
			sel.Reasoning, ok = p.str()
		case "tool":
			sel.Tool, ok = p.str()
		case "search":
			sel.Search, ok = p.str()
		case "use_tool":
			sel.UseTool, ok = p.boolean()
		case "needs_more":
			sel.NeedsMore, ok = p.boolean()
		case "direct":
			sel.Direct, ok = p.boolean()
		case "calls":
			// encoding/json decodes a second list over the first one's calls: left to it.
			if !seenCalls {
				seenCalls = true
				sel.Calls, ok = p.calls()
			}
		}
		return ok
	})
	return ok && p.end()
}

// calls reads a list of calls.
func (p *plainJSON) calls() ([]selectCall, bool) {
	if !p.next('[') {
		return nil, false
	}
	calls := []selectCall{} // an empty list is a list, not nil
	if p.next(']') {
		return calls, true
	}
	for {
		var c selectCall
		var ok bool
		p.space()
		if p.i < len(p.s) && p.s[p.i] == '{' {
			ok = p.object(func(key string) bool {
				var ok bool
				switch key {
				case "tool":
					c.Tool, ok = p.str()
				case "task":
					c.Task, ok = p.str()
				}
				return ok
			})
		} else {
			c.Tool, ok = p.str()
		}
		if !ok {
			return nil, false
		}
		calls = append(calls, c)
		if p.next(']') {
			return calls, true
		}
		if !p.next(',') {
			return nil, false
		}
	}
}
