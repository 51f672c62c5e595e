package router

import (
	"encoding/json"
	"testing"

	"toolrouter/redact"
)

// TestSecretIn: a credential is found wherever the arguments hold it, a value, an object's key, a
// number or deep in arrays, and its JSON pointer is named.
func TestSecretIn(t *testing.T) {
	r := &Router{set: Settings{Redactor: redact.New("9876543210")}}
	token := "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB"
	for _, tc := range []struct {
		name string
		args map[string]any
		path string // "" when none
	}{
		{"value", map[string]any{"a": "x", "b": token}, "/b"},
		{"key", map[string]any{"meta": map[string]any{token: "x"}}, "/meta (a key of the object)"},
		{"top-level key", map[string]any{token: "x"}, "/ (a key of the object)"},
		{"escaped key", map[string]any{"a/b~c": []any{"x", map[string]any{"k": token}}}, "/a~1b~0c/1/k"},
		{"number", map[string]any{"pin": json.Number("9876543210")}, "/pin"},
		{"deep", map[string]any{"list": []any{"ok", []any{map[string]any{"k": token}}}}, "/list/1/0/k"},
		{"none", map[string]any{"q": "what is 2 plus 2", "n": json.Number("4")}, ""},
	} {
		_, path, found := r.secretIn(tc.args)
		if found != (tc.path != "") || path != tc.path {
			t.Errorf("%s: got %q, %v; want %q", tc.name, path, found, tc.path)
		}
	}
}
