package metrics

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// decode reads a JSON fixture keeping numbers as json.Number, as the loaders do.
func decode[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("fixture %s: %v", s, err)
	}
	return v
}

// The fixtures are BFCL records (simple_python_0, _2, parallel_multiple_0, …) with outputs written by
// hand, each expected verdict worked out from ast_checker.py.
func TestCheckCall(t *testing.T) {
	triangle := FunctionSpec{Name: "calculate_triangle_area", Required: []string{"base", "height"}, Params: map[string]ParamSpec{
		"base": {Type: "integer"}, "height": {Type: "integer"}, "unit": {Type: "string"},
	}}
	triangleWant := Expected{Name: "calculate_triangle_area", Args: decode[map[string][]any](t, `{"base": [10], "height": [5], "unit": ["units", ""]}`)}
	hypot := FunctionSpec{Name: "math.hypot", Required: []string{"x", "y"}, Params: map[string]ParamSpec{
		"x": {Type: "integer"}, "y": {Type: "integer"}, "z": {Type: "integer"},
	}}
	hypotWant := Expected{Name: "math.hypot", Args: decode[map[string][]any](t, `{"x": [4], "y": [5], "z": ["", 0]}`)}
	multiples := FunctionSpec{Name: "sum_of_multiples", Required: []string{"lower_limit", "multiples"}, Params: map[string]ParamSpec{
		"lower_limit": {Type: "integer"}, "multiples": {Type: "array", Items: "integer"}, "ratio": {Type: "float"},
	}}
	multiplesWant := Expected{Name: "sum_of_multiples", Args: decode[map[string][]any](t, `{"lower_limit": [1], "multiples": [[3, 5]], "ratio": [0.5, ""]}`)}
	city := FunctionSpec{Name: "weather", Required: []string{"location"}, Params: map[string]ParamSpec{"location": {Type: "string"}, "details": {Type: "dict"}}}
	cityWant := Expected{Name: "weather", Args: decode[map[string][]any](t, `{"location": ["New York, NY", "NYC"], "details": [{"unit": ["celsius", ""], "days": [3]}, ""]}`)}
	people := FunctionSpec{Name: "people", Required: []string{"list"}, Params: map[string]ParamSpec{"list": {Type: "array", Items: "dict"}}}
	peopleWant := Expected{Name: "people", Args: decode[map[string][]any](t, `{"list": [[{"name": ["Ann"], "age": [30]}, {"name": ["Bob"], "age": [40, ""]}]]}`)}

	tests := []struct {
		name     string
		rule     StringRule
		spec     FunctionSpec
		got      string // the call's arguments as JSON
		gotName  string
		want     Expected
		wantKind string // "" for a valid call
	}{
		{"exact", BFCLStrings, triangle, `{"base": 10, "height": 5}`, "", triangleWant, ""},
		{"optional given, case and spaces differ", BFCLStrings, triangle, `{"base": 10, "height": 5, "unit": " Units"}`, "", triangleWant, ""},
		{"integer written 10.0", BFCLStrings, triangle, `{"base": 10.0, "height": 5}`, "", triangleWant, ""},
		{"fraction for an integer", BFCLStrings, triangle, `{"base": 10.5, "height": 5}`, "", triangleWant, "type_error"},
		{"string for an integer", BFCLStrings, triangle, `{"base": "10", "height": 5}`, "", triangleWant, "type_error"},
		{"missing required", BFCLStrings, triangle, `{"base": 10}`, "", triangleWant, "missing_required"},
		{"wrong value", BFCLStrings, triangle, `{"base": 10, "height": 6}`, "", triangleWant, "value_error"},
		{"unexpected parameter", BFCLStrings, triangle, `{"base": 10, "height": 5, "color": "red"}`, "", triangleWant, "unexpected_param"},
		{"wrong function", BFCLStrings, triangle, `{"base": 10, "height": 5}`, "triangle_area", triangleWant, "wrong_func_name"},
		{"optional omitted", BFCLStrings, hypot, `{"x": 4, "y": 5}`, "", hypotWant, ""},
		{"optional given its allowed value", BFCLStrings, hypot, `{"x": 4, "y": 5, "z": 0}`, "", hypotWant, ""},
		{"optional given another value", BFCLStrings, hypot, `{"x": 4, "y": 5, "z": 1}`, "", hypotWant, "value_error"},
		{"list in order", BFCLStrings, multiples, `{"lower_limit": 1, "multiples": [3, 5]}`, "", multiplesWant, ""},
		{"list in another order", BFCLStrings, multiples, `{"lower_limit": 1, "multiples": [5, 3]}`, "", multiplesWant, "value_error:list"},
		{"list of strings for integers", BFCLStrings, multiples, `{"lower_limit": 1, "multiples": ["3", "5"]}`, "", multiplesWant, "type_error"},
		{"integer for a float", BFCLStrings, multiples, `{"lower_limit": 1, "multiples": [3, 5], "ratio": 0.5}`, "", multiplesWant, ""},
		{"parameter without a possible answer", BFCLStrings, FunctionSpec{Name: "f", Params: map[string]ParamSpec{"a": {Type: "integer"}, "b": {Type: "integer"}}},
			`{"a": 1, "b": 2}`, "", Expected{Name: "f", Args: decode[map[string][]any](t, `{"a": [1]}`)}, "unexpected_param"},
		{"missing parameter that is not optional", BFCLStrings, FunctionSpec{Name: "f", Params: map[string]ParamSpec{"a": {Type: "integer"}, "b": {Type: "integer"}}},
			`{"a": 1}`, "", Expected{Name: "f", Args: decode[map[string][]any](t, `{"a": [1], "b": [2]}`)}, "missing_optional"},
		{"BFCL strings ignore punctuation", BFCLStrings, city, `{"location": "new york ny"}`, "", cityWant, ""},
		{"folded strings keep punctuation", FoldStrings, city, `{"location": "new york ny"}`, "", cityWant, "value_error:string"},
		{"folded strings ignore case and spaces", FoldStrings, city, `{"location": "NEW YORK,NY"}`, "", cityWant, ""},
		{"BFCL strings merge operators", BFCLStrings, FunctionSpec{Name: "e", Params: map[string]ParamSpec{"x": {Type: "string"}}},
			`{"x": "2-3"}`, "", Expected{Name: "e", Args: decode[map[string][]any](t, `{"x": ["2*3"]}`)}, ""},
		{"folded strings keep operators", FoldStrings, FunctionSpec{Name: "e", Params: map[string]ParamSpec{"x": {Type: "string"}}},
			`{"x": "2-3"}`, "", Expected{Name: "e", Args: decode[map[string][]any](t, `{"x": ["2*3"]}`)}, "value_error:string"},
		{"dict with optional key omitted", BFCLStrings, city, `{"location": "NYC", "details": {"days": 3}}`, "", cityWant, ""},
		{"dict with a wrong value", BFCLStrings, city, `{"location": "NYC", "details": {"days": 4}}`, "", cityWant, "value_error:dict_value"},
		{"dict with an unknown key", BFCLStrings, city, `{"location": "NYC", "details": {"days": 3, "hourly": true}}`, "", cityWant, "value_error:dict_key"},
		{"dict missing a key", BFCLStrings, city, `{"location": "NYC", "details": {"unit": "celsius"}}`, "", cityWant, "value_error:dict_key"},
		{"list of dicts", BFCLStrings, people, `{"list": [{"name": "ann", "age": 30}, {"name": "Bob"}]}`, "", peopleWant, ""},
		{"list of dicts, wrong count", BFCLStrings, people, `{"list": [{"name": "Ann", "age": 30}]}`, "", peopleWant, "value_error:list_dict_count"},
		{"list of dicts, swapped", BFCLStrings, people, `{"list": [{"name": "Bob", "age": 40}, {"name": "Ann", "age": 30}]}`, "", peopleWant, "value_error:dict_value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.gotName
			if name == "" {
				name = tc.want.Name
			}
			got := Call{Name: name, Args: decode[map[string]any](t, tc.got)}
			err := Checker{Strings: tc.rule}.CheckCall(tc.spec, got, tc.want)
			var m *Mismatch
			switch {
			case tc.wantKind == "" && err != nil:
				t.Errorf("got %v, want a valid call", err)
			case tc.wantKind != "" && !errors.As(err, &m):
				t.Errorf("got %v, want a %s mismatch", err, tc.wantKind)
			case tc.wantKind != "" && m.Kind != tc.wantKind:
				t.Errorf("got %v, want a %s mismatch", err, tc.wantKind)
			}
		})
	}
}

func TestCheckCalls(t *testing.T) {
	spec := FunctionSpec{Name: "kinematics.calculate_time", Required: []string{"velocity", "distance"},
		Params: map[string]ParamSpec{"velocity": {Type: "integer"}, "distance": {Type: "integer"}}}
	specs := map[string]FunctionSpec{spec.Name: spec}
	want := []Expected{
		{Name: spec.Name, Args: decode[map[string][]any](t, `{"velocity": [50], "distance": [600]}`)},
		{Name: spec.Name, Args: decode[map[string][]any](t, `{"velocity": [400], "distance": [1000]}`)},
	}
	call := func(v, d int) Call {
		return Call{Name: spec.Name, Args: map[string]any{"velocity": v, "distance": d}}
	}
	tests := []struct {
		name     string
		got      []Call
		wantKind string
	}{
		{"in order", []Call{call(50, 600), call(400, 1000)}, ""},
		{"in another order", []Call{call(400, 1000), call(50, 600)}, ""},
		{"one call short", []Call{call(50, 600)}, "wrong_count"},
		{"the same call twice", []Call{call(50, 600), call(50, 600)}, "cannot_find_match"},
		{"no calls", nil, "wrong_count"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Checker{}.CheckCalls(specs, tc.got, want)
			var m *Mismatch
			switch {
			case tc.wantKind == "" && err != nil:
				t.Errorf("got %v, want a valid answer", err)
			case tc.wantKind != "" && (!errors.As(err, &m) || m.Kind != tc.wantKind):
				t.Errorf("got %v, want a %s mismatch", err, tc.wantKind)
			}
		})
	}
}

func TestSpecFromSchema(t *testing.T) {
	spec, err := SpecFromSchema("calculator.add", json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}},"o":{"type":"object"},"x":{}},"required":["a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ParamSpec{"a": {Type: "float"}, "b": {Type: "integer"}, "tags": {Type: "array", Items: "string"}, "o": {Type: "dict"}, "x": {Type: "any"}}
	for k, v := range want {
		if spec.Params[k] != v {
			t.Errorf("param %s: got %+v, want %+v", k, spec.Params[k], v)
		}
	}
	if len(spec.Required) != 1 || spec.Required[0] != "a" {
		t.Errorf("got required %v, want [a]", spec.Required)
	}
}
