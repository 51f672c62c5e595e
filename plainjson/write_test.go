package plainjson

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestAppendString(t *testing.T) {
	tests := []struct {
		name          string
		in            string
		encodingJSON  string
		minimal       string
		sameAsMinimal bool
	}{
		{name: "plain", in: "read_file é東京", encodingJSON: `"read_file é東京"`, sameAsMinimal: true},
		{name: "empty", in: "", encodingJSON: `""`, sameAsMinimal: true},
		{name: "quote and backslash", in: `a"b\c`, encodingJSON: `"a\"b\\c"`, sameAsMinimal: true},
		{name: "controls", in: "\b\f\n\r\t\x00\x01\x1f\x7f", encodingJSON: `"\b\f\n\r\t\u0000\u0001\u001f` + "\x7f\"", sameAsMinimal: true},
		{name: "HTML", in: "<a>&", encodingJSON: `"\u003ca\u003e\u0026"`, minimal: `"<a>&"`},
		{name: "line separators", in: "\u2028\u2029", encodingJSON: `"\u2028\u2029"`, minimal: "\"\u2028\u2029\""},
		{name: "invalid UTF-8", in: "a\xffb\xc3", encodingJSON: `"a\ufffdb\ufffd"`, minimal: "\"a\uFFFDb\uFFFD\""},
		{name: "U+FFFD written out", in: "\uFFFD", encodingJSON: "\"\uFFFD\"", sameAsMinimal: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.sameAsMinimal {
				tc.minimal = tc.encodingJSON
			}
			if got := string(AppendString(nil, tc.in, EncodingJSON)); got != tc.encodingJSON {
				t.Errorf("EncodingJSON: got %s, want %s", got, tc.encodingJSON)
			}
			if want, _ := json.Marshal(tc.in); tc.encodingJSON != string(want) {
				t.Errorf("EncodingJSON: the case wants %s, encoding/json writes %s", tc.encodingJSON, want)
			}
			if got := string(AppendString(nil, tc.in, Minimal)); got != tc.minimal {
				t.Errorf("Minimal: got %q, want %q", got, tc.minimal)
			}
		})
	}
}

// FuzzAppendString checks EncodingJSON against encoding/json, and that Minimal writes the same
// string with no escape JSON does not require.
func FuzzAppendString(f *testing.F) {
	f.Add("s\xff<\u2028\"\\\x01\x7f\uFFFD")
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString([]byte("x"), s, EncodingJSON); string(got) != "x"+string(want) {
			t.Fatalf("EncodingJSON %q: got %s, want %s", s, got[1:], want)
		}
		got := AppendString(nil, s, Minimal)
		var back string
		if err := json.Unmarshal(got, &back); err != nil || back != string([]rune(s)) {
			t.Fatalf("Minimal %q: got %q, which decodes to %q (%v), want %q", s, got, back, err, string([]rune(s)))
		}
		for i := 1; i < len(got)-1; i++ {
			if got[i] != '\\' {
				continue
			}
			i++
			switch {
			case strings.IndexByte(`"\bfnrt`, got[i]) >= 0:
			case got[i] == 'u' && string(got[i+1:i+3]) == "00" && (got[i+3] == '0' || got[i+3] == '1'):
				i += 4 // a control
			default:
				t.Fatalf("Minimal %q: got %q, with an escape JSON does not require at %d", s, got, i)
			}
		}
	})
}

// TestAppendFloat checks AppendFloat against encoding/json on whole thousandths (the fast path),
// on their neighbours, and on arbitrary floats.
func TestAppendFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	values := []float64{0, math.Copysign(0, -1), 0.001, -0.001, 0.5, 1, 1e-6, 9.99e-7, 1e11, 999999999999.999, 1e12, 1e20, 1e21, 5e-324, math.MaxFloat64,
		math.NaN(), math.Inf(1), math.Inf(-1)}
	for range 200000 {
		k := float64(r.Int64N(2e15) - 1e15)
		f := k / 1000
		values = append(values, f, math.Nextafter(f, math.Inf(1)), math.Nextafter(f, math.Inf(-1)), math.Float64frombits(r.Uint64()))
	}
	for _, f := range values {
		want, err := json.Marshal(f)
		got, ok := AppendFloat(nil, f)
		if (err == nil) != ok || ok && string(got) != string(want) {
			t.Fatalf("%v (%x): got %q (%v), want %q (%v)", f, math.Float64bits(f), got, ok, want, err)
		}
	}
}

// TestAppendNumber checks AppendNumber and ValidNumber against encoding/json's json.Number.
func TestAppendNumber(t *testing.T) {
	for _, n := range []string{"", "0", "-0", "1", "-12", "01", "-", "1.", ".5", "1.5", "1e9", "1E+9", "1e-9", "1e", "1e+", "2.50e-3", "0x10", "1 ", "NaN", "12345678901234567890"} {
		want, err := json.Marshal(json.Number(n))
		got, ok := AppendNumber([]byte("x"), json.Number(n))
		if (err == nil) != ok || ok && string(got) != "x"+string(want) || !ok && string(got) != "x" {
			t.Errorf("%q: got %q (%v), want %q (%v)", n, got, ok, want, err)
		}
		if valid := ValidNumber(n); valid != (err == nil && n != "") {
			t.Errorf("%q: got valid %v, want %v", n, valid, !valid)
		}
	}
}

func TestAppendValue(t *testing.T) {
	value := map[string]any{"b<": []any{json.Number("2.50"), 1.5, "x&", nil, true}, "a": map[string]any{"z": false, "y": "\u2028\xff"},
		"nilmap": map[string]any(nil), "nillist": []any(nil), "other": []int{1}}
	numbers := []any{json.Number("1"), json.Number("1.0"), json.Number("1e0"), json.Number("-0"), json.Number("2.50"), json.Number("1.5e-7"),
		json.Number("9007199254740993"), json.Number("1e400"), json.Number("0.1"), 2.5}
	tests := []struct {
		name   string
		format Format
		value  any
		want   string // "" for the value's encoding/json JSON
		ok     bool
	}{
		{"encoding/json", Format{}, value, "", true},
		{"minimal strings", Format{Escaping: Minimal}, map[string]any{"b<": "\u2028\xff&", "a": []int{0}},
			"{\"a\":[0],\"b<\":\"\u2028\uFFFD&\"}", true},
		{"numbers as written", Format{}, numbers, `[1,1.0,1e0,-0,2.50,1.5e-7,9007199254740993,1e400,0.1,2.5]`, true},
		{"numbers as float64", Format{Numbers: NumberAsFloat64}, numbers, `[1,1,1,-0,2.5,1.5e-7,9007199254740992,1e400,0.1,2.5]`, true},
		{"numbers as integer", Format{Numbers: NumberAsInteger}, numbers, `[1,1,1,0,2.5,1.5e-07,9007199254740993,1e400,0.1,2.5]`, true},
		{"invalid number as float64", Format{Numbers: NumberAsFloat64}, []any{json.Number("0x1")}, "", false},
		{"nil as empty", Format{NilAsEmpty: true}, map[string]any{"m": map[string]any(nil), "l": []any(nil), "n": nil}, `{"l":[],"m":{},"n":null}`, true},
		{"many keys", Format{}, map[string]any{"k1": 1.0, "k2": 2.0, "k3": 3.0, "k4": 4.0, "k5": 5.0, "k6": 6.0, "k7": 7.0, "k8": 8.0, "k9": 9.0, "k10": 10.0}, "", true},
		{"NaN", Format{}, map[string]any{"a": 1.0, "b": math.NaN()}, "", false},
		{"invalid number", Format{}, []any{json.Number("01")}, "", false},
		{"channel", Format{}, []any{make(chan int)}, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want == "" && tc.ok {
				b, err := json.Marshal(tc.value)
				if err != nil {
					t.Fatal(err)
				}
				want = string(b)
			}
			got, ok := AppendValue(nil, tc.value, tc.format)
			if ok != tc.ok || ok && string(got) != want {
				t.Errorf("got %q (%v), want %q (%v)", got, ok, want, tc.ok)
			}
		})
	}
}
