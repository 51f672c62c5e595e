package schema

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestAllowReferences(t *testing.T) {
	in := `{"type":"object","properties":{"a":{"type":"number"},"s":{"type":"string"},"o":{"type":"object","properties":{}}},"required":["a"]}`
	got, err := AllowReferences(json.RawMessage(in))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(got, &m)
	props := m["properties"].(map[string]any)
	want := map[string]any{"anyOf": []any{map[string]any{"type": "number"}, map[string]any{"type": "string", "pattern": ReferencePattern}}}
	if !reflect.DeepEqual(props["a"], want) {
		t.Errorf("got a = %v, want %v", props["a"], want)
	}
	if !reflect.DeepEqual(props["s"], map[string]any{"type": "string"}) {
		t.Errorf("got s = %v, want a plain string kept as is", props["s"])
	}
	if _, ok := props["o"].(map[string]any)["anyOf"]; !ok {
		t.Errorf("got o = %v, want an anyOf with string", props["o"])
	}
	// A reference-bearing object validates under the relaxed schema and the result still compiles.
	s, err := Compile(got)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Validate(json.RawMessage(`{"a":"$result_of_step_1","o":"$result_of_step_2#/x"}`)); err != nil {
		t.Errorf("relaxed schema rejected references: %v", err)
	}
	// Only a reference: an empty or free string where a number is wanted stays invalid.
	for _, bad := range []string{`{"a":""}`, `{"a":"twelve"}`, `{"a":"$result_of_step_"}`, `{"a":"x $result_of_step_1"}`} {
		if _, err := s.Validate(json.RawMessage(bad)); err == nil {
			t.Errorf("relaxed schema accepted %s, want only references as strings", bad)
		}
	}
}
