package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// maxMessageLen bounds one rendered issue message (long enum lists, huge values).
const maxMessageLen = 240

// Issue is one validation failure: where (a JSON pointer into the arguments, "/" for the root) and
// what, in a short form meant to be fed back to the model.
type Issue struct {
	Path    string // JSON pointer, "/" for root
	Message string
}

// ValidationError lists every problem found in a set of arguments, ordered by path.
type ValidationError struct{ Issues []Issue }

// Error renders all issues, e.g. "at /a: expected number, but got string; at /: missing properties: 'b'".
func (e *ValidationError) Error() string {
	if len(e.Issues) == 0 {
		return "invalid arguments"
	}
	var b strings.Builder
	for i, is := range e.Issues {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString("at ")
		b.WriteString(is.Path)
		b.WriteString(": ")
		b.WriteString(is.Message)
	}
	return b.String()
}

func rootIssue(format string, a ...any) *ValidationError {
	return &ValidationError{Issues: []Issue{{Path: "/", Message: clip(oneLine(fmt.Sprintf(format, a...)))}}}
}

// Validate decodes args with json.Decoder.UseNumber, validates against the full original schema,
// and returns the decoded object. A non-object or undecodable input, or invalid args, returns *ValidationError.
//
// Empty input and "null" are not objects and are rejected like any other non-object.
func (s *Schema) Validate(args json.RawMessage) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, rootIssue("arguments are empty; expected a JSON object")
		}
		return nil, rootIssue("arguments are not valid JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, rootIssue("unexpected data after the JSON object")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, rootIssue("expected object, but got %s", jsonKind(v))
	}
	if err := s.ValidateValue(obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// ValidateValue validates an already decoded value (numbers as json.Number or float64).
// A failure is returned as *ValidationError.
func (s *Schema) ValidateValue(v any) error {
	if s.plain != nil && s.plain.accepts(v) {
		return nil
	}
	err := s.compiled.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		// InvalidJSONTypeError (a Go value with no JSON equivalent) or InfiniteLoopError.
		return rootIssue("%s", strings.TrimPrefix(err.Error(), "jsonschema: "))
	}
	return &ValidationError{Issues: leafIssues(ve)}
}

// leafIssues flattens the library's error tree: only leaves carry a concrete reason, inner nodes
// are "doesn't validate with ...", "anyOf failed" or empty wrappers. Duplicates are removed and the
// result is ordered by path, then message.
func leafIssues(root *jsonschema.ValidationError) []Issue {
	var out []Issue
	seen := make(map[Issue]bool)
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		is := Issue{Path: pointer(e.InstanceLocation), Message: normalise(e.Message)}
		if !seen[is] {
			seen[is] = true
			out = append(out, is)
		}
	}
	walk(root)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Message < out[j].Message
	})
	return out
}

// pointer turns the library's instance location (URL-escaped tokens, "" for the root) into a plain
// JSON pointer ("/" for the root).
func pointer(loc string) string {
	if loc == "" || loc == "/" {
		return "/"
	}
	toks := strings.Split(loc, "/")
	for i, t := range toks {
		if u, err := url.PathUnescape(t); err == nil {
			toks[i] = u
		}
	}
	return strings.Join(toks, "/")
}

// rewrites reword a few library messages that read badly ("maximum 1 items required").
var rewrites = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`^maximum (\d+) items required, but found (\d+) items$`), "at most $1 items allowed, but found $2"},
	{regexp.MustCompile(`^minimum (\d+) items required, but found (\d+) items$`), "at least $1 items required, but found $2"},
	{regexp.MustCompile(`^maximum (\d+) properties allowed, but found (\d+) properties$`), "at most $1 properties allowed, but found $2"},
	{regexp.MustCompile(`^minimum (\d+) properties allowed, but found (\d+) properties$`), "at least $1 properties required, but found $2"},
}

// normalise shortens a library message for the model: one line, stable property lists, bounded length.
func normalise(msg string) string {
	msg = oneLine(strings.TrimPrefix(msg, "jsonschema: "))
	const apPrefix, apSuffix = "additionalProperties ", " not allowed"
	if strings.HasPrefix(msg, apPrefix) && strings.HasSuffix(msg, apSuffix) {
		// The library lists the names in map order; sort them so the output is stable.
		names := splitQuoted(strings.TrimSuffix(strings.TrimPrefix(msg, apPrefix), apSuffix))
		sort.Strings(names)
		if len(names) == 1 {
			msg = "property " + names[0] + " is not allowed"
		} else {
			msg = "properties " + strings.Join(names, ", ") + " are not allowed"
		}
	}
	for _, rw := range rewrites {
		if rw.re.MatchString(msg) {
			msg = rw.re.ReplaceAllString(msg, rw.repl)
			break
		}
	}
	if msg == "" {
		msg = "invalid value"
	}
	return clip(msg)
}

// splitQuoted splits "'a', 'b\'c'" (the library's quote() list format) into its quoted items,
// keeping the quotes.
func splitQuoted(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		if s[i] != '\'' {
			i++
			continue
		}
		j := i + 1
		for j < len(s) && s[j] != '\'' {
			if s[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(s) {
			return []string{s} // not in the expected format: keep as is
		}
		out = append(out, s[i:j+1])
		i = j + 1
	}
	if len(out) == 0 {
		return []string{s}
	}
	return out
}

func clip(s string) string {
	if len(s) <= maxMessageLen {
		return s
	}
	cut := maxMessageLen
	for cut > 0 && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return s[:cut] + "..."
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number, float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
