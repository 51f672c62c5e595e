package safety

import "encoding/json"

// ForModel returns a tool's schema as a prompt shows it: without the keywords that neither
// constrain a value nor help a model fill one, which are the places a server can park text for
// the model that no user reads. Left out of every schema object of it (not of property names,
// nor of the values of default, const, enum and examples, which are data): $comment, $schema,
// $id, $vocabulary and every vendor extension (a keyword that starts with "x-" or "X-"). $ref,
// $defs, $anchor and everything else stay. The argument validator keeps using the whole schema.
//
// A schema that is not valid JSON, or has nothing to leave out, comes back as it is; the result
// shares no memory with schema when it differs.
func ForModel(schema json.RawMessage) json.RawMessage {
	if len(schema) == 0 {
		return schema
	}
	w := schemaWalker{b: schema, drop: hiddenKeyword}
	w.ws()
	if w.i == len(w.b) || w.schema("", 0) != nil || len(w.dropped) == 0 {
		return schema
	}
	out := make([]byte, 0, len(schema))
	last := 0
	for _, d := range w.dropped { // in document order, disjoint
		if d[0] < last {
			continue
		}
		out = append(out, schema[last:d[0]]...)
		last = d[1]
	}
	out = append(out, schema[last:]...)
	if !json.Valid(out) { // cannot happen; never show a broken schema
		return schema
	}
	return out
}

// hiddenKeyword reports whether ForModel leaves a keyword out.
func hiddenKeyword(key string) bool {
	switch key {
	case "$comment", "$schema", "$id", "$vocabulary":
		return true
	}
	return len(key) > 2 && (key[0] == 'x' || key[0] == 'X') && key[1] == '-'
}
