// Package prefill writes the parts of a JSON answer that its format schema forces. Under a format
// the model server samples every token of the answer, even the ones the grammar allows no
// alternative to: the keys, the quotes, the commas and brackets, each a forward pass and a grammar
// check over the whole vocabulary. A server that continues a final assistant message (Ollama's
// templates leave that turn open) constrains only the continuation, so the caller can write the
// forced text itself and ask the model for each value it decides, under that value's schema: an
// answer becomes a short sequence of continuations, each reusing the server's prompt cache.
//
// The package owns the answer's text (Answer), which formats can be written so (ObjectValues),
// what a continuation must look like (Continued), and what is known of a model's template
// (Template). It makes no model call itself: the router and the chat completions pass theirs.
package prefill

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
)

// ErrNotContinued means the model server answered a continuation with text that does not continue
// it: it ignores a final assistant message. The caller then stops prefilling (Template.Stop) and
// asks for whole objects.
var ErrNotContinued = errors.New("the model server did not continue the answer")

// Kind is how a continuation's value ends.
type Kind int

const (
	// Any ends where the grammar lets the model end its turn.
	Any Kind = iota
	// Bool is true or false: the first token decides (no two of its candidates share a first
	// character), so the call asks for one token.
	Bool
	// List is an array of names without "]": the call stops at the first "]", and no end of turn
	// is sampled.
	List
)

// Options are the model options a continuation of kind adds to the call's: one token for a
// boolean, a stop at "]" (after the configured stops) for a list, none otherwise.
func Options(kind Kind, stops []string) map[string]any {
	switch kind {
	case Bool:
		return map[string]any{"num_predict": 1}
	case List:
		return map[string]any{"stop": append(slices.Clip(stops), "]")}
	}
	return nil
}

// Continued is the value a continuation wrote, when text is one of kind: a boolean cut after its
// first token is completed from it, a list cut at its stop gets its "]" back.
func Continued(text string, kind Kind) (string, bool) {
	t := strings.TrimSpace(text)
	switch kind {
	case Bool:
		for _, v := range []string{"true", "false"} {
			if t != "" && (strings.HasPrefix(v, t) || strings.HasPrefix(t, v) && strings.TrimSpace(t[len(v):]) == "") {
				return v, true
			}
		}
		return "", false
	case List:
		if !strings.HasPrefix(t, "[") {
			return "", false
		}
		if !json.Valid([]byte(t)) {
			t += "]"
		}
	}
	if t == "" || !json.Valid([]byte(t)) {
		return "", false
	}
	return t, true
}

// Answer is a JSON object answer written by parts: the keys and punctuation by the caller, the
// values by the model.
type Answer struct{ b strings.Builder }

// Key writes the next key of the object (and the "{" or "," before it).
func (a *Answer) Key(k string) {
	if a.b.Len() == 0 {
		a.b.WriteByte('{')
	} else {
		a.b.WriteByte(',')
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the key as the schema's grammar writes it
	_ = enc.Encode(k)
	a.b.Write(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	a.b.WriteByte(':')
}

// Literal writes a value (one the model wrote, or one it does not decide).
func (a *Answer) Literal(v string) { a.b.WriteString(v) }

// String is the answer so far: what the next continuation continues.
func (a *Answer) String() string { return a.b.String() }

// Close ends the object and returns the whole answer.
func (a *Answer) Close() string {
	a.b.WriteByte('}')
	return a.b.String()
}

// Value is one property of an object format that a continuation writes: its key, the format of
// its value, and the JSON type the value must have ("" when the format does not say one plainly).
type Value struct {
	Key, Type string
	Format    []byte
}

// objectKeys are the keys an object format may have for its text to be written by a continuation.
var objectKeys = map[string]bool{"type": true, "properties": true, "required": true, "additionalProperties": true,
	"$defs": true, "description": true, "title": true}

// ObjectValues splits an object format whose text is fixed but for its values (an object whose
// properties are all required, no other allowed) into its properties, in the order of the
// format's text, which is the order the grammar writes them in. A value's format carries the
// root's $defs. false for any other format: its answer is a whole object.
func ObjectValues(format []byte) ([]Value, bool) {
	root, vals, ok := orderedObject(format)
	if !ok {
		return nil, false
	}
	for _, k := range root {
		if !objectKeys[k] {
			return nil, false
		}
	}
	var typ string
	if json.Unmarshal(vals["type"], &typ) != nil || typ != "object" {
		return nil, false
	}
	if extra, ok := vals["additionalProperties"]; ok && strings.TrimSpace(string(extra)) != "false" {
		return nil, false
	}
	keys, props, ok := orderedObject(vals["properties"])
	var required []string
	if !ok || len(keys) == 0 || json.Unmarshal(vals["required"], &required) != nil || len(required) != len(keys) {
		return nil, false
	}
	defs := vals["$defs"]
	out := make([]Value, len(keys))
	for i, k := range keys {
		if !slices.Contains(required, k) {
			return nil, false
		}
		sub := bytes.TrimSpace(props[k])
		if len(sub) < 2 || sub[0] != '{' {
			return nil, false
		}
		var t struct {
			Type any `json:"type"`
		}
		_ = json.Unmarshal(sub, &t)
		v := Value{Key: k, Format: sub}
		v.Type, _ = t.Type.(string)
		if defs != nil {
			f := []byte(`{"$defs":`)
			f = append(f, defs...)
			if rest := bytes.TrimSpace(sub[1:]); len(rest) > 0 && rest[0] != '}' {
				f = append(f, ',')
			}
			v.Format = append(f, sub[1:]...)
		}
		out[i] = v
	}
	return out, true
}

// orderedObject reads a JSON object's keys in the order of its text, and their values.
func orderedObject(raw []byte) ([]string, map[string]json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, false
	}
	var keys []string
	vals := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		k, isKey := t.(string)
		if err != nil || !isKey {
			return nil, nil, false
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return nil, nil, false
		}
		keys = append(keys, k)
		vals[k] = v
	}
	return keys, vals, true
}

// Object writes an object answer value by value (see ObjectValues) into a: it writes each key and
// asks ask for the value after it, which ask returns as Continued read it (ask makes the model
// call; a has the answer so far). A value whose JSON type is not its format's is ErrNotContinued:
// a server that ignores the answer so far writes a whole object instead. It returns the whole
// answer.
func Object(ctx context.Context, a *Answer, values []Value, ask func(context.Context, Value) (string, error)) (string, error) {
	for _, v := range values {
		a.Key(v.Key)
		got, err := ask(ctx, v)
		if err != nil {
			return "", err
		}
		if !OfType(got, v.Type) {
			return "", ErrNotContinued
		}
		a.Literal(got)
	}
	return a.Close(), nil
}

// OfType reports whether a JSON value's text is of the JSON Schema type typ ("": any).
func OfType(v, typ string) bool {
	if typ == "" || v == "" {
		return typ == "" && v != ""
	}
	switch v[0] {
	case '{':
		return typ == "object"
	case '[':
		return typ == "array"
	case '"':
		return typ == "string"
	case 't', 'f':
		return typ == "boolean"
	case 'n':
		return typ == "null"
	}
	return typ == "number" || typ == "integer"
}
