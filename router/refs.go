package router

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"toolrouter/schema"
)

// refPattern matches a reference to an earlier step's result: $result_of_step_N, optionally
// followed by a JSON Pointer into its structured content (#/items/0/id).
var refPattern = regexp.MustCompile(`\$result_of_step_([0-9]+)(#(/[^\s"]*)?)?`)

// substitute replaces references in args, in place, with earlier steps' results: a string that is
// exactly one reference becomes the referenced value (structured content, or the text parsed as
// JSON when it is JSON, else the text); a reference inside a longer string is replaced by the
// value's text. A reference to a missing or failed step, or a pointer that resolves to nothing, is
// an issue for the model to fix.
func substitute(args map[string]any, finished []Call) []schema.Issue {
	var issues []schema.Issue
	for k, v := range args {
		if mayRefer(v) {
			args[k] = subst(v, "/"+escapePointer(k), finished, &issues)
		}
	}
	return issues
}

// refMarker begins every reference.
const refMarker = "$result_of_step_"

// mayRefer reports whether v may hold a reference: a string with one, a list or an object. Other
// values are left as they are, their paths never written.
func mayRefer(v any) bool {
	switch t := v.(type) {
	case string:
		return strings.Contains(t, refMarker)
	case map[string]any, []any:
		return true
	}
	return false
}

func subst(v any, path string, finished []Call, issues *[]schema.Issue) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if mayRefer(e) {
				t[k] = subst(e, path+"/"+escapePointer(k), finished, issues)
			}
		}
		return t
	case []any:
		for i, e := range t {
			if mayRefer(e) {
				t[i] = subst(e, path+"/"+strconv.Itoa(i), finished, issues)
			}
		}
		return t
	case string:
		if !strings.Contains(t, refMarker) {
			return t
		}
		if m := refPattern.FindStringSubmatchIndex(t); m != nil && m[0] == 0 && m[1] == len(t) {
			val, _, err := resolve(t, finished)
			if err != nil {
				*issues = append(*issues, schema.Issue{Path: path, Message: err.Error()})
				return t
			}
			return val
		}
		return refPattern.ReplaceAllStringFunc(t, func(ref string) string {
			_, text, err := resolve(ref, finished)
			if err != nil {
				*issues = append(*issues, schema.Issue{Path: path, Message: err.Error()})
				return ref
			}
			return text
		})
	}
	return v
}

// resolve returns the value a reference names, and its text for use inside a longer string (the
// step's text result for a whole reference, the value itself or its JSON for a pointer).
func resolve(ref string, finished []Call) (any, string, error) {
	m := refPattern.FindStringSubmatch(ref)
	n, _ := strconv.Atoi(m[1])
	if n < 1 || n > len(finished) {
		return nil, "", fmt.Errorf("%s refers to step %d, but the finished steps are %s", ref, n, stepList(finished))
	}
	c := &finished[n-1]
	if !c.ok() {
		return nil, "", fmt.Errorf("%s refers to step %d (%s), which failed: use another value", ref, n, qualified(c))
	}
	if c.output != nil && m[3] != "" {
		if err := c.output.Reaches(m[3]); err != nil {
			return nil, "", fmt.Errorf("%s points where step %d (%s) never returns anything: %v", ref, n, qualified(c), err)
		}
	}
	if c.Result.Structured == nil && c.Result.StructuredBytes > 0 && m[2] != "" && m[2] != "#" {
		return nil, "", fmt.Errorf("%s points into step %d's structured content, which was %d bytes, over router.max_result_bytes, and is not kept: use another value",
			ref, n, c.Result.StructuredBytes)
	}
	value := c.Result.Structured
	if value == nil {
		var parsed any
		dec := json.NewDecoder(strings.NewReader(c.Result.Text))
		dec.UseNumber()
		if dec.Decode(&parsed) == nil && !dec.More() {
			value = parsed
		} else {
			value = c.Result.Text
		}
	}
	if m[2] == "" || m[2] == "#" {
		return value, c.Result.Text, nil
	}
	got, err := pointer(value, m[3])
	if err != nil {
		return nil, "", fmt.Errorf("%s: %v", ref, err)
	}
	if s, ok := got.(string); ok {
		return got, s, nil
	}
	return got, string(marshal(got)), nil
}

func stepList(finished []Call) string {
	if len(finished) == 0 {
		return "none yet"
	}
	parts := make([]string, len(finished))
	for i := range finished {
		parts[i] = strconv.Itoa(i + 1)
	}
	return strings.Join(parts, ", ")
}

// pointer resolves a JSON Pointer (RFC 6901) in a decoded JSON value.
func pointer(v any, ptr string) (any, error) {
	if ptr == "" {
		return v, nil
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch t := v.(type) {
		case map[string]any:
			e, ok := t[tok]
			if !ok {
				return nil, fmt.Errorf("no field %q in the step's result", tok)
			}
			v = e
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(t) {
				return nil, fmt.Errorf("no element %q in a list of %d", tok, len(t))
			}
			v = t[i]
		default:
			return nil, fmt.Errorf("cannot take %q of a %T", tok, v)
		}
	}
	return v, nil
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
