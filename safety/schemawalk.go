package safety

import (
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// schemaText is one string in a schema: a value, or a key that is not a keyword.
type schemaText struct {
	where string // e.g. "inputSchema.properties.path.description"
	text  string // decoded
	lit   [2]int // byte range of the JSON string literal in the schema, quotes included
}

// maxSchemaDepth bounds how deep the walk follows nested objects and arrays; deeper ones are
// skipped unread. The inventory's max_schema_depth refuses such schemas before they get here.
const maxSchemaDepth = 64

var errSyntax = errors.New("invalid JSON")

// keySuffix marks the Where of a key: `inputSchema.properties["ignore all…"] (key)` is the
// property's name, not its schema.
const keySuffix = " (key)"

// walkSchema calls visit for every string in the schema raw, in document order: every string
// value, however deep (descriptions and titles, but also patterns, $comment, $ref, vendor
// extensions, the strings inside object and array defaults and examples), and every key except the
// JSON Schema keywords in a schema's own object ("type", "description", …): property names,
// pattern-property patterns, $defs names, vendor keywords and the keys of data values. It knows
// which members hold subschemas (properties, patternProperties, $defs, definitions,
// dependentSchemas, dependencies, items, prefixItems, additionalItems, additionalProperties,
// unevaluatedItems, unevaluatedProperties, contains, propertyNames, not, if, then, else, anyOf,
// oneOf, allOf), so that a property called "description" is walked as a schema. root names the
// top ("inputSchema", "outputSchema"). On invalid JSON it stops and returns errSyntax after
// visiting what came before.
func walkSchema(raw []byte, root string, visit func(schemaText)) error {
	w := schemaWalker{b: raw, visit: visit}
	w.ws()
	if w.i == len(w.b) {
		return nil
	}
	return w.schema(root, 0)
}

type schemaWalker struct {
	b     []byte
	i     int
	visit func(schemaText)
	// drop, when set, names the keywords of a schema object to leave out; their members' byte
	// ranges (with one comma) go to dropped, in document order.
	drop    func(key string) bool
	dropped [][2]int
}

func (w *schemaWalker) ws() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

func (w *schemaWalker) peek() byte {
	w.ws()
	if w.i < len(w.b) {
		return w.b[w.i]
	}
	return 0
}

// str reads a string literal at w.i and returns its bounds, quotes included.
func (w *schemaWalker) str() (int, int, error) {
	if w.peek() != '"' {
		return 0, 0, errSyntax
	}
	start := w.i
	for w.i++; w.i < len(w.b); w.i++ {
		switch w.b[w.i] {
		case '\\':
			w.i++
		case '"':
			w.i++
			return start, w.i, nil
		}
	}
	return 0, 0, errSyntax
}

// decodeLit decodes a string literal; lit includes the quotes.
func decodeLit(lit []byte) (string, error) {
	inner := lit[1 : len(lit)-1]
	plain := true
	for _, c := range inner {
		if c == '\\' || c < 0x20 {
			plain = false
			break
		}
	}
	if plain && utf8.Valid(inner) {
		return string(inner), nil
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		return "", errSyntax
	}
	return s, nil
}

// skip passes over one value without recursion, so nesting depth costs nothing.
func (w *schemaWalker) skip() error {
	depth := 0
	for {
		switch c := w.peek(); c {
		case 0:
			return errSyntax
		case '"':
			if _, _, err := w.str(); err != nil {
				return err
			}
		case '{', '[':
			depth++
			w.i++
		case '}', ']':
			depth--
			w.i++
		case ',', ':':
			if depth == 0 {
				return errSyntax
			}
			w.i++
		default: // number, true, false, null
			start := w.i
			for w.i < len(w.b) && !isDelim(w.b[w.i]) {
				w.i++
			}
			if w.i == start {
				return errSyntax
			}
		}
		if depth < 0 {
			return errSyntax
		}
		if depth == 0 {
			return nil
		}
	}
}

func isDelim(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', ':', '{', '}', '[', ']', '"':
		return true
	}
	return false
}

// object reads an object's members, calling each with each decoded key while w.i is at the value;
// each must consume the value. In a schema's own object (inSchema) its keywords are not
// visited as text, and those w.drop names are recorded in w.dropped.
func (w *schemaWalker) object(path string, inSchema bool, each func(key string) error) error {
	if w.peek() != '{' {
		return errSyntax
	}
	w.i++
	if w.peek() == '}' {
		w.i++
		return nil
	}
	kept, comma := false, -1 // a member was kept; where the comma before this member is
	for {
		s, e, err := w.str()
		if err != nil {
			return err
		}
		key, err := decodeLit(w.b[s:e])
		if err != nil {
			return err
		}
		if w.visit != nil && !(inSchema && keywords[key]) {
			w.visit(schemaText{where: member(path, key) + keySuffix, text: key, lit: [2]int{s, e}})
		}
		if w.peek() != ':' {
			return errSyntax
		}
		w.i++
		if err := each(key); err != nil {
			return err
		}
		end := w.i
		dropped := inSchema && w.drop != nil && w.drop(key)
		kept = kept || !dropped
		switch w.peek() {
		case ',':
			if dropped && (comma < 0 || !kept) { // first kept member still to come: take the comma after
				w.dropped = append(w.dropped, [2]int{s, w.i + 1})
			} else if dropped {
				w.dropped = append(w.dropped, [2]int{comma, end})
			}
			comma = w.i
			w.i++
		case '}':
			if dropped && comma >= 0 && kept {
				w.dropped = append(w.dropped, [2]int{comma, end})
			} else if dropped {
				w.dropped = append(w.dropped, [2]int{s, end})
			}
			w.i++
			return nil
		default:
			return errSyntax
		}
	}
}

// array reads an array's elements, calling elem with each index while w.i is at the element.
func (w *schemaWalker) array(elem func(i int) error) error {
	if w.peek() != '[' {
		return errSyntax
	}
	w.i++
	if w.peek() == ']' {
		w.i++
		return nil
	}
	for i := 0; ; i++ {
		if err := elem(i); err != nil {
			return err
		}
		switch w.peek() {
		case ',':
			w.i++
		case ']':
			w.i++
			return nil
		default:
			return errSyntax
		}
	}
}

// text visits the value at w.i when it is a string and skips it otherwise.
func (w *schemaWalker) text(where string) error {
	if w.peek() != '"' {
		return w.skip()
	}
	s, e, err := w.str()
	if err != nil || w.visit == nil {
		return err
	}
	t, err := decodeLit(w.b[s:e])
	if err != nil {
		return err
	}
	w.visit(schemaText{where: where, text: t, lit: [2]int{s, e}})
	return nil
}

// schema walks the subschema at w.i; anything but an object (true, false, garbage) is read as a
// value.
func (w *schemaWalker) schema(path string, depth int) error {
	if w.peek() != '{' || depth >= maxSchemaDepth {
		return w.value(path, depth)
	}
	return w.object(path, true, func(key string) error {
		p := member(path, key)
		switch key {
		case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies":
			if w.peek() != '{' || depth+1 >= maxSchemaDepth {
				return w.value(p, depth+1)
			}
			return w.object(p, false, func(name string) error { return w.schema(member(p, name), depth+2) })
		case "items", "additionalItems", "additionalProperties", "unevaluatedItems", "unevaluatedProperties",
			"contains", "propertyNames", "not", "if", "then", "else", "anyOf", "oneOf", "allOf", "prefixItems":
			if w.peek() == '[' { // the array form of items, and the combinators
				return w.array(func(i int) error { return w.schema(p+"["+strconv.Itoa(i)+"]", depth+1) })
			}
			return w.schema(p, depth+1)
		}
		return w.value(p, depth+1)
	})
}

// value walks any JSON value at w.i: every string in it, and every key of its objects.
func (w *schemaWalker) value(path string, depth int) error {
	switch w.peek() {
	case '"':
		return w.text(path)
	case '{':
		if depth >= maxSchemaDepth {
			return w.skip()
		}
		return w.object(path, false, func(key string) error { return w.value(member(path, key), depth+1) })
	case '[':
		if depth >= maxSchemaDepth {
			return w.skip()
		}
		return w.array(func(i int) error { return w.value(path+"["+strconv.Itoa(i)+"]", depth+1) })
	}
	return w.skip()
}

// keywords are the JSON Schema keywords (drafts 4 to 2020-12) and the OpenAPI ones tools use:
// as keys of a schema they are structure, not text, and are not scanned. Their values are.
var keywords = map[string]bool{}

func init() {
	for _, k := range strings.Fields(`$schema $id id $ref $anchor $dynamicRef $dynamicAnchor $recursiveRef
		$recursiveAnchor $vocabulary $comment $defs definitions type enum const title description default
		examples example readOnly writeOnly deprecated nullable format pattern minLength maxLength minimum
		maximum exclusiveMinimum exclusiveMaximum multipleOf minItems maxItems uniqueItems minContains
		maxContains minProperties maxProperties required dependentRequired properties patternProperties
		additionalProperties unevaluatedProperties propertyNames dependentSchemas dependencies items
		prefixItems additionalItems unevaluatedItems contains not if then else anyOf oneOf allOf
		contentEncoding contentMediaType contentSchema discriminator xml externalDocs`) {
		keywords[k] = true
	}
}

var plainName = regexp.MustCompile(`^[A-Za-z0-9_$-]+$`)

// maxPathName bounds a name as a path shows it.
const maxPathName = 64

// member is the path of property name under path: path.name when the name is plain, else
// path["name"] quoted and escaped (names come from the server and end up in logs), a name longer
// than maxPathName bytes cut and marked "…".
func member(path, name string) string {
	if len(name) <= maxPathName && plainName.MatchString(name) {
		return path + "." + name
	}
	if len(name) > maxPathName {
		cut := maxPathName
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		name = name[:cut] + "…"
	}
	return path + "[" + strconv.QuoteToASCII(name) + "]"
}
