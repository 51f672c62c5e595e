package schema

import (
	"encoding/json"
	"testing"
)

func TestPlainOf(t *testing.T) {
	tests := []struct {
		name  string
		raw   string
		plain bool
	}{
		{"calculator", `{"type":"object","properties":{"a":{"type":"number","description":"x"},"b":{"type":"number"}},"required":["a","b"],"additionalProperties":false}`, true},
		{"empty", ``, true},
		{"empty object", `{}`, true},
		{"draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"s":{"type":"string","default":"x"}}}`, true},
		{"annotations", `{"type":"object","title":"t","description":"d","$comment":"c","properties":{"n":{"type":"integer","title":"n","examples":[1]}}}`, true},
		{"no type", `{"properties":{"a":{"type":"string"}}}`, false},
		{"typical", typicalSchema, false}, // minLength, minimum, enum
		{"nested object", `{"type":"object","properties":{"o":{"type":"object"}}}`, false},
		{"type list", `{"type":"object","properties":{"a":{"type":["string","null"]}}}`, false},
		{"untyped property", `{"type":"object","properties":{"a":{"description":"any"}}}`, false},
		{"boolean property", `{"type":"object","properties":{"a":true}}`, false},
		{"additionalProperties schema", `{"type":"object","additionalProperties":{"type":"string"}}`, false},
		{"ref", `{"type":"object","$defs":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/s"}}}`, false},
		{"other draft", `{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object"}`, false},
		{"pattern", `{"type":"object","properties":{"a":{"type":"string","pattern":"^a$"}}}`, false},
		{"boolean schema", `true`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compile(json.RawMessage(tc.raw))
			if err != nil {
				t.Fatal(err)
			}
			if got := s.plain != nil; got != tc.plain {
				t.Errorf("got plain %v, want %v", got, tc.plain)
			}
		})
	}
}

// TestPlainNeverAcceptsInvalid: whatever plain accepts the validator accepts, and ValidateValue
// reports the validator's own issues for the rest.
func TestPlainNeverAcceptsInvalid(t *testing.T) {
	schemas := []string{
		`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"],"additionalProperties":false}`,
		`{"type":"object","properties":{"n":{"type":"integer"},"s":{"type":"string"},"f":{"type":"boolean"}},"required":["n"]}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"n":{"type":"integer"}},"additionalProperties":true}`,
		``,
	}
	values := []string{
		`{"a":2,"b":3}`, `{"a":2.5,"b":-3e2}`, `{"a":2}`, `{"a":"2","b":3}`, `{"a":2,"b":3,"c":4}`, `{}`,
		`{"n":1}`, `{"n":-12}`, `{"n":1.0}`, `{"n":1e2}`, `{"n":1.5}`, `{"n":"1"}`, `{"n":1,"s":3}`, `{"n":1,"s":"x","f":false}`,
		`{"n":1,"f":"no"}`, `{"n":1,"extra":[1,{"x":null}]}`, `{"n":null}`, `[]`, `"x"`, `null`,
	}
	for _, raw := range schemas {
		s, err := Compile(json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		if s.plain == nil {
			t.Fatalf("schema %s is not plain", raw)
		}
		for _, val := range values {
			v, err := decodeOne([]byte(val))
			if err != nil {
				t.Fatal(err)
			}
			lib := s.compiled.Validate(v)
			if s.plain.accepts(v) && lib != nil {
				t.Errorf("schema %s: plain accepts %s, but the validator says %v", raw, val, lib)
			}
			got := s.ValidateValue(v)
			want := (&Schema{compiled: s.compiled}).ValidateValue(v)
			if (got == nil) != (want == nil) || got != nil && got.Error() != want.Error() {
				t.Errorf("schema %s, value %s: got %v, want %v", raw, val, got, want)
			}
		}
	}
	// Values a tool's decoded arguments may hold besides JSON's: the validator types them.
	s, _ := Compile(json.RawMessage(schemas[1]))
	for _, v := range []map[string]any{{"n": 3.0}, {"n": 3.5}, {"n": float64(1 << 60)}, {"n": 2}, {"n": int64(2)}, {"n": 1.0, "s": []any{}}} {
		if s.plain.accepts(v) && s.compiled.Validate(v) != nil {
			t.Errorf("plain accepts %v, but the validator does not", v)
		}
	}
}

// FuzzPlainNeverAcceptsInvalid checks plain against the validator on arbitrary schemas and values.
func FuzzPlainNeverAcceptsInvalid(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}`, `{"a":-0}`)
	f.Add(`{"type":"object","properties":{"s":{"type":"string"},"b":{"type":"boolean"},"x":{"type":"number"}}}`, `{"s":"\u00e9","b":true,"x":1e400}`)
	f.Fuzz(func(t *testing.T, raw, val string) {
		s, err := Compile(json.RawMessage(raw))
		if err != nil || s.plain == nil {
			return
		}
		v, err := decodeOne([]byte(val))
		if err != nil {
			return
		}
		if s.plain.accepts(v) {
			if err := s.compiled.Validate(v); err != nil {
				t.Errorf("plain accepts %s under %s, but the validator says %v", val, raw, err)
			}
		}
	})
}
