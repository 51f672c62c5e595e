package schema

import (
	"strings"
	"testing"
)

// TestReaches: a pointer the output schema rules out is an error that says why; one the schema
// admits, or says nothing about, is not.
func TestReaches(t *testing.T) {
	const doc = `{"type":"object","properties":{
		"id":{"type":"string"},
		"items":{"type":"array","items":{"$ref":"#/$defs/item"}},
		"pair":{"type":"array","prefixItems":[{"type":"integer"},{"type":"object","properties":{"x":{}}}]},
		"meta":{"type":"object","additionalProperties":{"type":"object","properties":{"v":{}},"additionalProperties":false}},
		"free":{},
		"either":{"anyOf":[{"type":"string"},{"type":"object","properties":{"k":{}}}]}},
		"$defs":{"item":{"type":"object","properties":{"name":{"type":"string"}},"additionalProperties":false}}}`
	s, err := Compile([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ptr, want string // want "" admits
	}{
		{"", ""},
		{"/id", ""},
		{"/items/3/name", ""},
		{"/pair/1/x", ""},
		{"/meta/anything/v", ""},
		{"/free/deep/er", ""},
		{"/either/k", ""},
		{"/nope", `no field "nope" at the top (its fields: either, free, id, items, meta, pair)`},
		{"/id/0", "makes /id a string"},
		{"/items/0/title", `no field "title" at /items/0`},
		{"/items/first", `makes /items a list, which has no element "first"`},
		{"/meta/x/w", `no field "w" at /meta/x`},
		{"/pair/0/x", "makes /pair/0 a integer or number"},
	} {
		t.Run(tc.ptr, func(t *testing.T) {
			err := s.Reaches(tc.ptr)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("got %v, want the pointer admitted", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestReachesRefLoop: a schema whose references loop is walked within a bound.
func TestReachesRefLoop(t *testing.T) {
	s, err := Compile([]byte(`{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/a"}}}`))
	if err != nil {
		t.Skip("the compiler refuses the loop itself:", err)
	}
	if err := s.Reaches("/x/y"); err != nil {
		t.Fatalf("got %v, want a loop admitted (the schema says nothing)", err)
	}
}
