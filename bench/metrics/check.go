package metrics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// This file ports BFCL's AST checker (gorilla, berkeley-function-call-leaderboard/bfcl_eval/
// eval_checker/ast_eval/ast_checker.py: simple_function_checker, parallel_function_checker_no_order
// and their string, list and dict helpers) to JSON values. Differences, all forced by JSON having
// one number type: an "integer" parameter accepts any integral number (5 and 5.0), a "float"
// parameter any number, and numbers compare by value, as Python's 5 == 5.0 does.

// ParamSpec is the declared type of one parameter, in BFCL's type names: string, integer, float,
// boolean, array, tuple, dict or any. Items is the element type of an array or tuple.
type ParamSpec struct {
	Type  string `json:"type"`
	Items string `json:"items,omitempty"`
}

// FunctionSpec is what the checker needs of a function's declaration.
type FunctionSpec struct {
	Name     string               `json:"name"`
	Params   map[string]ParamSpec `json:"params"`
	Required []string             `json:"required"`
}

// SpecFromSchema derives a FunctionSpec from a JSON Schema object (an MCP tool's input schema):
// number becomes float, object dict; a property without one type is "any".
func SpecFromSchema(name string, schema json.RawMessage) (FunctionSpec, error) {
	var s struct {
		Properties map[string]struct {
			Type  any `json:"type"`
			Items *struct {
				Type any `json:"type"`
			} `json:"items"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return FunctionSpec{}, fmt.Errorf("reading schema of %s: %w", name, err)
	}
	spec := FunctionSpec{Name: name, Params: map[string]ParamSpec{}, Required: s.Required}
	for p, prop := range s.Properties {
		ps := ParamSpec{Type: bfclType(prop.Type)}
		if prop.Items != nil {
			ps.Items = bfclType(prop.Items.Type)
		}
		spec.Params[p] = ps
	}
	return spec, nil
}

func bfclType(t any) string {
	switch t {
	case "number":
		return "float"
	case "object":
		return "dict"
	case "string", "integer", "boolean", "array":
		return t.(string)
	}
	return "any"
}

// Call is one call a router made: the function's name and the arguments the tool received.
type Call struct {
	Name string         `json:"name"`
	Args map[string]any `json:"arguments"`
}

// Expected is one expected call in BFCL's possible-answer form: each parameter maps to its allowed
// values; "" among them means the parameter may be omitted.
type Expected struct {
	Name string           `json:"name"`
	Args map[string][]any `json:"arguments"`
}

// StringRule says how string values compare.
type StringRule int

const (
	// BFCLStrings is BFCL's standardize_string: lower case, with spaces and the characters
	// , . / - _ * ^ removed and ' read as ".
	BFCLStrings StringRule = iota
	// FoldStrings compares case-insensitively with all white space removed; for values where BFCL's
	// rule would merge different answers ("2*3" and "2-3" both become "23").
	FoldStrings
)

// Checker checks calls against expected calls.
type Checker struct {
	Strings StringRule
}

// Mismatch says why a call does not match; Kind follows BFCL's error types.
type Mismatch struct {
	Kind string
	Msg  string
}

func (m *Mismatch) Error() string { return m.Kind + ": " + m.Msg }

func mismatch(kind, format string, a ...any) error {
	return &Mismatch{Kind: kind, Msg: fmt.Sprintf(format, a...)}
}

// CheckCalls checks a whole answer without regard to order, as BFCL's
// parallel_function_checker_no_order does (it is also its simple and multiple checker when one call
// is expected): the counts must be equal and each expected call, in order, takes the first unused
// call that matches it. specs holds the declaration of every expected function by name.
func (c Checker) CheckCalls(specs map[string]FunctionSpec, got []Call, want []Expected) error {
	if len(got) != len(want) {
		return mismatch("wrong_count", "got %d calls, want %d", len(got), len(want))
	}
	got, err := normalizeCalls(got)
	if err != nil {
		return err
	}
	used := make([]bool, len(got))
	for i, w := range want {
		spec, ok := specs[w.Name]
		if !ok {
			return fmt.Errorf("no declaration for expected function %q", w.Name)
		}
		var last error
		found := false
		for j := range got {
			if used[j] {
				continue
			}
			if last = c.checkCall(spec, got[j], w); last == nil {
				used[j], found = true, true
				break
			}
		}
		if !found {
			return mismatch("cannot_find_match", "no call matches expected call %d (%s): %v", i, w.Name, last)
		}
	}
	return nil
}

// CheckCall checks one call against one expected call, as BFCL's simple_function_checker does.
func (c Checker) CheckCall(spec FunctionSpec, got Call, want Expected) error {
	norm, err := normalizeCalls([]Call{got})
	if err != nil {
		return err
	}
	return c.checkCall(spec, norm[0], want)
}

func (c Checker) checkCall(spec FunctionSpec, got Call, want Expected) error {
	if got.Name != want.Name {
		return mismatch("wrong_func_name", "got function %q, want %q", got.Name, want.Name)
	}
	for _, p := range spec.Required {
		if _, ok := got.Args[p]; !ok {
			return mismatch("missing_required", "missing required parameter %q", p)
		}
	}
	for p, v := range got.Args {
		ps, declared := spec.Params[p]
		allowed, expected := want.Args[p]
		if !declared || !expected {
			return mismatch("unexpected_param", "unexpected parameter %q", p)
		}
		if err := c.checkValue(p, v, ps, allowed); err != nil {
			return err
		}
	}
	for p, allowed := range want.Args {
		if _, ok := got.Args[p]; !ok && !containsEmpty(allowed) {
			return mismatch("missing_optional", "parameter %q not given and not optional", p)
		}
	}
	return nil
}

// checkValue is the per-parameter part of simple_function_checker: the type check (with BFCL's
// "variable" escape: a value of the possible answers' type is compared as such), then the
// comparison the type calls for.
func (c Checker) checkValue(param string, v any, ps ParamSpec, allowed []any) error {
	outer := kindOfType(ps.Type)
	inner := kindOfType(ps.Items)
	ak, hasAnswer := answerKind(allowed)
	isVariable := hasAnswer && family(ak) != family(outer)
	if hasKind(v, outer) && outer == kindList && inner != "" && !itemsMatch(v.([]any), inner, allowed) {
		// BFCL marks the result invalid here and its "variable" escape keeps it invalid.
		return mismatch("type_error", "parameter %q: elements of %v are not all %s", param, v, ps.Items)
	}
	if !hasKind(v, outer) {
		if !hasAnswer || kindOf(v) != ak {
			return mismatch("type_error", "parameter %q: got %s %v, want %s", param, kindOf(v), v, ps.Type)
		}
		isVariable = true
	}
	if !isVariable {
		switch {
		case outer == kindDict:
			return c.dictCheck(param, v.(map[string]any), allowed)
		case outer == kindList && inner == kindDict:
			return c.listDictCheck(param, v.([]any), allowed)
		case outer == kindString:
			return c.stringCheck(param, v.(string), allowed)
		case outer == kindList:
			return c.listCheck(param, v.([]any), allowed)
		}
	}
	for _, a := range allowed {
		if equal(v, a) {
			return nil
		}
	}
	return mismatch("value_error", "parameter %q: got %v, want one of %v", param, v, allowed)
}

// itemsMatch is type_checker's one-level nested check: it passes when some possible answer is not
// a list (an optional ""), or is a list such that every element of v has the item type or the type
// of that list's first element.
func itemsMatch(v []any, inner valueKind, allowed []any) bool {
	for _, a := range allowed {
		list, ok := a.([]any)
		if !ok {
			return true
		}
		ak, hasAnswer := answerKind(list)
		all := true
		for _, e := range v {
			if !hasKind(e, inner) && (!hasAnswer || kindOf(e) != ak) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func (c Checker) standardize(s string) string {
	if c.Strings == FoldStrings {
		return strings.ToLower(strings.Join(strings.Fields(s), ""))
	}
	s = strings.Map(func(r rune) rune {
		if strings.ContainsRune(" ,./-_*^", r) {
			return -1
		}
		return r
	}, s)
	return strings.ReplaceAll(strings.ToLower(s), "'", `"`)
}

func (c Checker) stringCheck(param, v string, allowed []any) error {
	sv := c.standardize(v)
	for _, a := range allowed {
		if s, ok := a.(string); ok && c.standardize(s) == sv {
			return nil
		}
	}
	return mismatch("value_error:string", "parameter %q: got %q, want one of %v (case-insensitive)", param, v, allowed)
}

// listCheck standardizes string elements on both sides and looks for an equal possible answer.
func (c Checker) listCheck(param string, v []any, allowed []any) error {
	sv := c.standardizeList(v)
	for _, a := range allowed {
		if l, ok := a.([]any); ok && equal(sv, c.standardizeList(l)) {
			return nil
		}
	}
	return mismatch("value_error:list", "parameter %q: got %v, want one of %v", param, v, allowed)
}

func (c Checker) standardizeList(l []any) []any {
	out := make([]any, len(l))
	for i, e := range l {
		if s, ok := e.(string); ok {
			e = c.standardize(s)
		}
		out[i] = e
	}
	return out
}

// dictCheck is dict_checker: some possible answer (a dict) has every key of v with v's value among
// its allowed values, and v has every key of it that is not optional.
func (c Checker) dictCheck(param string, v map[string]any, allowed []any) error {
	err := mismatch("value_error:dict", "parameter %q: no possible answer to compare %v with", param, v)
	for _, a := range allowed {
		want, ok := a.(map[string]any)
		if !ok {
			continue
		}
		if err = c.dictMatches(param, v, want); err == nil {
			return nil
		}
	}
	return err
}

func (c Checker) dictMatches(param string, v, want map[string]any) error {
	for k, val := range v {
		raw, ok := want[k]
		if !ok {
			return mismatch("value_error:dict_key", "parameter %q: unexpected key %q", param, k)
		}
		options, _ := raw.([]any)
		if s, ok := val.(string); ok {
			val = c.standardize(s)
		}
		found := false
		for _, o := range options {
			if s, ok := o.(string); ok {
				o = c.standardize(s)
			}
			if equal(val, o) {
				found = true
				break
			}
		}
		if !found {
			return mismatch("value_error:dict_value", "parameter %q: key %q is %v, want one of %v", param, k, val, options)
		}
	}
	for k, raw := range want {
		options, _ := raw.([]any)
		if _, ok := v[k]; !ok && !containsEmpty(options) {
			return mismatch("value_error:dict_key", "parameter %q: missing key %q", param, k)
		}
	}
	return nil
}

// listDictCheck is list_dict_checker: some possible answer is a list of as many dicts, matching
// element by element in order.
func (c Checker) listDictCheck(param string, v []any, allowed []any) error {
	err := mismatch("value_error:list_dict", "parameter %q: no possible answer to compare %v with", param, v)
	for _, a := range allowed {
		want, ok := a.([]any)
		if !ok {
			continue
		}
		if len(want) != len(v) {
			err = mismatch("value_error:list_dict_count", "parameter %q: got %d dicts, want %d", param, len(v), len(want))
			continue
		}
		err = nil
		for i := range v {
			gd, ok1 := v[i].(map[string]any)
			wd, ok2 := want[i].(map[string]any)
			if !ok1 || !ok2 {
				err = mismatch("type_error", "parameter %q: element %d is not a dict", param, i)
				break
			}
			if err = c.dictMatches(param, gd, wd); err != nil {
				break
			}
		}
		if err == nil {
			return nil
		}
	}
	return err
}

// valueKind is the JSON kind of a value, in the checker's terms.
type valueKind string

const (
	kindString  valueKind = "string"
	kindInteger valueKind = "integer"
	kindFloat   valueKind = "float"
	kindBool    valueKind = "boolean"
	kindList    valueKind = "list"
	kindDict    valueKind = "dict"
	kindNull    valueKind = "null"
	kindOther   valueKind = "other"
)

// kindOfType maps a BFCL type name to the kind a value must have; "any" is a string, as in BFCL's
// PYTHON_TYPE_MAPPING.
func kindOfType(t string) valueKind {
	switch t {
	case "string", "any":
		return kindString
	case "integer":
		return kindInteger
	case "float", "number":
		return kindFloat
	case "boolean":
		return kindBool
	case "array", "tuple":
		return kindList
	case "dict", "object":
		return kindDict
	case "":
		return ""
	}
	return kindOther
}

// kindOf is a value's kind; integral numbers are integers.
func kindOf(v any) valueKind {
	switch x := v.(type) {
	case string:
		return kindString
	case bool:
		return kindBool
	case json.Number:
		if f, err := x.Float64(); err == nil && f == math.Trunc(f) && !math.IsInf(f, 0) {
			return kindInteger
		}
		return kindFloat
	case []any:
		return kindList
	case map[string]any:
		return kindDict
	case nil:
		return kindNull
	}
	return kindOther
}

// hasKind reports whether v may stand for a value of kind k: a float accepts integers (Python's
// int-to-float conversion).
func hasKind(v any, k valueKind) bool {
	got := kindOf(v)
	return got == k || (k == kindFloat && got == kindInteger)
}

// answerKind is the kind of the first possible answer that is not "" (BFCL's
// get_possible_answer_type).
func answerKind(allowed []any) (valueKind, bool) {
	for _, a := range allowed {
		if s, ok := a.(string); ok && s == "" {
			continue
		}
		return kindOf(a), true
	}
	return "", false
}

// family merges integers and floats: BFCL's "variable" test cannot tell them apart usefully in JSON,
// and numbers end in a comparison by value either way.
func family(k valueKind) valueKind {
	if k == kindInteger {
		return kindFloat
	}
	return k
}

func containsEmpty(allowed []any) bool {
	for _, a := range allowed {
		if s, ok := a.(string); ok && s == "" {
			return true
		}
	}
	return false
}

// equal is Python's == on JSON values: numbers by value, lists element-wise, dicts key-wise.
func equal(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		fx, e1 := x.Float64()
		fy, e2 := y.Float64()
		return e1 == nil && e2 == nil && fx == fy
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equal(v, w) {
				return false
			}
		}
		return true
	}
	return a == b
}

// Normalize returns v as JSON decodes it with numbers kept as json.Number, so values from any
// source (a model's JSON, a Go map, a tool handler) compare alike.
func Normalize(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("normalizing value: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("normalizing value: %w", err)
	}
	return out, nil
}

func normalizeCalls(calls []Call) ([]Call, error) {
	out := make([]Call, len(calls))
	for i, c := range calls {
		n, err := Normalize(c.Args)
		if err != nil {
			return nil, err
		}
		args, _ := n.(map[string]any)
		if args == nil {
			args = map[string]any{}
		}
		out[i] = Call{Name: c.Name, Args: args}
	}
	return out, nil
}
