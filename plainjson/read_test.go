package plainjson

import (
	"encoding/json"
	"reflect"
	"testing"
)

// reader is what Reader does whichever type it reads, but objects.
type reader interface {
	Str() (string, bool)
	Number() (json.Number, bool)
	Int() (int, bool)
	Bool() (bool, bool)
	Null() bool
	End() bool
}

// read runs op on a reader of text as a string and as a byte slice, and returns what it read,
// whether it could, and whether the rest is white space; both readers must agree.
func read(t *testing.T, text string, op func(reader) (any, bool)) (v any, ok, end bool) {
	t.Helper()
	s, b := NewReader(text), NewReader([]byte(text))
	v, ok = op(&s)
	vb, okb := op(&b)
	if ok != okb || ok && !reflect.DeepEqual(v, vb) || s.End() != b.End() {
		t.Fatalf("%q: string reader got %#v, %v; byte reader got %#v, %v", text, v, ok, vb, okb)
	}
	return v, ok, s.End()
}

func TestReaderValues(t *testing.T) {
	str := func(r reader) (any, bool) { v, ok := r.Str(); return v, ok }
	num := func(r reader) (any, bool) { v, ok := r.Number(); return v, ok }
	whole := func(r reader) (any, bool) { v, ok := r.Int(); return v, ok }
	boolean := func(r reader) (any, bool) { v, ok := r.Bool(); return v, ok }
	null := func(r reader) (any, bool) { return nil, r.Null() }
	tests := []struct {
		name string
		text string
		op   func(reader) (any, bool)
		want any // nil when the reader declines (or for null)
		ok   bool
		end  bool // only white space left after it
	}{
		{"string", ` "a é/東" `, str, "a é/東", true, true},
		{"empty string", `""`, str, "", true, true},
		{"U+FFFD written out", "\"\uFFFD\"", str, "\uFFFD", true, true},
		{"string then more", `"a",1`, str, "a", true, false},
		{"escape", `"a\nb"`, str, nil, false, false},
		{"control", "\"a\tb\"", str, nil, false, false},
		{"invalid UTF-8", "\"a\xffb\"", str, nil, false, false},
		{"unterminated", `"ab`, str, nil, false, false},
		{"not a string", `1`, str, nil, false, false},
		{"number", ` -0.5e+3 `, num, json.Number("-0.5e+3"), true, true},
		{"zero", `0`, num, json.Number("0"), true, true},
		{"leading zero stops", `01`, num, json.Number("0"), true, false},
		{"no fraction digits", `1.`, num, nil, false, false},
		{"no exponent digits", `1e`, num, nil, false, false},
		{"minus alone", `-`, num, nil, false, false},
		{"int", ` -42 `, whole, -42, true, true},
		{"int zero", `-0`, whole, 0, true, true},
		{"int leading zero", `01`, whole, nil, false, false},
		{"int too big", `99999999999999999999`, whole, nil, false, false},
		{"int fraction stops", `1.5`, whole, 1, true, false},
		{"true", `true`, boolean, true, true, true},
		{"false", ` false`, boolean, false, true, true},
		{"not a literal", `truex`, boolean, true, true, false},
		{"partial literal", `fals`, boolean, nil, false, false},
		{"null", `null`, null, nil, true, true},
		{"nul", `nul`, null, nil, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, end := read(t, tc.text, tc.op)
			if !ok {
				got = nil
			}
			if ok != tc.ok || !reflect.DeepEqual(got, tc.want) || ok && end != tc.end {
				t.Errorf("got %#v, %v (end %v), want %#v, %v (end %v)", got, ok, end, tc.want, tc.ok, tc.end)
			}
		})
	}
}

// members reads an object of strings and arrays of strings into a list of key and value pairs.
func members[T string | []byte](p *Reader[T]) ([][2]string, bool) {
	var got [][2]string
	ok := p.Object(func(key T) bool {
		if c, _ := p.Ahead(); c == '[' {
			return p.Array(func() bool {
				s, ok := p.Str()
				got = append(got, [2]string{string(key), s})
				return ok
			})
		}
		s, ok := p.Str()
		got = append(got, [2]string{string(key), s})
		return ok
	})
	return got, ok && p.End()
}

func TestReaderObjectAndArray(t *testing.T) {
	tests := []struct {
		text string
		want [][2]string
		ok   bool
	}{
		{` { "a" : "x" , "b":[ "y","z" ] } `, [][2]string{{"a", "x"}, {"b", "y"}, {"b", "z"}}, true},
		{`{}`, nil, true},
		{`{"a":[]}`, nil, true},
		{`{"é":"x"}`, [][2]string{{"é", "x"}}, true},
		{"{\"\xff\":\"x\"}", nil, false},
		{`{"a\"":"x"}`, nil, false},
		{`{"a":"x",}`, nil, false},
		{`{"a":["x",]}`, nil, false},
		{`{"a":["x"}`, nil, false},
		{`{"a" "x"}`, nil, false},
		{`{"a":"x"`, nil, false},
		{`{"a":"x"} x`, nil, false},
		{`{"a":1}`, nil, false},
		{`[]`, nil, false},
		{``, nil, false},
	}
	for _, tc := range tests {
		s := NewReader(tc.text)
		got, ok := members(&s)
		b := NewReader([]byte(tc.text))
		gotb, okb := members(&b)
		if ok != okb || ok && !reflect.DeepEqual(got, gotb) {
			t.Fatalf("%q: string reader got %q, %v; byte reader got %q, %v", tc.text, got, ok, gotb, okb)
		}
		if ok != tc.ok || ok && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %q, %v, want %q, %v", tc.text, got, ok, tc.want, tc.ok)
		}
		if ok && !json.Valid([]byte(tc.text)) {
			t.Errorf("%q: read, but encoding/json says it is not JSON", tc.text)
		}
	}
}
