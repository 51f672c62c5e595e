package safety

import (
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"unicode/utf8"
)

// schemaText is one string in an input schema that a model reads.
type schemaText struct {
	where string // e.g. "inputSchema.properties.path.description"
	text  string // decoded
	lit   [2]int // byte range of the JSON string literal in the schema, quotes included
}

// maxSchemaDepth bounds how deep the walk follows subschemas; deeper ones are skipped unread. The
// inventory's max_schema_depth refuses such schemas before they get here.
const maxSchemaDepth = 64

var errSyntax = errors.New("invalid JSON")

// walkSchema calls visit for every text in the schema raw, in document order: the description,
// title, and string default, const, enum and examples values of every subschema, following
// properties, patternProperties, $defs, definitions, dependentSchemas, dependencies, items,
// prefixItems, additionalItems, additionalProperties, unevaluatedItems, unevaluatedProperties,
// contains, propertyNames, not, if, then, else, anyOf, oneOf and allOf. Property names are keys,
// not keywords: a property called "description" is walked as a schema. On invalid JSON it stops
// and returns errSyntax after visiting what came before.
func walkSchema(raw []byte, visit func(schemaText)) error {
	w := schemaWalker{b: raw, visit: visit}
	w.ws()
	if w.i == len(w.b) {
		return nil
	}
	return w.schema("inputSchema", 0)
}

type schemaWalker struct {
	b     []byte
	i     int
	visit func(schemaText)
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

// object reads an object's members, calling member with each decoded key while w.i is at the value;
// member must consume the value.
func (w *schemaWalker) object(member func(key string) error) error {
	if w.peek() != '{' {
		return errSyntax
	}
	w.i++
	if w.peek() == '}' {
		w.i++
		return nil
	}
	for {
		s, e, err := w.str()
		if err != nil {
			return err
		}
		key, err := decodeLit(w.b[s:e])
		if err != nil {
			return err
		}
		if w.peek() != ':' {
			return errSyntax
		}
		w.i++
		if err := member(key); err != nil {
			return err
		}
		switch w.peek() {
		case ',':
			w.i++
		case '}':
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
	if err != nil {
		return err
	}
	t, err := decodeLit(w.b[s:e])
	if err != nil {
		return err
	}
	w.visit(schemaText{where: where, text: t, lit: [2]int{s, e}})
	return nil
}

// schema walks the subschema at w.i; anything but an object (true, false, garbage) is skipped.
func (w *schemaWalker) schema(path string, depth int) error {
	if w.peek() != '{' || depth >= maxSchemaDepth {
		return w.skip()
	}
	return w.object(func(key string) error {
		at := func() string { return path + "." + key }
		switch key {
		case "description", "title", "default", "const":
			return w.text(at())
		case "enum", "examples":
			if w.peek() != '[' {
				return w.skip()
			}
			p := at()
			return w.array(func(i int) error { return w.text(p + "[" + strconv.Itoa(i) + "]") })
		case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies":
			if w.peek() != '{' {
				return w.skip()
			}
			p := at()
			return w.object(func(name string) error { return w.schema(member(p, name), depth+1) })
		case "items", "additionalItems", "additionalProperties", "unevaluatedItems", "unevaluatedProperties",
			"contains", "propertyNames", "not", "if", "then", "else":
			if w.peek() == '[' { // the array form of items
				p := at()
				return w.array(func(i int) error { return w.schema(p+"["+strconv.Itoa(i)+"]", depth+1) })
			}
			return w.schema(at(), depth+1)
		case "anyOf", "oneOf", "allOf", "prefixItems":
			if w.peek() != '[' {
				return w.skip()
			}
			p := at()
			return w.array(func(i int) error { return w.schema(p+"["+strconv.Itoa(i)+"]", depth+1) })
		}
		return w.skip()
	})
}

var plainName = regexp.MustCompile(`^[A-Za-z0-9_$-]+$`)

// member is the path of property name under path: path.name when the name is plain, else
// path["name"] quoted and escaped (names come from the server and end up in logs).
func member(path, name string) string {
	if plainName.MatchString(name) {
		return path + "." + name
	}
	return path + "[" + strconv.QuoteToASCII(name) + "]"
}
