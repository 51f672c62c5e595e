package router

import (
	"encoding/json"
	"math"
	"testing"
)

// normalized is the dedup key's JSON as it was first defined: json.Marshal of the arguments with
// json.Number and float64 of the same number made alike.
func normalized(args map[string]any) string {
	b, _ := json.Marshal(normalize(args))
	return string(b)
}

func normalize(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = normalize(e)
		}
		return m
	case []any:
		s := make([]any, len(t))
		for i, e := range t {
			s[i] = normalize(e)
		}
		return s
	case json.Number:
		if f, err := t.Float64(); err == nil {
			return f
		}
	}
	return v
}

func TestCanonicalCallIsNormalizedJSON(t *testing.T) {
	type point struct {
		X int `json:"x"`
	}
	tests := []struct {
		name string
		args map[string]any
	}{
		{"nil", nil},
		{"empty", map[string]any{}},
		{"numbers", map[string]any{"a": json.Number("2"), "b": 3.0, "c": json.Number("2.50"), "d": json.Number("1e400"),
			"e": json.Number("-0"), "f": 1e21, "g": 1e-7, "h": 123456789.125, "i": json.Number("1E-9"), "j": -2e-300}},
		{"strings", map[string]any{"s": "plain", "html": "<a href=\"x\">&amp;</a>", "ctl": "tab\tnl\ncr\rbs\\ff\fbk\b\x01\x1f\x7f",
			"utf8": "é東京\u2028\u2029", "bad": "a\xffb\xc3", "": "empty key", "k\"ey<": "odd key"}},
		{"nested", map[string]any{"m": map[string]any{"z": nil, "y": true, "x": []any{json.Number("1"), "2", false, map[string]any{}}},
			"l": []any{}, "nilmap": map[string]any(nil), "nilslice": []any(nil)}},
		{"many keys", map[string]any{"k1": 1.0, "k2": 2.0, "k3": 3.0, "k4": 4.0, "k5": 5.0, "k6": 6.0, "k7": 7.0, "k8": 8.0, "k9": 9.0, "k10": 10.0}},
		{"other types", map[string]any{"ints": []int{1, 2}, "struct": point{X: 1}, "strs": map[string]string{"b": "<", "a": "x"}, "int": 7}},
		{"unsupported", map[string]any{"ok": 1.0, "nan": math.NaN()}},
		{"infinite", map[string]any{"inf": []any{math.Inf(1)}}},
		{"channel", map[string]any{"ch": make(chan int)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := "srv.tool " + normalized(tc.args)
			if got := canonicalCall("srv", "tool", tc.args); got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}

// FuzzCanonicalCall checks the key against encoding/json for decoded JSON and arbitrary strings.
func FuzzCanonicalCall(f *testing.F) {
	f.Add(`{"a":2,"b":[1.5,"x",null,true,{"c":1e400}]}`, "s\xff<\u2028")
	f.Fuzz(func(t *testing.T, doc, s string) {
		var args map[string]any
		if err := decodeObject(doc, &args); err != nil {
			args = map[string]any{}
		}
		args[s] = s
		want := "srv.tool " + normalized(args)
		if got := canonicalCall("srv", "tool", args); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})
}

// BenchmarkCanonicalCall builds the dedup key of a call with nested, numeric and string arguments.
//
//	go test -run '^$' -bench CanonicalCall -benchmem ./router/
func BenchmarkCanonicalCall(b *testing.B) {
	args := map[string]any{"a": json.Number("2"), "b": 3.5, "path": "/tmp/<x>&y", "opts": map[string]any{"deep": true, "n": nil},
		"list": []any{json.Number("1.25"), "two", false}}
	b.ReportAllocs()
	for b.Loop() {
		if canonicalCall("srv", "tool", args) == "" {
			b.Fatal("got an empty key")
		}
	}
}
