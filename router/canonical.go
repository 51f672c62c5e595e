package router

import "toolrouter/plainjson"

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
	b, ok := plainjson.AppendValue(b, args, canonicalJSON)
	if !ok {
		b = b[:n]
	}
	return string(b)
}

// canonicalJSON is how canonicalCall writes the arguments: as encoding/json writes them once
// normalised, each json.Number as the float64 it parses to (so 2, 2.0 and 2e0 are alike) and a
// nil object or list as an empty one.
var canonicalJSON = plainjson.Format{Numbers: plainjson.NumberAsFloat64, NilAsEmpty: true}
