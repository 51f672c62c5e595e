package safety

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
)

func ptr(b bool) *bool { return &b }

func base() Definition {
	return Definition{
		Server:      "fs",
		Name:        "read_file",
		Title:       "Read file",
		Description: "Reads a file.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","maxLength":4096}},"required":["path"]}`),
		Annotations: &Annotations{ReadOnlyHint: ptr(true)},
	}
}

func with(f func(*Definition)) Definition {
	d := base()
	f(&d)
	return d
}

func TestPinIgnoresSerialisation(t *testing.T) {
	tests := []struct {
		name string
		def  Definition
	}{
		{"keys in another order, other white space", with(func(d *Definition) {
			d.InputSchema = json.RawMessage("{\n  \"required\": [\"path\"],\n  \"properties\": {\"path\": {\"maxLength\": 4096, \"type\": \"string\"}},\n  \"type\": \"object\"\n}\n")
		})},
		{"numbers written another way", with(func(d *Definition) {
			d.InputSchema = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","maxLength":4096.0}},"required":["path"]}`)
		})},
		{"exponent", with(func(d *Definition) {
			d.InputSchema = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","maxLength":4.096e3}},"required":["path"]}`)
		})},
		{"escapes in strings", with(func(d *Definition) {
			d.InputSchema = json.RawMessage(`{"type":"obj\u0065ct","properties":{"path":{"type":"string","maxLength":4096}},"required":["path"]}`)
		})},
		{"the server is where the pin lives, not what is pinned", with(func(d *Definition) { d.Server = "files" })},
	}
	want := Pin(base())
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Pin(tc.def); got != want {
				t.Errorf("got %s, want %s (same definition)\ncanonical: %s", got, want, Canonical(tc.def))
			}
		})
	}
	t.Run("absent and empty annotations", func(t *testing.T) {
		a := with(func(d *Definition) { d.Annotations = nil })
		b := with(func(d *Definition) { d.Annotations = &Annotations{} })
		if Pin(a) != Pin(b) {
			t.Errorf("got %s and %s, want equal pins", Pin(a), Pin(b))
		}
	})
}

func TestPinNoticesChanges(t *testing.T) {
	tests := []struct {
		name string
		def  Definition
	}{
		{"name", with(func(d *Definition) { d.Name = "read_files" })},
		{"title", with(func(d *Definition) { d.Title = "Read a file" })},
		{"description", with(func(d *Definition) { d.Description = "Reads a file. <IMPORTANT>…</IMPORTANT>" })},
		{"an invisible character", with(func(d *Definition) { d.Description = "Reads a file.\u200b" })},
		{"a schema keyword", with(func(d *Definition) {
			d.InputSchema = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","maxLength":4097}},"required":["path"]}`)
		})},
		{"array order", with(func(d *Definition) {
			d.InputSchema = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","maxLength":4096}},"required":["path","x"]}`)
		})},
		{"a hint unset instead of true", with(func(d *Definition) { d.Annotations = &Annotations{} })},
		{"a hint false instead of true", with(func(d *Definition) { d.Annotations = &Annotations{ReadOnlyHint: ptr(false)} })},
		{"another hint", with(func(d *Definition) { d.Annotations.DestructiveHint = ptr(false) })},
		{"annotation title", with(func(d *Definition) { d.Annotations.Title = "Reader" })},
		{"no schema", with(func(d *Definition) { d.InputSchema = nil })},
		{"invalid schema", with(func(d *Definition) { d.InputSchema = json.RawMessage(`{"type":`) })},
	}
	seen := map[string]string{Pin(base()): "base"}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Pin(tc.def)
			if prev, ok := seen[got]; ok {
				t.Errorf("got the pin of %q, want a new one", prev)
			}
			seen[got] = tc.name
		})
	}
}

// TestCanonicalGolden fixes the encoding: a change here invalidates every stored pin.
func TestCanonicalGolden(t *testing.T) {
	def := Definition{
		Server:      "fs",
		Name:        "read_file",
		Title:       "Read",
		Description: "Reads \"a\" file.\n<b>&</b> é\u200b",
		InputSchema: json.RawMessage(` {"z":[1,2.50,-0,1e400,12345678901234567890],"a":{"y":null,"x":true}} `),
		Annotations: &Annotations{Title: "T", ReadOnlyHint: ptr(true), OpenWorldHint: ptr(false)},
	}
	want := `{"annotations":{"openWorldHint":false,"readOnlyHint":true,"title":"T"},` +
		`"description":"Reads \"a\" file.\n<b>&</b> é` + "\u200b" + `",` +
		`"inputSchema":{"a":{"x":true,"y":null},"z":[1,2.5,0,1e400,12345678901234567890]},` +
		`"name":"read_file","title":"Read"}`
	if got := string(Canonical(def)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	sum := sha256.Sum256([]byte(want))
	if got := Pin(def); got != hex.EncodeToString(sum[:]) {
		t.Errorf("got pin %s, want the SHA-256 of the canonical form", got)
	}
	invalid := Definition{Name: "x", InputSchema: json.RawMessage(`{"a":`)}
	wantInvalid := `{"annotations":null,"description":"","inputSchemaInvalid":"eyJhIjo=","name":"x","title":""}`
	if got := string(Canonical(invalid)); got != wantInvalid {
		t.Errorf("got  %s\nwant %s", got, wantInvalid)
	}
}

// TestCanonicalEscapingAndNumbers fixes the rules where Canonical differs from encoding/json:
// strings escape only what JSON requires (HTML characters, U+2028 and U+2029 raw, invalid UTF-8 as
// a raw U+FFFD) and numbers take the forms Canonical documents. A change here invalidates every
// stored pin.
func TestCanonicalEscapingAndNumbers(t *testing.T) {
	def := Definition{
		Name:        "n\u2028",
		Description: "a\xffb\xc3 <&> \u2028\u2029 \x00\x01\x1f\x7f \b\f\n\r\t \"\\ \uFFFD",
		InputSchema: json.RawMessage(`{"b\u003c":[1.5e-7,9007199254740993,1e300,2.5E3,-12,0.1,-1e-400,123456789012345678901234567890.5],"a\u2028":"\ud800x\u0000"}`),
	}
	want := "{\"annotations\":null," +
		"\"description\":\"a\uFFFDb\uFFFD <&> \u2028\u2029 \\u0000\\u0001\\u001f\x7f \\b\\f\\n\\r\\t \\\"\\\\ \uFFFD\"," +
		"\"inputSchema\":{\"a\u2028\":\"\uFFFDx\\u0000\",\"b<\":[1.5e-07,9007199254740993,1e+300,2500,-12,0.1,0,1.2345678901234568e+29]}," +
		"\"name\":\"n\u2028\",\"title\":\"\"}"
	if got := string(Canonical(def)); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// BenchmarkCanonical writes the canonical form of a realistic definition (what Pin hashes).
//
//	go test -run '^$' -bench Canonical -benchmem ./safety/
func BenchmarkCanonical(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if len(Canonical(benchDef)) == 0 {
			b.Fatal("got no bytes")
		}
	}
}
