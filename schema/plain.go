package schema

import (
	"encoding/json"
	"math"
)

// plain is a tool schema simple enough to accept arguments without the validator: an object
// whose properties each have one primitive type and nothing else that constrains them, with
// required names and additionalProperties true or false. Most tools' schemas are this shape, and
// the validator allocates for every node it visits, so ValidateValue asks plain first: when plain
// accepts a value the validator would accept it too, and anything else (a value plain does not
// accept, a schema that is not plain) goes to the validator, which reports the issues. plain
// never rejects on its own.
type plain struct {
	props    map[string]primitive
	required []string
	closed   bool // additionalProperties: false
}

// primitive is a plain property's type.
type primitive uint8

const (
	primString primitive = iota + 1
	primNumber
	primInteger
	primBoolean
)

var primitives = map[string]primitive{"string": primString, "number": primNumber, "integer": primInteger, "boolean": primBoolean}

// Keywords a plain schema may hold. Annotations do not constrain a value; the drafts named are
// the ones whose meaning of the other keywords is the same (Compile refuses any other $schema).
var (
	plainRootKeys = map[string]bool{"type": true, "properties": true, "required": true, "additionalProperties": true,
		"$schema": true, "title": true, "description": true, "$comment": true}
	plainPropertyKeys = map[string]bool{"type": true, "title": true, "description": true, "$comment": true,
		"default": true, "examples": true}
	plainDrafts = map[string]bool{"http://json-schema.org/draft-07/schema#": true, "http://json-schema.org/draft-07/schema": true,
		"https://json-schema.org/draft/2020-12/schema": true}
)

// plainOf is src's plain form, or nil when src is not plain. src compiled: it is valid JSON.
func plainOf(src []byte) *plain {
	doc, err := decodeOne(src)
	if err != nil {
		return nil
	}
	root, ok := doc.(map[string]any)
	if !ok || root["type"] != "object" {
		return nil
	}
	p := &plain{props: map[string]primitive{}}
	for k, v := range root {
		if !plainRootKeys[k] {
			return nil
		}
		switch k {
		case "$schema":
			if s, ok := v.(string); !ok || !plainDrafts[s] {
				return nil
			}
		case "additionalProperties":
			allowed, ok := v.(bool)
			if !ok {
				return nil
			}
			p.closed = !allowed
		case "required":
			names, ok := v.([]any)
			if !ok {
				return nil
			}
			for _, n := range names {
				s, ok := n.(string)
				if !ok {
					return nil
				}
				p.required = append(p.required, s)
			}
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			for name, ps := range props {
				t, ok := primitiveOf(ps)
				if !ok {
					return nil
				}
				p.props[name] = t
			}
		}
	}
	return p
}

// primitiveOf is the type of a plain property's schema; ok is false when the schema is not one.
func primitiveOf(schema any) (primitive, bool) {
	m, ok := schema.(map[string]any)
	if !ok {
		return 0, false
	}
	for k := range m {
		if !plainPropertyKeys[k] {
			return 0, false
		}
	}
	name, _ := m["type"].(string)
	t, ok := primitives[name]
	return t, ok
}

// accepts reports whether v is certainly valid; false says only that the validator must decide.
func (p *plain) accepts(v any) bool {
	obj, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for _, name := range p.required {
		if _, ok := obj[name]; !ok {
			return false
		}
	}
	for name, value := range obj {
		t, ok := p.props[name]
		switch {
		case !ok && p.closed:
			return false
		case ok && !t.accepts(value):
			return false
		}
	}
	return true
}

// accepts reports whether v certainly has type t, as the validator types decoded values.
func (t primitive) accepts(v any) bool {
	switch t {
	case primString:
		_, ok := v.(string)
		return ok
	case primBoolean:
		_, ok := v.(bool)
		return ok
	case primNumber:
		switch v.(type) {
		case json.Number, float64:
			return true
		}
	case primInteger:
		switch n := v.(type) {
		case json.Number:
			return isWhole(string(n))
		case float64:
			return math.Abs(n) < 1<<53 && n == math.Trunc(n)
		}
	}
	return false
}

// isWhole reports whether a number literal is an optional minus and digits only.
func isWhole(s string) bool {
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
