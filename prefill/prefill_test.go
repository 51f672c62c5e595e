package prefill

import (
	"slices"
	"testing"
)

func TestContinued(t *testing.T) {
	tests := []struct {
		name, text string
		kind       Kind
		want       string
		ok         bool
	}{
		{"boolean whole", "true", Bool, "true", true},
		{"boolean cut after its first token", "f", Bool, "false", true},
		{"boolean with trailing space", "true \n", Bool, "true", true},
		{"a whole object where a boolean goes", `{"use_tool": true}`, Bool, "", false},
		{"nothing", "", Bool, "", false},
		{"list stopped at its ]", `["calculator.add"`, List, `["calculator.add"]`, true},
		{"list whole", `["a","b"]`, List, `["a","b"]`, true},
		{"an object where a list goes", `{"calls":[]}`, List, "", false},
		{"any value", `17`, Any, "17", true},
		{"a string", `"Tokyo"`, Any, `"Tokyo"`, true},
		{"not JSON", `17,"b":`, Any, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Continued(tc.text, tc.kind)
			if got != tc.want || ok != tc.ok {
				t.Errorf("Continued(%q) = %q, %v; want %q, %v", tc.text, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestObjectValues(t *testing.T) {
	tests := []struct {
		name, format string
		keys         []string
		formats      []string
	}{
		{"every property required, in the text's order",
			`{"type":"object","properties":{"b":{"type":"number"},"a":{"type":"string","maxLength":5}},"required":["a","b"],"additionalProperties":false}`,
			[]string{"b", "a"}, []string{`{"type":"number"}`, `{"type":"string","maxLength":5}`}},
		{"$defs go with each value",
			`{"type":"object","$defs":{"p":{"type":"integer"}},"properties":{"x":{"$ref":"#/$defs/p"}},"required":["x"]}`,
			[]string{"x"}, []string{`{"$defs":{"p":{"type":"integer"}},"$ref":"#/$defs/p"}`}},
		{"an optional property: whole object", `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a"]}`, nil, nil},
		{"other properties allowed: whole object", `{"type":"object","properties":{"a":{"type":"number"}},"required":["a"],"additionalProperties":true}`, nil, nil},
		{"no properties: whole object", `{"type":"object","properties":{},"required":[]}`, nil, nil},
		{"anyOf at the top: whole object", `{"anyOf":[{"type":"object"}],"type":"object","properties":{"a":{}},"required":["a"]}`, nil, nil},
		{"a value schema that is not an object: whole object", `{"type":"object","properties":{"a":true},"required":["a"]}`, nil, nil},
		{"not an object format", `{"type":"array","items":{"type":"string"}}`, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			values, ok := ObjectValues([]byte(tc.format))
			if ok != (tc.keys != nil) {
				t.Fatalf("got ok %v, want %v", ok, tc.keys != nil)
			}
			var keys, formats []string
			for _, v := range values {
				keys, formats = append(keys, v.Key), append(formats, string(v.Format))
			}
			if !slices.Equal(keys, tc.keys) || !slices.Equal(formats, tc.formats) {
				t.Errorf("got keys %q formats %q, want %q %q", keys, formats, tc.keys, tc.formats)
			}
		})
	}
}

func TestOfType(t *testing.T) {
	for _, tc := range []struct {
		v, typ string
		want   bool
	}{
		{"17", "integer", true}, {"1.5", "number", true}, {`"x"`, "string", true}, {"true", "boolean", true},
		{"null", "null", true}, {"[1]", "array", true}, {`{"a":1}`, "object", true}, {`{"a":1}`, "number", false},
		{`{"a":1}`, "", true}, {"", "", false}, {`"x"`, "integer", false},
	} {
		if got := OfType(tc.v, tc.typ); got != tc.want {
			t.Errorf("OfType(%q, %q) = %v, want %v", tc.v, tc.typ, got, tc.want)
		}
	}
}
