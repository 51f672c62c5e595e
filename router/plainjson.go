package router

import "toolrouter/plainjson"

// Model answers written under a format schema are plain JSON: one object whose keys and strings
// need no unescaping, with booleans, numbers, null and, in a selection, a list of calls.
// encoding/json decodes them through reflection and allocates for every value; the readers below
// take the plain ones directly, and decline anything else (an escape, a nested value they do not
// expect, an unknown key, trailing text), which is then decoded by encoding/json as before. When
// they accept a text, the result is what encoding/json makes of it.

// plainArguments reads phase 2's answer as decodeObject reads it into a map[string]any (numbers
// as json.Number): a plain object of strings, numbers, booleans and null.
func plainArguments(text string) (map[string]any, bool) {
	p := plainjson.NewReader(trimAnswer(text))
	args := map[string]any{}
	ok := p.Object(func(key string) bool {
		c, ok := p.Ahead()
		if !ok {
			return false
		}
		switch {
		case c == '"':
			s, ok := p.Str()
			args[key] = s
			return ok
		case c == 't' || c == 'f':
			b, ok := p.Bool()
			args[key] = b
			return ok
		case c == 'n':
			args[key] = nil
			return p.Null()
		default:
			n, ok := p.Number()
			args[key] = n
			return ok
		}
	})
	if !ok || !p.End() {
		return nil, false
	}
	return args, true
}

// plainSelection reads phase 1's answer into sel as decodeObject reads it: a plain object of the
// selection's own keys, calls given as names or as objects of tool and task.
func plainSelection(text string, sel *selection) bool {
	p := plainjson.NewReader(trimAnswer(text))
	seenCalls := false
	ok := p.Object(func(key string) bool {
		var ok bool
		switch key {
		case "reasoning":
			sel.Reasoning, ok = p.Str()
		case "tool":
			sel.Tool, ok = p.Str()
		case "search":
			sel.Search, ok = p.Str()
		case "use_tool":
			sel.UseTool, ok = p.Bool()
		case "needs_more":
			sel.NeedsMore, ok = p.Bool()
		case "direct":
			sel.Direct, ok = p.Bool()
		case "calls":
			// encoding/json decodes a second list over the first one's calls: left to it.
			if !seenCalls {
				seenCalls = true
				sel.Calls, ok = plainCalls(&p)
			}
		}
		return ok
	})
	return ok && p.End()
}

// plainCalls reads a list of calls, each a name or an object of tool and task.
func plainCalls(p *plainjson.Reader[string]) ([]selectCall, bool) {
	calls := []selectCall{} // an empty list is a list, not nil
	ok := p.Array(func() bool {
		var c selectCall
		var ok bool
		if next, _ := p.Ahead(); next == '{' {
			ok = p.Object(func(key string) bool {
				var ok bool
				switch key {
				case "tool":
					c.Tool, ok = p.Str()
				case "task":
					c.Task, ok = p.Str()
				}
				return ok
			})
		} else {
			c.Tool, ok = p.Str()
		}
		if !ok {
			return false
		}
		calls = append(calls, c)
		return true
	})
	if !ok {
		return nil, false
	}
	return calls, true
}
