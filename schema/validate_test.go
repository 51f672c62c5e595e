package schema

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func mustCompile(t testing.TB, raw string) *Schema {
	t.Helper()
	s, err := Compile([]byte(raw))
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return s
}

func issuesOf(t *testing.T, err error) []Issue {
	t.Helper()
	if err == nil {
		return nil
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("got error %T %v, want *ValidationError", err, err)
	}
	return ve.Issues
}

func TestValidate(t *testing.T) {
	multi := mustCompile(t, `{
		"type": "object",
		"properties": {
			"a": {"type": "number"},
			"b": {"type": "string"},
			"c": {"anyOf": [{"type": "string"}, {"type": "null"}]},
			"d": {"enum": ["x", "y"]},
			"e": {"type": "integer", "minimum": 3},
			"f": {"$ref": "#/$defs/f"},
			"a/b": {"type": "boolean"},
			"x y": {"type": "boolean"}
		},
		"$defs": {"f": {"type": "array", "items": {"type": "string"}, "maxItems": 1}},
		"required": ["a", "b", "z"],
		"additionalProperties": false
	}`)
	tests := []struct {
		name string
		s    *Schema
		args string
		want []Issue
	}{
		{name: "valid", s: mustCompile(t, typicalSchema), args: `{"path":"/tmp","limit":10,"mode":"read"}`},
		{
			name: "every leaf reported, sorted by path",
			s:    multi,
			args: `{"a":"s","c":1,"d":"q","e":1,"f":[1,2],"a/b":0,"x y":1,"zz":1,"q/r":2}`,
			want: []Issue{
				{"/", "missing properties: 'b', 'z'"},
				{"/", "properties 'q/r', 'zz' are not allowed"},
				{"/a", "expected number, but got string"},
				{"/a~1b", "expected boolean, but got number"},
				{"/c", "expected null, but got number"},
				{"/c", "expected string, but got number"},
				{"/d", `value must be one of "x", "y"`},
				{"/e", "must be >= 3 but found 1"},
				{"/f", "at most 1 items allowed, but found 2"},
				{"/f/0", "expected string, but got number"},
				{"/f/1", "expected string, but got number"},
				{"/x y", "expected boolean, but got number"},
			},
		},
		{
			name: "single extra property",
			s:    mustCompile(t, typicalSchema),
			args: `{"path":"p","nope":1}`,
			want: []Issue{{"/", "property 'nope' is not allowed"}},
		},
		{
			name: "duplicate leaves deduped",
			s:    mustCompile(t, `{"type":"object","properties":{"v":{"anyOf":[{"type":"string"},{"type":"string","minLength":1}]}}}`),
			args: `{"v":5}`,
			want: []Issue{{"/v", "expected string, but got number"}},
		},
		{
			name: "false subschema",
			s:    mustCompile(t, `{"type":"object","properties":{"v":false}}`),
			args: `{"v":5}`,
			want: []Issue{{"/v", "not allowed"}},
		},
		{name: "empty input", s: multi, args: ``, want: []Issue{{"/", "arguments are empty; expected a JSON object"}}},
		{name: "null", s: multi, args: `null`, want: []Issue{{"/", "expected object, but got null"}}},
		{name: "array", s: multi, args: `[1]`, want: []Issue{{"/", "expected object, but got array"}}},
		{name: "string", s: multi, args: `"{}"`, want: []Issue{{"/", "expected object, but got string"}}},
		{name: "number", s: multi, args: `12`, want: []Issue{{"/", "expected object, but got number"}}},
		{name: "truncated", s: multi, args: `{"a":`, want: []Issue{{"/", "arguments are not valid JSON: unexpected EOF"}}},
		{name: "trailing garbage", s: mustCompile(t, `{}`), args: `{"a":1} x`, want: []Issue{{"/", "unexpected data after the JSON object"}}},
		{name: "trailing object", s: mustCompile(t, `{}`), args: `{"a":1}{"b":2}`, want: []Issue{{"/", "unexpected data after the JSON object"}}},
		{name: "trailing bracket", s: mustCompile(t, `{}`), args: `{"a":1}]`, want: []Issue{{"/", "unexpected data after the JSON object"}}},
		{name: "trailing whitespace ok", s: mustCompile(t, `{}`), args: "{\"a\":1} \n\t"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := tt.s.Validate([]byte(tt.args))
			got := issuesOf(t, err)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got issues %q, want %q", got, tt.want)
			}
			if err == nil && obj == nil {
				t.Error("got nil object for valid args, want the decoded object")
			}
			if err != nil && obj != nil {
				t.Errorf("got object %v with error, want nil", obj)
			}
		})
	}
}

func TestValidationErrorString(t *testing.T) {
	tests := []struct {
		name string
		e    *ValidationError
		want string
	}{
		{"two", &ValidationError{Issues: []Issue{{"/a", "expected number, but got string"}, {"/", "missing properties: 'b'"}}},
			"at /a: expected number, but got string; at /: missing properties: 'b'"},
		{"none", &ValidationError{}, "invalid arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.e.Error(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// The order of the library's causes and of additionalProperties names follows map iteration; the
// rendered error must not.
func TestValidateStableOrder(t *testing.T) {
	s := mustCompile(t, `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"},"c":{"type":"string"},"d":{"type":"string"}},"additionalProperties":false}`)
	args := []byte(`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8}`)
	_, err := s.Validate(args)
	if err == nil {
		t.Fatal("got nil error, want issues")
	}
	want := err.Error()
	for range 50 {
		_, err := s.Validate(args)
		if got := err.Error(); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
}

func TestValidatePrecision(t *testing.T) {
	const big = "9007199254740993" // 2^53+1: not representable as float64
	tests := []struct {
		name    string
		schema  string
		args    string
		wantErr bool
	}{
		{"integer kept exact", `{"type":"object","properties":{"id":{"type":"integer"}}}`, `{"id":` + big + `}`, false},
		{"const matches exactly", `{"type":"object","properties":{"id":{"const":` + big + `}}}`, `{"id":` + big + `}`, false},
		{"neighbour rejected", `{"type":"object","properties":{"id":{"const":` + big + `}}}`, `{"id":9007199254740992}`, true},
		{"maximum exact", `{"type":"object","properties":{"id":{"maximum":9007199254740992}}}`, `{"id":` + big + `}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := mustCompile(t, tt.schema).Validate([]byte(tt.args))
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			got, ok := obj["id"].(json.Number)
			if !ok || got.String() != big {
				t.Errorf("got %#v, want json.Number(%s)", obj["id"], big)
			}
		})
	}
}

func TestValidateValue(t *testing.T) {
	s := mustCompile(t, typicalSchema)
	tests := []struct {
		name string
		v    any
		want []Issue
	}{
		{"float64 numbers", map[string]any{"path": "p", "limit": float64(3)}, nil},
		{"json.Number", map[string]any{"path": "p", "limit": json.Number("3")}, nil},
		{"float64 invalid", map[string]any{"path": "p", "limit": 2.5}, []Issue{{"/limit", "expected integer, but got number"}}},
		{"not an object", []any{"p"}, []Issue{{"/", "expected object, but got array"}}},
		{"non-JSON Go value", map[string]any{"path": struct{}{}}, []Issue{{"/", "invalid jsonType: struct {}"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := issuesOf(t, s.ValidateValue(tt.v))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got issues %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNormalise(t *testing.T) {
	tests := []struct{ in, want string }{
		{"additionalProperties 'b', 'a' not allowed", "properties 'a', 'b' are not allowed"},
		{`additionalProperties 'it\'s', 'a, b' not allowed`, `properties 'a, b', 'it\'s' are not allowed`},
		{"minimum 2 items required, but found 1 items", "at least 2 items required, but found 1"},
		{"multi\nline   message", "multi line message"},
		{"", "invalid value"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := normalise(tt.in); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	long := make([]byte, 1000)
	for i := range long {
		long[i] = 'x'
	}
	if got := normalise(string(long)); len(got) != maxMessageLen+3 {
		t.Errorf("got length %d, want %d", len(got), maxMessageLen+3)
	}
}

func BenchmarkValidateCached(b *testing.B) {
	c := NewCache()
	k := Key{Server: "fs", Tool: "read"}
	raw := []byte(typicalSchema)
	if _, err := c.Compile(k, raw); err != nil {
		b.Fatal(err)
	}
	args := []byte(`{"path":"/var/log/syslog","limit":100,"recursive":false,"mode":"read"}`)
	b.ReportAllocs()
	for b.Loop() {
		s, err := c.Compile(k, raw)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Validate(args); err != nil {
			b.Fatal(err)
		}
	}
}
