package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// OllamaFormat: what survives and why
//
// Ollama turns the request's "format" schema into a GBNF grammar with llama.cpp's
// json-schema-to-grammar (common/json-schema-to-grammar.cpp). That converter understands a subset of
// JSON Schema; anything else is either silently ignored or aborts the whole request ("JSON schema
// conversion failed", surfaced by Ollama as "invalid JSON schema in format"). Some traps found in
// the converter:
//
//   - a node with no type and none of the structural keywords it knows (e.g. {"description": "x"},
//     {"minLength": 1}, a boolean schema `true`) is an "Unrecognized schema" error;
//   - an empty node {} is turned into "any JSON object" (not "any value");
//   - "pattern" must be anchored (^...$) and use a small regex subset, otherwise an error;
//   - "$ref" is resolved by the converter itself; a non-"#/" ref is an error, an "https://" ref
//     is fetched, and any object with a "$ref" key (even a property named "$ref" or an enum value)
//     is treated as a reference;
//   - anyOf/oneOf are checked before everything else, so sibling keywords next to them are lost;
//   - minItems/maxItems/minLength/maxLength must be integers; minimum/maximum are read as int64
//     and only honoured for "integer"; "format" must be a string;
//   - a missing additionalProperties means "no extra keys" (stricter than JSON Schema, which is
//     what we want for tool arguments).
//
// OllamaFormat therefore builds a new schema from a whitelist. Kept:
//
//	type (string or array, valid JSON types only), properties, required (only names that are
//	kept properties), items (object form; the draft-07 array form becomes prefixItems),
//	prefixItems, enum, const, anyOf (oneOf becomes anyOf), additionalProperties (false or a
//	schema; true is dropped so the grammar emits only declared keys), description, minItems,
//	maxItems, minLength, maxLength (non-negative integers), minimum, maximum, exclusiveMinimum,
//	exclusiveMaximum (integral values only), format (only date, date-time, time, uuid, which
//	the converter has rules for).
//
// Transformed:
//
//   - $ref to the same document ("#", "#/$defs/x", "#/definitions/x", any "#/json/pointer") is
//     INLINED, sibling keywords overlaid on the target; at most maxRefDepth nested expansions per
//     path (recursive schemas are cut to {} beyond that) and maxRefExpansions in total (an
//     exponential blow-up guard). Unresolvable refs (remote, $anchor, relative) become unconstrained.
//     $defs/definitions are not emitted: nothing refers to them any more.
//     Ollama writes the grammar into a fixed buffer (see ollamaGrammarBuffer) and truncates
//     silently, and llama.cpp names rules after the full property path, so deep inlining grows
//     the grammar much faster than the schema: when the estimated grammar would not fit, the
//     inlining depth is lowered step by step (recursion is cut to {} earlier).
//   - allOf whose members are plain object schemas (type object/absent, properties, required,
//     annotations) is merged: union of properties and required. Any other allOf is dropped.
//   - keywords next to anyOf/oneOf are distributed into every alternative ({A, anyOf:[B,C]} ->
//     anyOf:[A+B, A+C]); nested anyOf are flattened; a single alternative is unwrapped.
//   - a node without a type gets one: inferred from type-specific keywords (properties -> object,
//     items -> array, minLength/pattern/format -> string, minimum/multipleOf -> number), or the
//     list of all JSON types when nothing constrains it.
//   - boolean schemas: true is unconstrained; false removes the property / anyOf alternative, and
//     makes items only allow an empty array.
//   - the top level is always {"type":"object", ...}; with no properties it is
//     {"type":"object","properties":{}} (the model must send {}).
//
// Dropped (ignored by the converter, or a source of conversion errors, or meaningless for
// generation): $schema, $id, $anchor, $comment, $dynamicRef, $recursiveRef, title, examples,
// default, readOnly, writeOnly, deprecated, nullable, if/then/else, not, dependencies,
// dependentRequired, dependentSchemas, patternProperties, propertyNames, unevaluatedProperties,
// unevaluatedItems, additionalItems, contains, minContains, maxContains, uniqueItems,
// minProperties, maxProperties, multipleOf, pattern, content*, and every unknown keyword.
// Properties named "$ref" and enum/const values containing a "$ref" key are dropped too (see above).
//
// The derived schema only steers decoding; it is deliberately looser than the tool's schema.
// Arguments are always validated with the full original schema (Schema.Validate).

const (
	maxRefDepth      = 8    // nested $ref expansions along one path
	maxRefExpansions = 1000 // $ref expansions per OllamaFormat call
)

// jsonTypes is the order used for the "any value" type list and for inferred types.
var jsonTypes = []string{"string", "number", "integer", "boolean", "object", "array", "null"}

// keptFormats are the string formats llama.cpp has grammar rules for.
var keptFormats = map[string]bool{"date": true, "date-time": true, "time": true, "uuid": true}

// annotationKeys never constrain a value; they are not distributed into anyOf alternatives.
var annotationKeys = map[string]bool{
	"description": true, "title": true, "$comment": true, "examples": true, "default": true,
	"$schema": true, "$id": true, "$anchor": true, "$defs": true, "definitions": true,
	"deprecated": true, "readOnly": true, "writeOnly": true,
}

// allOfMemberKeys are the keywords an allOf member may use to be merged.
var allOfMemberKeys = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true,
	"description": true, "title": true, "$comment": true,
}

// OllamaFormat derives a schema Ollama's grammar (llama.cpp json-schema-to-grammar, as used by Ollama's `format` field) can express.
//
// The input is never modified. Output is deterministic (object keys sorted). Empty input means
// "no arguments": {"type":"object","properties":{}}. Invalid JSON, or a top level that is neither
// an object nor a boolean, is an error wrapping ErrCompile.
func OllamaFormat(raw json.RawMessage) (json.RawMessage, error) {
	root, err := decodeSchemaDoc(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: ollama format: %w", ErrCompile, err)
	}
	var rootID string
	if m, ok := root.(map[string]any); ok {
		if id, ok := m["$id"].(string); ok {
			rootID = strings.TrimSuffix(id, "#")
		}
	}
	// Inline with the full depth first; if the grammar would not fit Ollama's buffer, cut
	// recursion earlier until it does (or there is nothing left to cut).
	for depth := maxRefDepth; ; depth-- {
		f := &formatter{root: root, rootID: rootID, maxDepth: depth}
		n, ok := f.node(root, 0)
		if !ok {
			return nil, fmt.Errorf("%w: ollama format: the schema accepts no value", ErrCompile)
		}
		top := topLevel(n)
		out, err := marshalCompact(top)
		if err != nil || f.expansions == 0 || depth == 0 ||
			estimateGrammar(top, "") <= ollamaGrammarBuffer(len(out))*3/4 {
			return out, err
		}
	}
}

// ollamaGrammarBuffer bounds the grammar a derived format may expand to. Ollama before v0.30
// wrote the grammar into a buffer of this size (llama.SchemaToGrammar) and broke the request
// beyond it; since v0.30 llama-server converts the schema itself with no such buffer, but a larger
// grammar still costs time on every generated token, so the bound stays.
func ollamaGrammarBuffer(schemaLen int) int { return max(32768, min(1<<20, 4*schemaLen)) }

func decodeSchemaDoc(raw json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]any{}, nil
	}
	v, err := decodeOne(raw)
	if err != nil {
		return nil, err
	}
	switch v.(type) {
	case map[string]any, bool:
		return v, nil
	}
	return nil, fmt.Errorf("schema must be an object or a boolean, got %s", jsonKind(v))
}

func marshalCompact(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("ollama format: %w", err)
	}
	return json.RawMessage(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

type formatter struct {
	root       any
	rootID     string
	maxDepth   int // nested $ref expansions allowed along one path (<= maxRefDepth)
	expansions int
}

// node converts one (sub)schema. ok is false when the schema accepts nothing (boolean false, an
// anyOf of impossible alternatives); callers drop what it applied to.
func (f *formatter) node(v any, depth int) (map[string]any, bool) {
	var m map[string]any
	switch t := v.(type) {
	case bool:
		if !t {
			return nil, false
		}
		return anyValue(), true
	case map[string]any:
		m = t
	default: // malformed subschema; the validator has the final word
		return anyValue(), true
	}

	if ref, ok := m["$ref"].(string); ok {
		if depth >= f.maxDepth || f.expansions >= maxRefExpansions {
			return map[string]any{}, true
		}
		f.expansions++
		rest := without(m, "$ref")
		target, found := f.resolve(ref)
		if !found {
			return f.node(rest, depth+1)
		}
		switch t := target.(type) {
		case bool:
			if !t {
				return nil, false
			}
			return f.node(rest, depth+1)
		case map[string]any:
			return f.node(overlay(t, rest), depth+1)
		}
		return f.node(rest, depth+1)
	}

	if members, ok := m["allOf"]; ok {
		rest := without(m, "allOf")
		if merged, d, ok := f.mergeAllOf(rest, members, depth); ok {
			return f.node(merged, d)
		}
		return f.node(rest, depth)
	}

	key := "anyOf"
	if _, ok := m[key]; !ok {
		key = "oneOf"
	}
	if alts, ok := m[key]; ok {
		return f.union(without(m, key), alts, depth)
	}

	return f.plain(m, depth), true
}

// union handles anyOf/oneOf; base is the node without that keyword.
func (f *formatter) union(base map[string]any, alts any, depth int) (map[string]any, bool) {
	list, ok := alts.([]any)
	if !ok {
		return f.node(base, depth)
	}
	constraints := make(map[string]any)
	for k, v := range base {
		if !annotationKeys[k] {
			constraints[k] = v
		}
	}
	var out []any
	for _, a := range list {
		alt := a
		if len(constraints) > 0 {
			switch t := a.(type) {
			case bool:
				if !t {
					continue
				}
				alt = constraints
			case map[string]any:
				alt = overlay(constraints, t)
			}
		}
		n, ok := f.node(alt, depth)
		if !ok {
			continue
		}
		if inner, ok := n["anyOf"].([]any); ok && onlyKeys(n, "anyOf", "description") {
			out = append(out, inner...) // flatten
			continue
		}
		out = append(out, n)
	}
	var res map[string]any
	switch len(out) {
	case 0:
		return nil, false
	case 1:
		res = out[0].(map[string]any)
	default:
		res = map[string]any{"anyOf": out}
	}
	if d, ok := base["description"].(string); ok {
		if _, has := res["description"]; !has {
			res = overlay(res, map[string]any{"description": d})
		}
	}
	return res, true
}

// mergeAllOf merges rest with allOf members that are plain object schemas. It reports false when
// some member is not (the caller then drops allOf). The returned depth accounts for $refs
// expanded while resolving members.
func (f *formatter) mergeAllOf(rest map[string]any, members any, depth int) (map[string]any, int, bool) {
	list, ok := members.([]any)
	if !ok || !admitsObject(rest["type"], true) {
		return nil, depth, false
	}
	merged := map[string]any{}
	maxDepth := depth
	for _, mem := range list {
		d := depth
		for {
			mm, ok := mem.(map[string]any)
			if !ok {
				break
			}
			ref, ok := mm["$ref"].(string)
			if !ok {
				break
			}
			if d >= f.maxDepth || f.expansions >= maxRefExpansions {
				return nil, depth, false
			}
			f.expansions++
			d++
			target, found := f.resolve(ref)
			tm, isMap := target.(map[string]any)
			if !found || !isMap {
				return nil, depth, false
			}
			mem = overlay(tm, without(mm, "$ref"))
		}
		maxDepth = max(maxDepth, d)
		switch t := mem.(type) {
		case bool:
			if !t {
				return nil, depth, false
			}
			continue
		case map[string]any:
			for k := range t {
				if !allOfMemberKeys[k] {
					return nil, depth, false
				}
			}
			if !admitsObject(t["type"], true) {
				return nil, depth, false
			}
			// Member annotations and additionalProperties are not merged: additionalProperties
			// false in one member would otherwise reject the other members' properties.
			merged = overlay(merged, without(t, "additionalProperties", "description", "title", "$comment"))
		default:
			return nil, depth, false
		}
	}
	if _, ok := merged["properties"]; ok {
		merged["type"] = "object"
	}
	return overlay(merged, rest), maxDepth, true
}

// plain converts a node without $ref/allOf/anyOf/oneOf.
func (f *formatter) plain(m map[string]any, depth int) map[string]any {
	out := map[string]any{}
	if d, ok := m["description"].(string); ok {
		out["description"] = d
	}
	if c, ok := m["const"]; ok && !hasRefKey(c) {
		out["const"] = c
	}
	if e, ok := m["enum"].([]any); ok {
		var vals []any
		for _, v := range e {
			if !hasRefKey(v) {
				vals = append(vals, v)
			}
		}
		if len(vals) > 0 {
			out["enum"] = vals
		}
	}

	// object
	if props, ok := m["properties"].(map[string]any); ok {
		op := map[string]any{}
		for _, name := range sortedKeys(props) {
			if name == "$ref" {
				continue
			}
			if n, ok := f.node(props[name], depth); ok {
				op[name] = n
			}
		}
		if len(op) > 0 {
			out["properties"] = op
			if req, ok := m["required"].([]any); ok {
				var names []any
				for _, r := range req {
					if s, ok := r.(string); ok && op[s] != nil && !slices.Contains(names, any(s)) {
						names = append(names, s)
					}
				}
				if len(names) > 0 {
					out["required"] = names
				}
			}
		}
	}
	switch ap := m["additionalProperties"].(type) {
	case bool:
		if !ap {
			out["additionalProperties"] = false
		}
	case map[string]any:
		if n, ok := f.node(ap, depth); ok {
			out["additionalProperties"] = n
		} else {
			out["additionalProperties"] = false
		}
	}

	// array
	tuple := func(list []any) {
		items := make([]any, 0, len(list))
		for _, it := range list {
			n, ok := f.node(it, depth)
			if !ok {
				n = anyValue()
			}
			items = append(items, n)
		}
		out["prefixItems"] = items
	}
	if pi, ok := m["prefixItems"].([]any); ok && len(pi) > 0 {
		tuple(pi)
	} else {
		switch it := m["items"].(type) {
		case []any: // draft-07 tuple form
			if len(it) > 0 {
				tuple(it)
			}
		case bool:
			if !it {
				out["maxItems"] = int64(0)
			}
		case map[string]any:
			if n, ok := f.node(it, depth); ok {
				out["items"] = n
			} else {
				out["maxItems"] = int64(0)
			}
		}
	}
	for _, k := range []string{"minItems", "maxItems", "minLength", "maxLength"} {
		if _, set := out[k]; set {
			continue
		}
		if n, ok := asInt64(m[k]); ok && n >= 0 && n <= math.MaxInt32 {
			out[k] = n
		}
	}

	// string
	if fm, ok := m["format"].(string); ok && keptFormats[fm] {
		out["format"] = fm
	}

	// number
	for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
		if n, ok := asInt64(m[k]); ok {
			out[k] = n
		}
	}

	if t := typeList(m["type"]); len(t) > 0 {
		out["type"] = typeValue(t)
	} else if out["enum"] == nil && !has(out, "const") {
		if t := inferTypes(m); len(t) > 0 {
			out["type"] = typeValue(t)
		} else {
			out["type"] = typeValue(anyTypes())
		}
	}
	return out
}

// topLevel forces the root to be an object schema.
func topLevel(n map[string]any) map[string]any {
	if alts, ok := n["anyOf"].([]any); ok {
		var keep []any
		for _, a := range alts {
			if am, ok := a.(map[string]any); ok && admitsObject(am["type"], true) && am["enum"] == nil && !has(am, "const") {
				keep = append(keep, objectOnly(am))
			}
		}
		switch len(keep) {
		case 0:
		case 1:
			n = keep[0].(map[string]any)
		default:
			res := map[string]any{"type": "object", "anyOf": keep}
			if d, ok := n["description"].(string); ok {
				res["description"] = d
			}
			return res
		}
	}
	return objectOnly(n)
}

// objectOnly keeps the object keywords of n, with type object and at least empty properties.
func objectOnly(n map[string]any) map[string]any {
	res := map[string]any{"type": "object"}
	for _, k := range []string{"description", "properties", "required", "additionalProperties"} {
		if v, ok := n[k]; ok {
			res[k] = v
		}
	}
	if _, ok := res["properties"]; !ok {
		if _, isSchema := res["additionalProperties"].(map[string]any); !isSchema {
			res["properties"] = map[string]any{}
		}
	}
	return res
}

// resolve looks a reference up in the document. Only same-document references are supported.
func (f *formatter) resolve(ref string) (any, bool) {
	i := strings.IndexByte(ref, '#')
	if i < 0 {
		if f.rootID != "" && ref == f.rootID {
			return f.root, true
		}
		return nil, false
	}
	if base := ref[:i]; base != "" && base != f.rootID {
		return nil, false
	}
	frag, err := url.PathUnescape(ref[i+1:])
	if err != nil {
		return nil, false
	}
	if frag == "" {
		return f.root, true
	}
	if frag[0] != '/' { // $anchor: not supported
		return nil, false
	}
	cur := f.root
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			idx, err := strconv.Atoi(tok)
			if err != nil || idx < 0 || idx >= len(c) {
				return nil, false
			}
			cur = c[idx]
		default:
			return nil, false
		}
	}
	return cur, true
}

// overlay returns a new map: base with top's keys on top, except that properties are united (top
// wins per name) and required lists are united. Neither argument is modified.
func overlay(base, top map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(top))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range top {
		switch k {
		case "properties":
			bp, ok1 := out[k].(map[string]any)
			tp, ok2 := v.(map[string]any)
			if ok1 && ok2 {
				merged := make(map[string]any, len(bp)+len(tp))
				for pk, pv := range bp {
					merged[pk] = pv
				}
				for pk, pv := range tp {
					merged[pk] = pv
				}
				out[k] = merged
				continue
			}
		case "required":
			br, ok1 := out[k].([]any)
			tr, ok2 := v.([]any)
			if ok1 && ok2 {
				merged := slices.Clone(br)
				for _, r := range tr {
					if !slices.Contains(merged, r) {
						merged = append(merged, r)
					}
				}
				out[k] = merged
				continue
			}
		}
		out[k] = v
	}
	return out
}

func without(m map[string]any, keys ...string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if !slices.Contains(keys, k) {
			out[k] = v
		}
	}
	return out
}

func onlyKeys(m map[string]any, keys ...string) bool {
	for k := range m {
		if !slices.Contains(keys, k) {
			return false
		}
	}
	return true
}

func has(m map[string]any, k string) bool { _, ok := m[k]; return ok }

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// anyValue is an unconstrained value the converter can express (it reads {} as "any object").
func anyValue() map[string]any { return map[string]any{"type": typeValue(anyTypes())} }

func anyTypes() []string { return []string{"string", "number", "boolean", "object", "array", "null"} }

func typeValue(t []string) any {
	if len(t) == 1 {
		return t[0]
	}
	out := make([]any, len(t))
	for i, s := range t {
		out[i] = s
	}
	return out
}

// typeList returns the valid JSON type names of a "type" value, deduplicated, in input order.
func typeList(v any) []string {
	var out []string
	add := func(x any) {
		if s, ok := x.(string); ok && slices.Contains(jsonTypes, s) && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	switch t := v.(type) {
	case string:
		add(t)
	case []any:
		for _, x := range t {
			add(x)
		}
	}
	return out
}

// admitsObject reports whether a "type" value allows objects (absent counts as allowed when
// absentOK).
func admitsObject(t any, absentOK bool) bool {
	if t == nil {
		return absentOK
	}
	return slices.Contains(typeList(t), "object")
}

// inferTypes guesses the intended type of an untyped node from its type-specific keywords.
func inferTypes(m map[string]any) []string {
	var out []string
	hasAny := func(keys ...string) bool {
		for _, k := range keys {
			if _, ok := m[k]; ok {
				return true
			}
		}
		return false
	}
	if hasAny("properties", "additionalProperties", "required", "patternProperties", "propertyNames",
		"minProperties", "maxProperties", "dependentRequired", "dependentSchemas", "unevaluatedProperties") {
		out = append(out, "object")
	}
	if hasAny("items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems", "contains",
		"unevaluatedItems") {
		out = append(out, "array")
	}
	if hasAny("minLength", "maxLength", "pattern", "format", "contentEncoding", "contentMediaType") {
		out = append(out, "string")
	}
	if hasAny("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf") {
		out = append(out, "number")
	}
	return out
}

// asInt64 returns v as an int64 when it is an integral JSON number that fits.
func asInt64(v any) (int64, bool) {
	var f float64
	switch n := v.(type) {
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return i, true
		}
		x, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			return 0, false
		}
		f = x
	case float64:
		f = n
	case int:
		return int64(n), true
	case int64:
		return n, true
	default:
		return 0, false
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// hasRefKey reports whether a JSON value contains an object with a "$ref" key anywhere; the
// converter would try to resolve it.
func hasRefKey(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		if _, ok := t["$ref"]; ok {
			return true
		}
		for _, x := range t {
			if hasRefKey(x) {
				return true
			}
		}
	case []any:
		for _, x := range t {
			if hasRefKey(x) {
				return true
			}
		}
	}
	return false
}

// estimateGrammar approximates the size in bytes of the GBNF grammar llama.cpp's
// json-schema-to-grammar produces for the derived schema n. Rule names there are the
// "-"-joined property path, so the size grows with nesting depth as well as node count.
func estimateGrammar(n map[string]any, name string) int {
	const fixed = 1200 // shared primitive rules (string, number, char, space, ...)
	return fixed + estimateNode(n, name)
}

func childName(name, k string) string {
	if name == "" {
		return k
	}
	return name + "-" + k
}

func estimateNode(n map[string]any, name string) int {
	size := len(name) + 16 // the node's own rule header and a reference to it
	if alts, ok := n["anyOf"].([]any); ok {
		for i, a := range alts {
			if am, ok := a.(map[string]any); ok {
				size += estimateNode(am, childName(name, "alternative-"+strconv.Itoa(i)))
			}
		}
		return size
	}
	if t, ok := n["type"].([]any); ok {
		size += len(t) * (2*len(name) + 20)
	}
	for _, v := range []any{n["enum"], n["const"]} {
		if v != nil {
			b, _ := marshalCompact(v)
			size += 2 * len(b)
		}
	}
	if props, ok := n["properties"].(map[string]any); ok {
		for k, p := range props {
			child := childName(name, k)
			size += 6*len(child) + 2*len(k) + 80
			if pm, ok := p.(map[string]any); ok {
				size += estimateNode(pm, child)
			}
		}
	}
	if ap, ok := n["additionalProperties"].(map[string]any); ok {
		size += 6*len(name) + 100 + estimateNode(ap, childName(name, "additional-value"))
	}
	if it, ok := n["items"].(map[string]any); ok {
		size += 2*len(name) + 40 + estimateNode(it, childName(name, "item"))
	}
	if pi, ok := n["prefixItems"].([]any); ok {
		for i, it := range pi {
			if im, ok := it.(map[string]any); ok {
				size += len(name) + 10 + estimateNode(im, childName(name, "tuple-"+strconv.Itoa(i)))
			}
		}
	}
	if _, ok := n["minimum"]; ok {
		size += 300
	}
	if _, ok := n["maximum"]; ok {
		size += 300
	}
	return size
}

// ReferencePattern is the only string AllowReferences admits where the tool's schema wants another
// type: a reference to an earlier step's result, with an optional JSON Pointer into it.
const ReferencePattern = `^\$result_of_step_[0-9]{1,3}(#/[^"\\]{0,200})?$`

// AllowReferences returns a copy of a derived format schema in which every top-level property that
// is not already a plain string may also be a reference string (ReferencePattern), so that under
// constrained decoding the model can write "$result_of_step_N" where a number or an object is
// expected, and nothing else: the grammar admits no empty or free string there. The router
// substitutes references before validating against the full original schema.
func AllowReferences(format json.RawMessage) (json.RawMessage, error) {
	var m map[string]any
	if err := json.Unmarshal(format, &m); err != nil {
		return nil, fmt.Errorf("allowing references: %w", err)
	}
	props, _ := m["properties"].(map[string]any)
	for name, p := range props {
		if pm, ok := p.(map[string]any); ok && pm["type"] == "string" && onlyKeys(pm, "type", "description", "maxLength") {
			continue
		}
		props[name] = map[string]any{"anyOf": []any{p, map[string]any{"type": "string", "pattern": ReferencePattern}}}
	}
	return marshalCompact(m)
}

// MaxStringLength bounds, in characters, a string of a derived format that its schema leaves
// unbounded (BoundStrings). llama.cpp's grammar takes a repetition of more than 2,000 as
// unbounded, so the bound stays under that.
const MaxStringLength = 1024

// BoundStrings returns a copy of a format schema in which every string the model may write without
// an enum, a const, a pattern or a maxLength gets maxLength MaxStringLength (or its minLength,
// when larger), so no answer runs on to num_predict. It walks only the places of a schema that
// hold schemas, never values (enum, const, default). It bounds generation only: arguments are
// still validated against the tool's own schema.
func BoundStrings(format json.RawMessage) (json.RawMessage, error) {
	var doc any
	if err := json.Unmarshal(format, &doc); err != nil {
		return nil, fmt.Errorf("bounding strings: %w", err)
	}
	boundSchema(doc)
	return marshalCompact(doc)
}

func boundSchema(v any) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	if slices.Contains(typeList(m["type"]), "string") && !has(m, "enum") && !has(m, "const") && !has(m, "pattern") && !has(m, "maxLength") {
		bound := float64(MaxStringLength)
		if n, ok := m["minLength"].(float64); ok && n > bound {
			bound = n
		}
		m["maxLength"] = bound
	}
	for _, k := range []string{"properties", "$defs", "definitions"} { // name → schema
		if sub, ok := m[k].(map[string]any); ok {
			for _, name := range sortedKeys(sub) {
				boundSchema(sub[name])
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties", "not", "contains"} { // one schema
		boundSchema(m[k])
	}
	for _, k := range []string{"prefixItems", "anyOf", "oneOf", "allOf", "items"} { // schemas
		if list, ok := m[k].([]any); ok {
			for _, e := range list {
				boundSchema(e)
			}
		}
	}
}
