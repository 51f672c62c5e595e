package answer

import (
	"toolrouter/plainjson"
	"toolrouter/router"
)

// plainBody reads a route or answer body of the shape clients send — one object of the body's
// own fields, each once, strings without escapes, whole numbers and no null — into what
// DecodeJSON decodes it to, without encoding/json's reflection and allocations. ok is false for
// any other body, which DecodeJSON then decodes and reports on: plainBody never decides anything
// DecodeJSON would decide otherwise. synthesize says whether the body may have synthesize (an
// answer body's field).
//
// A body that is not UTF-8 is not plain: the reader takes only valid UTF-8 in keys and strings,
// and only ASCII around them.
func plainBody(body []byte, synthesize bool) (req AnswerBody, ok bool) {
	p := plainjson.NewReader(body)
	var seen [6]bool // query, history, caller, max_tool_calls, deadline_ms, synthesize
	ok = p.Object(func(key []byte) bool {
		field := -1
		switch string(key) {
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
			if s, ok = p.Str(); ok {
				req.Query = &s
			}
		case 1:
			req.History, ok = plainHistory(&p)
		case 2:
			req.Caller, ok = p.Str()
		case 3:
			req.MaxToolCalls, ok = plainInt(&p)
		case 4:
			req.DeadlineMS, ok = plainInt(&p)
		case 5:
			var s string
			if s, ok = p.Str(); ok {
				mode := Synthesize(s)
				req.Synthesize = &mode
			}
		}
		return ok
	})
	if !ok || !p.End() {
		return AnswerBody{}, false
	}
	return req, true
}

// plainInt reads a whole number into a field that is nil when absent.
func plainInt(p *plainjson.Reader[[]byte]) (*int, bool) {
	n, ok := p.Int()
	if !ok {
		return nil, false
	}
	return &n, true
}

// plainHistory reads a list of messages, each an object of role and content, each once.
func plainHistory(p *plainjson.Reader[[]byte]) ([]router.Message, bool) {
	history := []router.Message{} // an empty list is a list, not nil
	ok := p.Array(func() bool {
		var m router.Message
		var role, content bool
		if !p.Object(func(key []byte) bool {
			var ok bool
			switch {
			case string(key) == "role" && !role:
				role = true
				m.Role, ok = p.Str()
			case string(key) == "content" && !content:
				content = true
				m.Content, ok = p.Str()
			}
			return ok
		}) {
			return false
		}
		history = append(history, m)
		return true
	})
	if !ok {
		return nil, false
	}
	return history, true
}
