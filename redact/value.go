package redact

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Value returns v, a decoded JSON value, with String applied to every string and every object
// key in it, however deep: a credential is matched in its decoded form, whatever characters it
// holds (a JSON encoding would have escaped ", \, <, > and &). Numbers are matched as their
// text. v is not modified: what changes is copied, and v itself is returned when nothing does.
// A value of another Go type (a struct an in-process server returned) is read as its JSON.
func (r *Redactor) Value(v any) any {
	out, _ := walk(v, r.String)
	return out
}

// CredentialsValue is Value with Credentials applied instead of String: for arguments refused for
// carrying a credential.
func (r *Redactor) CredentialsValue(v any) any {
	out, _ := walk(v, r.Credentials)
	return out
}

// JSON returns doc, a JSON document, with String applied to its values as Value does; doc itself
// when nothing changes or it is not JSON (then String applies to its text).
func (r *Redactor) JSON(doc []byte) []byte { return maskJSON(doc, r.String) }

// CredentialsJSON is JSON with Credentials applied instead of String.
func (r *Redactor) CredentialsJSON(doc []byte) []byte { return maskJSON(doc, r.Credentials) }

func maskJSON(doc []byte, mask func(string) string) []byte {
	if len(doc) == 0 {
		return doc
	}
	v, ok := decode(doc)
	if !ok {
		return []byte(mask(string(doc)))
	}
	masked, changed := walk(v, mask)
	if !changed {
		return doc
	}
	return encode(masked)
}

// Text returns s with String applied; a whole JSON object or array with escapes in it is masked
// value by value as JSON does, so that a credential escaped in it (a & written \u0026 in a URL,
// https:\/\/) is found.
func (r *Redactor) Text(s string) string {
	t := strings.TrimSpace(s)
	// Only an escape can hide a credential from String: JSON without one is read as it is.
	if len(t) > 1 && (t[0] == '{' || t[0] == '[') && strings.IndexByte(t, '\\') >= 0 {
		if v, ok := decode([]byte(t)); ok {
			if masked, changed := walk(v, r.String); changed {
				return string(encode(masked))
			}
		}
	}
	return r.String(s)
}

func decode(doc []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return nil, false
	}
	return v, true
}

func encode(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return nil
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// walk applies mask to every string and key of v, and reports whether anything changed.
func walk(v any, mask func(string) string) (any, bool) {
	switch t := v.(type) {
	case nil, bool, float64, int, int64:
		return v, false
	case string:
		m := mask(t)
		return m, m != t
	case json.Number:
		if m := mask(string(t)); m != string(t) {
			return m, true
		}
		return v, false
	case []any:
		var out []any
		for i, e := range t {
			m, changed := walk(e, mask)
			if changed && out == nil {
				out = make([]any, len(t))
				copy(out, t)
			}
			if out != nil {
				out[i] = m
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	case map[string]any:
		var out map[string]any
		for k, e := range t {
			mk := mask(k)
			m, changed := walk(e, mask)
			if (changed || mk != k) && out == nil {
				out = make(map[string]any, len(t))
				for k2, e2 := range t {
					out[k2] = e2
				}
			}
			if out != nil {
				if mk != k {
					delete(out, k)
				}
				out[mk] = m
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	// Another type: read as JSON, masked as decoded JSON.
	b, err := json.Marshal(v)
	if err != nil {
		return v, false
	}
	d, ok := decode(b)
	if !ok {
		return v, false
	}
	if m, changed := walk(d, mask); changed {
		return m, true
	}
	return v, false
}
