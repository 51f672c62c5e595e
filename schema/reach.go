package schema

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// maxReachRefs bounds the internal $refs Reaches follows on one pointer, against a schema whose
// references loop.
const maxReachRefs = 64

// Reaches reports, as an error, why ptr (a JSON Pointer, "" for the whole value) cannot point at
// anything in a value valid against s, read as an output schema: a token names a field the
// object's declared properties do not list (unless additionalProperties or patternProperties
// admit more), an element of a value that is never a list, or goes into a value that is never
// an object or a list. Where the schema says nothing (no type, no properties, a $ref it cannot
// follow), the pointer is admitted: only what the schema rules out is an error.
func (s *Schema) Reaches(ptr string) error {
	if ptr == "" {
		return nil
	}
	var root any
	if err := json.Unmarshal(s.raw, &root); err != nil {
		return nil // compiled from these bytes, so this does not happen
	}
	tokens := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, t := range tokens {
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	refs := 0
	return reach(root, root, tokens, "", &refs)
}

// reach walks node along tokens; at is the pointer walked so far, for the message.
func reach(root, node any, tokens []string, at string, refs *int) error {
	if len(tokens) == 0 {
		return nil
	}
	m, ok := node.(map[string]any)
	if !ok {
		if b, isBool := node.(bool); isBool && !b {
			return fmt.Errorf("the output schema admits no value at %s", orRoot(at))
		}
		return nil
	}
	if ref, ok := m["$ref"].(string); ok && strings.HasPrefix(ref, "#") {
		if *refs++; *refs > maxReachRefs {
			return nil
		}
		if target, ok := localRef(root, ref); ok {
			if err := reach(root, target, tokens, at, refs); err != nil {
				return err
			}
		}
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if branches, ok := m[kw].([]any); ok && len(branches) > 0 {
			var first error
			admitted := false
			for _, b := range branches {
				err := reach(root, b, tokens, at, refs)
				if err == nil {
					admitted = true
					break
				}
				if first == nil {
					first = err
				}
			}
			if !admitted {
				return first
			}
		}
	}
	if branches, ok := m["allOf"].([]any); ok {
		for _, b := range branches {
			if err := reach(root, b, tokens, at, refs); err != nil {
				return err
			}
		}
	}
	tok, next := tokens[0], at+"/"+escape(tokens[0])
	types := typesOf(m["type"])
	if len(types) > 0 && !types["object"] && !types["array"] {
		return fmt.Errorf("the output schema makes %s a %s, which has no %q", orRoot(at), joinTypes(types), tok)
	}
	if idx, err := strconv.Atoi(tok); err == nil && idx >= 0 && (len(types) == 0 || types["array"]) {
		if prefix, ok := m["prefixItems"].([]any); ok && idx < len(prefix) {
			return reach(root, prefix[idx], tokens[1:], next, refs)
		}
		if items, ok := m["items"]; ok {
			return reach(root, items, tokens[1:], next, refs)
		}
		if types["array"] {
			return nil
		}
	}
	if len(types) > 0 && !types["object"] {
		return fmt.Errorf("the output schema makes %s a list, which has no element %q", orRoot(at), tok)
	}
	props, _ := m["properties"].(map[string]any)
	if p, ok := props[tok]; ok {
		return reach(root, p, tokens[1:], next, refs)
	}
	if pats, ok := m["patternProperties"].(map[string]any); ok && len(pats) > 0 {
		return nil // matching tok against the patterns is the validator's; admit it
	}
	switch add := m["additionalProperties"].(type) {
	case map[string]any:
		return reach(root, add, tokens[1:], next, refs)
	case bool:
		if add {
			return nil
		}
	default:
		if len(props) == 0 {
			return nil // an object the schema says nothing about
		}
	}
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return fmt.Errorf("the output schema admits no field at %s", orRoot(at))
	}
	return fmt.Errorf("the output schema has no field %q at %s (its fields: %s)", tok, orRoot(at), clip(strings.Join(names, ", ")))
}

// localRef resolves an internal reference ("#", "#/$defs/x") in root.
func localRef(root any, ref string) (any, bool) {
	ptr := strings.TrimPrefix(ref, "#")
	if ptr == "" {
		return root, true
	}
	node := root
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch t := node.(type) {
		case map[string]any:
			n, ok := t[tok]
			if !ok {
				return nil, false
			}
			node = n
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(t) {
				return nil, false
			}
			node = t[i]
		default:
			return nil, false
		}
	}
	return node, true
}

// typesOf is the set a "type" keyword names (empty when absent or malformed).
func typesOf(v any) map[string]bool {
	out := map[string]bool{}
	switch t := v.(type) {
	case string:
		out[t] = true
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok {
				out[s] = true
			}
		}
	}
	if out["integer"] {
		out["number"] = true
	}
	return out
}

func joinTypes(types map[string]bool) string {
	names := make([]string, 0, len(types))
	for k := range types {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, " or ")
}

func orRoot(at string) string {
	if at == "" {
		return "the top"
	}
	return at
}

func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
