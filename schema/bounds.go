package schema

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ErrBounds is wrapped by CheckBounds' errors: the schema is larger or more deeply nested than
// allowed. The compiler's time grows faster than linearly with both (and cannot be interrupted),
// so a schema out of bounds must never reach Compile.
var ErrBounds = errors.New("schema out of bounds")

// Bounds limits the schemas CheckBounds accepts; a zero field does not limit.
type Bounds struct {
	// MaxBytes is the largest schema, in bytes.
	MaxBytes int
	// MaxDepth is the deepest nesting of JSON objects and arrays; {"a":1} has depth 1.
	MaxDepth int
}

// CheckBounds reports, without decoding raw, whether it is within b. It reads raw once and stops
// at the first byte past a bound, so it costs at most MaxBytes steps whatever raw holds.
func CheckBounds(raw json.RawMessage, b Bounds) error {
	if b.MaxBytes > 0 && len(raw) > b.MaxBytes {
		return fmt.Errorf("%w: %d bytes, over the limit of %d", ErrBounds, len(raw), b.MaxBytes)
	}
	if b.MaxDepth <= 0 {
		return nil
	}
	depth, inString, escaped := 0, false, false
	for _, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > b.MaxDepth {
				return fmt.Errorf("%w: nested deeper than the limit of %d", ErrBounds, b.MaxDepth)
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}
