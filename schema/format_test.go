package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// canon re-encodes JSON with sorted keys so schemas can be compared as strings.
func canon(t *testing.T, s string) string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("canon %q: %v", s, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkFormat asserts the properties every OllamaFormat output must have: it compiles, its top
// level is an object, and (when JSON_SCHEMA_TO_GRAMMAR names a build of llama.cpp's
// json-schema-to-grammar reading a schema on stdin) llama.cpp converts it without error.
func checkFormat(t *testing.T, out json.RawMessage) {
	t.Helper()
	if _, err := Compile(out); err != nil {
		t.Errorf("output does not compile: %v\n%s", err, out)
	}
	var top map[string]any
	if err := json.Unmarshal(out, &top); err != nil || top["type"] != "object" {
		t.Errorf("got top level %s, want type object", out)
	}
	var est int
	if err := json.Unmarshal(out, &top); err == nil {
		est = estimateGrammar(top, "")
		if buf := ollamaGrammarBuffer(len(out)); est > buf {
			t.Errorf("got estimated grammar size %d, want at most Ollama's buffer %d", est, buf)
		}
	}
	if bin := os.Getenv("JSON_SCHEMA_TO_GRAMMAR"); bin != "" {
		cmd := exec.Command(bin)
		cmd.Stdin = bytes.NewReader(out)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		grammar, err := cmd.Output()
		if err != nil {
			t.Errorf("llama.cpp json-schema-to-grammar rejected %s: %v\n%s", out, err, stderr.Bytes())
		}
		if buf := ollamaGrammarBuffer(len(out)); len(grammar) >= buf {
			t.Errorf("got grammar of %d bytes, want less than Ollama's buffer %d", len(grammar), buf)
		}
		if len(grammar) > est {
			t.Logf("grammar estimate %d below actual %d", est, len(grammar))
		}
	}
}

const anyType = `["string","number","boolean","object","array","null"]`

// prop wraps a property schema into a root schema, as OllamaFormat's expected output looks.
func prop(s string) string { return `{"type":"object","properties":{"p":` + s + `}}` }

func TestOllamaFormat(t *testing.T) {
	tests := []struct{ name, in, want string }{
		// top level
		{"empty bytes", ``, `{"type":"object","properties":{}}`},
		{"empty object", `{}`, `{"type":"object","properties":{}}`},
		{"boolean true", `true`, `{"type":"object","properties":{}}`},
		{"object without properties", `{"type":"object","description":"no args"}`, `{"type":"object","properties":{},"description":"no args"}`},
		{"top level forced to object", `{"type":"string"}`, `{"type":"object","properties":{}}`},
		{"top level type array", `{"type":["object","null"],"properties":{"a":{"type":"string"}}}`, `{"type":"object","properties":{"a":{"type":"string"}}}`},
		{"top level map", `{"type":"object","additionalProperties":{"type":"string"}}`, `{"type":"object","additionalProperties":{"type":"string"}}`},
		{"typical kept as is", typicalSchema, typicalSchema},

		// kept keywords
		{"type array", prop(`{"type":["string","null"]}`), prop(`{"type":["string","null"]}`)},
		{"enum", prop(`{"type":"string","enum":["a","b"]}`), prop(`{"type":"string","enum":["a","b"]}`)},
		{"const", prop(`{"const":"x"}`), prop(`{"const":"x"}`)},
		{"const null", prop(`{"const":null}`), prop(`{"const":null}`)},
		{"nested object", prop(`{"type":"object","properties":{"q":{"type":"integer"}},"required":["q"],"additionalProperties":false}`),
			prop(`{"type":"object","properties":{"q":{"type":"integer"}},"required":["q"],"additionalProperties":false}`)},
		{"additionalProperties schema", prop(`{"type":"object","additionalProperties":{"type":"number"}}`), prop(`{"type":"object","additionalProperties":{"type":"number"}}`)},
		{"array bounds", prop(`{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":3}`), prop(`{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":3}`)},
		{"string lengths", prop(`{"type":"string","minLength":1,"maxLength":20}`), prop(`{"type":"string","minLength":1,"maxLength":20}`)},
		{"integer bounds", prop(`{"type":"integer","minimum":-5,"maximum":5,"exclusiveMaximum":6}`), prop(`{"type":"integer","minimum":-5,"maximum":5,"exclusiveMaximum":6}`)},
		{"integral float bound", prop(`{"type":"integer","minimum":1.0,"maximum":1e3}`), prop(`{"type":"integer","minimum":1,"maximum":1000}`)},
		{"fractional bound dropped", prop(`{"type":"number","minimum":0.5}`), prop(`{"type":"number"}`)},
		{"format date", prop(`{"type":"string","format":"date"}`), prop(`{"type":"string","format":"date"}`)},
		{"format date-time", prop(`{"type":"string","format":"date-time"}`), prop(`{"type":"string","format":"date-time"}`)},
		{"format time", prop(`{"type":"string","format":"time"}`), prop(`{"type":"string","format":"time"}`)},
		{"format uuid", prop(`{"type":"string","format":"uuid"}`), prop(`{"type":"string","format":"uuid"}`)},
		{"description", prop(`{"type":"string","description":"the path"}`), prop(`{"type":"string","description":"the path"}`)},

		// transformations
		{"oneOf to anyOf", prop(`{"oneOf":[{"type":"string"},{"type":"integer"}]}`), prop(`{"anyOf":[{"type":"string"},{"type":"integer"}]}`)},
		{"anyOf siblings distributed", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"anyOf":[{"required":["a"]},{"required":["b"]}]}`,
			`{"type":"object","anyOf":[
				{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"]},
				{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["b"]}]}`},
		{"nested anyOf flattened", prop(`{"anyOf":[{"type":"string"},{"anyOf":[{"type":"integer"},{"type":"null"}]}]}`), prop(`{"anyOf":[{"type":"string"},{"type":"integer"},{"type":"null"}]}`)},
		{"single alternative unwrapped", prop(`{"description":"d","oneOf":[{"type":"string"},false]}`), prop(`{"type":"string","description":"d"}`)},
		{"untyped gets any", prop(`{"description":"anything"}`), prop(`{"description":"anything","type":` + anyType + `}`)},
		{"empty property gets any", prop(`{}`), prop(`{"type":` + anyType + `}`)},
		{"true property gets any", prop(`true`), prop(`{"type":` + anyType + `}`)},
		{"false property removed", `{"type":"object","properties":{"p":false,"q":{"type":"string"}},"required":["p","q"]}`, `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`},
		{"type inferred string", prop(`{"minLength":2}`), prop(`{"type":"string","minLength":2}`)},
		{"type inferred object", prop(`{"properties":{"x":{"type":"string"}}}`), prop(`{"type":"object","properties":{"x":{"type":"string"}}}`)},
		{"type inferred array", prop(`{"items":{"type":"string"}}`), prop(`{"type":"array","items":{"type":"string"}}`)},
		{"draft-07 tuple to prefixItems", prop(`{"type":"array","items":[{"type":"string"},{"type":"integer"}]}`), prop(`{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]}`)},
		{"items false", prop(`{"type":"array","items":false}`), prop(`{"type":"array","maxItems":0}`)},
		{"additionalProperties true dropped", prop(`{"type":"object","properties":{"x":{"type":"string"}},"additionalProperties":true}`), prop(`{"type":"object","properties":{"x":{"type":"string"}}}`)},
		{"required limited to properties", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a","ghost","a"]}`, `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`},
		{"property named $ref dropped", `{"type":"object","properties":{"$ref":{"type":"string"},"a":{"type":"string"}}}`, `{"type":"object","properties":{"a":{"type":"string"}}}`},
		{"enum value with $ref dropped", prop(`{"enum":[{"$ref":"x"},"ok"]}`), prop(`{"enum":["ok"]}`)},
		{"top level anyOf of objects", `{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"type":"string"}]}`, `{"type":"object","properties":{"a":{"type":"string"}}}`},

		// $ref inlining
		{"$defs ref inlined", `{"type":"object","$defs":{"s":{"type":"string","minLength":1}},"properties":{"p":{"$ref":"#/$defs/s"}}}`, prop(`{"type":"string","minLength":1}`)},
		{"definitions ref inlined", `{"type":"object","definitions":{"s":{"type":"string"}},"properties":{"p":{"$ref":"#/definitions/s"}}}`, prop(`{"type":"string"}`)},
		{"ref siblings overlaid", `{"type":"object","$defs":{"s":{"type":"string","description":"old"}},"properties":{"p":{"$ref":"#/$defs/s","description":"new"}}}`, prop(`{"type":"string","description":"new"}`)},
		{"escaped pointer", `{"type":"object","$defs":{"a/b":{"type":"string"},"c d":{"type":"integer"}},"properties":{"p":{"$ref":"#/$defs/a~1b"},"q":{"$ref":"#/$defs/c%20d"}}}`,
			`{"type":"object","properties":{"p":{"type":"string"},"q":{"type":"integer"}}}`},
		{"ref chain", `{"type":"object","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"type":"boolean"}},"properties":{"p":{"$ref":"#/$defs/a"}}}`, prop(`{"type":"boolean"}`)},
		{"ref via $id", `{"$id":"https://x.example/s.json","type":"object","$defs":{"b":{"type":"boolean"}},"properties":{"p":{"$ref":"https://x.example/s.json#/$defs/b"}}}`, prop(`{"type":"boolean"}`)},
		{"unresolvable ref unconstrained", prop(`{"$ref":"https://example.invalid/s.json"}`), prop(`{"type":` + anyType + `}`)},
		{"root ref", `{"type":"object","properties":{"p":{"$ref":"#/properties/q"},"q":{"type":"string"}}}`, `{"type":"object","properties":{"p":{"type":"string"},"q":{"type":"string"}}}`},

		// allOf
		{"allOf merged", `{"allOf":[{"$ref":"#/definitions/base"},{"properties":{"b":{"type":"number"}},"required":["b"]}],"definitions":{"base":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}}}`,
			`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"number"}},"required":["a","b"]}`},
		{"allOf merged with parent", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"allOf":[{"required":["b"],"properties":{"b":{"type":"integer"}}}]}`,
			`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["b","a"]}`},
		{"allOf not simple dropped", `{"type":"object","properties":{"a":{"type":"string"}},"allOf":[{"not":{"required":["a"]}}]}`, `{"type":"object","properties":{"a":{"type":"string"}}}`},
		{"allOf of strings dropped", prop(`{"type":"string","allOf":[{"minLength":1},{"maxLength":3}]}`), prop(`{"type":"string"}`)},
	}

	// Each dropped keyword, next to a type the converter understands.
	dropped := []struct{ kw, typ, val string }{
		{"$schema", "string", `"https://json-schema.org/draft/2020-12/schema"`},
		{"$id", "string", `"https://x.example/p"`},
		{"$anchor", "string", `"p"`},
		{"$comment", "string", `"c"`},
		{"title", "string", `"T"`},
		{"examples", "string", `["a"]`},
		{"default", "string", `"a"`},
		{"readOnly", "string", `true`},
		{"writeOnly", "string", `true`},
		{"deprecated", "string", `true`},
		{"nullable", "string", `true`},
		{"pattern", "string", `"^[a-z]+$"`},
		{"format", "string", `"email"`},
		{"contentEncoding", "string", `"base64"`},
		{"if", "string", `{"minLength":1}`},
		{"then", "string", `{"maxLength":3}`},
		{"else", "string", `{"maxLength":9}`},
		{"not", "string", `{"const":"x"}`},
		{"multipleOf", "integer", `2`},
		{"dependentRequired", "object", `{"a":["b"]}`},
		{"dependentSchemas", "object", `{"a":{"required":["b"]}}`},
		{"dependencies", "object", `{"a":["b"]}`},
		{"patternProperties", "object", `{"^x":{"type":"string"}}`},
		{"propertyNames", "object", `{"maxLength":3}`},
		{"unevaluatedProperties", "object", `false`},
		{"minProperties", "object", `1`},
		{"maxProperties", "object", `2`},
		{"unevaluatedItems", "array", `false`},
		{"contains", "array", `{"type":"string"}`},
		{"minContains", "array", `1`},
		{"maxContains", "array", `2`},
		{"uniqueItems", "array", `true`},
		{"additionalItems", "array", `false`},
		{"x-vendor", "string", `{"anything":1}`},
	}
	for _, d := range dropped {
		tests = append(tests, struct{ name, in, want string }{
			"drops " + d.kw,
			prop(`{"type":"` + d.typ + `",` + `"` + d.kw + `":` + d.val + `}`),
			prop(`{"type":"` + d.typ + `"}`),
		})
	}
	// Top-level-only annotations.
	tests = append(tests, struct{ name, in, want string }{"drops top-level annotations",
		`{"$schema":"http://json-schema.org/draft-07/schema#","$id":"urn:x","title":"T","$comment":"c","examples":[{}],"default":{},"type":"object","properties":{"a":{"type":"string"}},"$defs":{"unused":{"type":"string"}},"definitions":{"unused":{"type":"string"}}}`,
		`{"type":"object","properties":{"a":{"type":"string"}}}`})

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.in)
			orig := bytes.Clone(in)
			out, err := OllamaFormat(in)
			if err != nil {
				t.Fatalf("got error %v, want nil", err)
			}
			if !bytes.Equal(in, orig) {
				t.Errorf("input was modified: got %s, want %s", in, orig)
			}
			if got, want := canon(t, string(out)), canon(t, tt.want); got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
			again, _ := OllamaFormat(in)
			if !bytes.Equal(out, again) {
				t.Errorf("not deterministic: got %s then %s", out, again)
			}
			checkFormat(t, out)
		})
	}
}

// refDepth follows properties.<name> while the node is an expanded object and returns how many
// expanded levels there are and the node that ended the chain.
func refDepth(t *testing.T, out json.RawMessage, first, next string) (int, map[string]any) {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal(out, &root); err != nil {
		t.Fatal(err)
	}
	node := root["properties"].(map[string]any)[first].(map[string]any)
	levels := 0
	for {
		props, ok := node["properties"].(map[string]any)
		if !ok {
			return levels, node
		}
		levels++
		node = props[next].(map[string]any)
	}
}

func TestOllamaFormatRecursion(t *testing.T) {
	t.Run("recursive ref bounded", func(t *testing.T) {
		in := `{"type":"object","properties":{"tree":{"$ref":"#/$defs/node"}},"$defs":{"node":{"type":"object","properties":{"v":{"type":"string"},"child":{"$ref":"#/$defs/node"}}}}}`
		out, err := OllamaFormat([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		levels, last := refDepth(t, out, "tree", "child")
		if levels != maxRefDepth || len(last) != 0 {
			t.Errorf("got %d expanded levels ending in %v, want %d ending in {}", levels, last, maxRefDepth)
		}
		checkFormat(t, out)
	})
	t.Run("root self reference", func(t *testing.T) {
		in := `{"type":"object","properties":{"v":{"type":"integer"},"next":{"$ref":"#"}}}`
		out, err := OllamaFormat([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		levels, last := refDepth(t, out, "next", "next")
		if levels != maxRefDepth || len(last) != 0 {
			t.Errorf("got %d expanded levels ending in %v, want %d ending in {}", levels, last, maxRefDepth)
		}
		checkFormat(t, out)
	})
	t.Run("mutual recursion", func(t *testing.T) {
		in := `{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}},"$defs":{"a":{"type":"object","properties":{"b":{"$ref":"#/$defs/b"}}},"b":{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}}}}}`
		out, err := OllamaFormat([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		checkFormat(t, out)
	})
	t.Run("deep fan-out fits Ollama's grammar buffer", func(t *testing.T) {
		// Two recursive refs per level: 2^8 objects at full depth, whose grammar (rule names are
		// whole property paths) overflows Ollama's buffer; the depth must be lowered.
		in := `{"type":"object","properties":{"n":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"object","properties":{"value":{"type":"string"},"left":{"$ref":"#/$defs/n"},"right":{"$ref":"#/$defs/n"}}}}}`
		out, err := OllamaFormat([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		levels, last := refDepth(t, out, "n", "left")
		if levels < 1 || levels >= maxRefDepth || len(last) != 0 {
			t.Errorf("got %d expanded levels ending in %v, want between 1 and %d ending in {}", levels, last, maxRefDepth-1)
		}
		checkFormat(t, out)
	})
	t.Run("fan-out bounded", func(t *testing.T) {
		// Five recursive refs per level would be 5^8 expansions without the total budget.
		in := `{"type":"object","properties":{"n":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"object","properties":{"a":{"$ref":"#/$defs/n"},"b":{"$ref":"#/$defs/n"},"c":{"$ref":"#/$defs/n"},"d":{"$ref":"#/$defs/n"},"e":{"$ref":"#/$defs/n"}}}}}`
		out, err := OllamaFormat([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(out), `"properties"`); n > maxRefExpansions+1 {
			t.Errorf("got %d expanded objects, want at most %d", n, maxRefExpansions+1)
		}
		checkFormat(t, out)
	})
	t.Run("allOf self reference", func(t *testing.T) {
		in := `{"type":"object","properties":{"a":{"type":"string"}},"allOf":[{"$ref":"#"}]}`
		out, err := OllamaFormat([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		checkFormat(t, out)
	})
}

func TestOllamaFormatErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"invalid JSON", `{"type":`, "invalid JSON"},
		{"trailing data", `{} {}`, "unexpected data"},
		{"array", `[]`, "must be an object or a boolean"},
		{"false", `false`, "accepts no value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := OllamaFormat([]byte(tt.in))
			if err == nil || !errors.Is(err, ErrCompile) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %v, want ErrCompile containing %q", err, tt.want)
			}
		})
	}
}

// The derived schema is looser than the original; the original still rules validation.
func TestOllamaFormatDoesNotAffectValidation(t *testing.T) {
	raw := []byte(`{"type":"object","properties":{"email":{"type":"string","pattern":"^[^@]+@[^@]+$"}},"required":["email"]}`)
	s := mustCompile(t, string(raw))
	if _, err := OllamaFormat(raw); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Validate([]byte(`{"email":"nope"}`)); err == nil {
		t.Error("got nil error, want pattern failure from the original schema")
	}
}

func BenchmarkOllamaFormat(b *testing.B) {
	raw := []byte(typicalSchema)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := OllamaFormat(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBoundStrings(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain string bounded", `{"type":"object","properties":{"s":{"type":"string"}}}`,
			`{"properties":{"s":{"maxLength":1024,"type":"string"}},"type":"object"}`},
		{"own bound kept", `{"type":"object","properties":{"s":{"type":"string","maxLength":10}}}`,
			`{"properties":{"s":{"maxLength":10,"type":"string"}},"type":"object"}`},
		{"enum and const left alone", `{"type":"object","properties":{"e":{"type":"string","enum":["a"]},"c":{"type":"string","const":"x"}}}`,
			`{"properties":{"c":{"const":"x","type":"string"},"e":{"enum":["a"],"type":"string"}},"type":"object"}`},
		{"nested, in arrays and unions", `{"type":"object","properties":{"a":{"type":"array","items":{"type":["string","null"]}},"u":{"anyOf":[{"type":"number"},{"type":"string"}]}}}`,
			`{"properties":{"a":{"items":{"maxLength":1024,"type":["string","null"]},"type":"array"},"u":{"anyOf":[{"type":"number"},{"maxLength":1024,"type":"string"}]}},"type":"object"}`},
		{"a long minLength stays possible", `{"type":"object","properties":{"s":{"type":"string","minLength":1500}}}`,
			`{"properties":{"s":{"maxLength":1500,"minLength":1500,"type":"string"}},"type":"object"}`},
		{"a pattern bounds by itself", `{"type":"object","properties":{"s":{"type":"string","pattern":"^[a-z]{1,8}$"}}}`,
			`{"properties":{"s":{"pattern":"^[a-z]{1,8}$","type":"string"}},"type":"object"}`},
		{"values are not schemas", `{"type":"object","properties":{"e":{"enum":[{"type":"string"}]},"d":{"type":"integer","default":{"type":"string"}}}}`,
			`{"properties":{"d":{"default":{"type":"string"},"type":"integer"},"e":{"enum":[{"type":"string"}]}},"type":"object"}`},
		{"a property named type is not a type", `{"type":"object","properties":{"type":{"type":"integer"}}}`,
			`{"properties":{"type":{"type":"integer"}},"type":"object"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := BoundStrings(json.RawMessage(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	if _, err := BoundStrings(json.RawMessage(`{`)); err == nil {
		t.Error("got no error for invalid JSON")
	}
}
