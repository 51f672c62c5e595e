// Package schema compiles tool input schemas, validates arguments against them and derives the
// constrained-decoding schema sent to Ollama. It owns no I/O: schemas arrive as json.RawMessage.
//
// Three concerns live here:
//
//   - Compile / Cache: an MCP tool's inputSchema is compiled once with
//     github.com/santhosh-tekuri/jsonschema/v5. Drafts 2020-12 (the default when "$schema" is
//     absent) and draft-07 are accepted. Every $ref or $schema that would need a load (http, https,
//     file, relative URL, ...) is refused: schemas come from tool servers and must not make the
//     router fetch anything. Internal references ("#/$defs/...", "#/definitions/...") work.
//   - Validate: model-written arguments are decoded with json.Decoder.UseNumber (no precision loss)
//     and validated against the full, original schema. Failures are reported as a *ValidationError
//     whose Issues are short, model-readable lines ("at /a: expected number, but got string").
//   - OllamaFormat: a reduced copy of the schema that llama.cpp's json-schema-to-grammar (used by
//     Ollama for the "format" request field) can turn into a grammar. See format.go.
package schema

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// ErrCompile is wrapped by every error returned from Compile and Cache.Compile.
var ErrCompile = errors.New("schema does not compile")

// errRefLoad is wrapped (inside the compile error) when a schema needs an external document.
var errRefLoad = errors.New("external schema loading is disabled")

// schemaURL is the base URL the in-memory schema is registered under. It uses a scheme for which no
// loader exists; relative references resolve against it and are refused by refuseLoad.
const schemaURL = "mem:///toolrouter/input-schema.json"

// emptySchema is what an empty (zero bytes or "{}") tool schema compiles to: an object with any
// properties.
const emptySchema = `{"type":"object"}`

// Key identifies a tool's schema in a Cache: its input schema, or with Output its output schema.
type Key struct {
	Server, Tool string
	Output       bool
}

// Schema is a compiled tool input schema. It is immutable and safe for concurrent use.
type Schema struct {
	compiled *jsonschema.Schema
	raw      json.RawMessage
	plain    *plain // nil unless the schema is plain (see plain)
}

// Raw returns the schema bytes as given to Compile ("{}" when they were empty). The returned slice
// is shared: do not modify it.
func (s *Schema) Raw() json.RawMessage { return s.raw }

// refuseLoad is installed as the compiler's LoadURL: every document the schema does not contain
// itself (remote or file $ref, unknown $schema meta-schema, relative ref) is refused.
func refuseLoad(u string) (io.ReadCloser, error) {
	return nil, fmt.Errorf("refused to load %q for $ref/$schema: %w (only internal refs such as #/$defs/... are allowed)", u, errRefLoad)
}

// Compile compiles raw without caching. Errors wrap ErrCompile and name the reason.
func Compile(raw json.RawMessage) (s *Schema, err error) {
	own := bytes.Clone(raw)
	src := own
	if len(bytes.TrimSpace(own)) == 0 {
		own = json.RawMessage(`{}`)
		src = json.RawMessage(emptySchema)
	} else {
		doc, err := decodeOne(own)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrCompile, err)
		}
		if m, ok := doc.(map[string]any); ok && len(m) == 0 {
			src = json.RawMessage(emptySchema)
		}
	}

	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = refuseLoad
	if err := c.AddResource(schemaURL, bytes.NewReader(src)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCompile, err)
	}
	// The library panics (regexp.MustCompile) in a few corner cases it does not pre-validate;
	// a tool server must not be able to crash the router.
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("%w: %v", ErrCompile, r)
		}
	}()
	compiled, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCompile, err)
	}
	return &Schema{compiled: compiled, raw: own, plain: plainOf(src)}, nil
}

// decodeOne decodes exactly one JSON value (numbers as json.Number); trailing data is an error.
func decodeOne(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("invalid JSON: unexpected data after the first value")
	}
	return v, nil
}

// Cache compiles each schema once; safe for concurrent use. Entries are keyed by Key and the
// SHA-256 of the raw schema bytes, so a changed schema recompiles and old entries are dropped when Prune is called.
//
// A Key holds one entry: compiling a Key with different bytes replaces its entry, and Prune removes
// the entries of tools that are gone. Compile failures are not cached.
type Cache struct {
	mu sync.RWMutex
	m  map[Key]cacheEntry
}

type cacheEntry struct {
	sum    [sha256.Size]byte
	schema *Schema
}

// NewCache returns an empty Cache.
func NewCache() *Cache { return &Cache{m: make(map[Key]cacheEntry)} }

// Compile returns the cached *Schema for k when raw is byte-identical to the cached source, and
// compiles (and caches) it otherwise.
func (c *Cache) Compile(k Key, raw json.RawMessage) (*Schema, error) {
	sum := sha256.Sum256(raw)
	c.mu.RLock()
	e, ok := c.m[k]
	c.mu.RUnlock()
	if ok && e.sum == sum {
		return e.schema, nil
	}

	s, err := Compile(raw)
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", k.Server, k.Tool, err)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[k]; ok && e.sum == sum {
		return e.schema, nil // a concurrent caller won the race; keep one pointer per version
	}
	c.m[k] = cacheEntry{sum: sum, schema: s}
	return s, nil
}

// Prune drops every entry whose key is not in live.
func (c *Cache) Prune(live map[Key]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if !live[k] {
			delete(c.m, k)
		}
	}
}

// Len returns the number of cached entries.
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}

// oneLine collapses whitespace runs (including newlines) to single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
