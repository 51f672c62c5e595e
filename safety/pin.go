package safety

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	"toolrouter/plainjson"
)

// Pin is the hex SHA-256 of Canonical(def): the value to record when a tool is first seen (or to
// put in config) and to compare on every later listing. Equal definitions have equal pins; any
// change to the name, title, description, input schema or annotations changes it.
func Pin(def Definition) string {
	sum := sha256.Sum256(Canonical(def))
	return hex.EncodeToString(sum[:])
}

// Canonical is the byte string Pin hashes, version 1 (changing it invalidates stored pins). It is
// one JSON object with exactly these keys, in this order:
//
//	{"annotations":A,"description":S,"inputSchema":J,"name":S,"title":S}
//
// where S is a JSON string, A is null when the annotations are absent or empty and otherwise an
// object of the set fields among destructiveHint, idempotentHint, openWorldHint, readOnlyHint and
// title, and J is the input schema in canonical JSON, or null when it is empty. Canonical JSON:
//
//   - no whitespace between tokens;
//   - object keys sorted by their UTF-8 bytes; a key given twice keeps its last value, as in
//     encoding/json;
//   - strings escape only '"', '\\' and the controls below U+0020 (as \b \t \n \f \r or \u00XX);
//     everything else, invisible characters included, is written as raw UTF-8, and invalid UTF-8
//     becomes U+FFFD;
//   - numbers: an integral value below 2^53 in magnitude is written as an integer (1, 1.0 and 1e0
//     are all 1; -0 is 0); other numbers keep an integer literal as written and otherwise use Go's
//     shortest float form (strconv.FormatFloat 'g', -1).
//
// A schema that is not valid JSON is kept as the key "inputSchemaInvalid" holding the standard
// base64 of its raw bytes, in place of "inputSchema", so that it still pins.
//
// Unicode is not normalised: a definition that gains an invisible character gets a new pin.
func Canonical(def Definition) []byte {
	b := make([]byte, 0, 96+len(def.Description)+len(def.InputSchema))
	b = append(b, `{"annotations":`...)
	b = appendAnnotations(b, def.Annotations)
	b = append(b, `,"description":`...)
	b = appendString(b, def.Description)
	schema := bytes.TrimSpace(def.InputSchema)
	switch v, err := decodeJSON(schema); {
	case len(schema) == 0:
		b = append(b, `,"inputSchema":null`...)
	case err != nil:
		b = append(b, `,"inputSchemaInvalid":`...)
		b = appendString(b, base64.StdEncoding.EncodeToString(schema))
	default:
		b = append(b, `,"inputSchema":`...)
		b = appendValue(b, v)
	}
	b = append(b, `,"name":`...)
	b = appendString(b, def.Name)
	b = append(b, `,"title":`...)
	b = appendString(b, def.Title)
	return append(b, '}')
}

// decodeJSON decodes exactly one JSON value, keeping numbers as written.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

func appendAnnotations(b []byte, a *Annotations) []byte {
	if a.empty() {
		return append(b, "null"...)
	}
	b = append(b, '{')
	n := 0
	field := func(key string) {
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = appendString(b, key)
		b = append(b, ':')
	}
	hint := func(key string, v *bool) {
		if v != nil {
			field(key)
			b = strconv.AppendBool(b, *v)
		}
	}
	// Sorted by key.
	hint("destructiveHint", a.DestructiveHint)
	hint("idempotentHint", a.IdempotentHint)
	hint("openWorldHint", a.OpenWorldHint)
	hint("readOnlyHint", a.ReadOnlyHint)
	if a.Title != "" {
		field("title")
		b = appendString(b, a.Title)
	}
	return append(b, '}')
}

// pinJSON is how Canonical writes the input schema: strings as appendString writes them and
// numbers in the form Canonical documents. decodeJSON yields no nil object or list; were there
// one, it would be empty.
var pinJSON = plainjson.Format{Escaping: plainjson.Minimal, Numbers: plainjson.NumberAsInteger, NilAsEmpty: true}

// appendValue appends a value decodeJSON made in canonical JSON.
func appendValue(b []byte, v any) []byte {
	b, ok := plainjson.AppendValue(b, v, pinJSON)
	if !ok {
		// decodeJSON yields only values AppendValue writes.
		panic("safety: unexpected JSON value")
	}
	return b
}

// appendString appends s as a JSON string, escaping only what JSON requires (see Canonical).
// Strip uses it too, so the strings it writes back into a schema look like the ones it replaced.
func appendString(b []byte, s string) []byte {
	return plainjson.AppendString(b, s, plainjson.Minimal)
}
