package safety

import (
	"encoding/json"
	"testing"
)

// FuzzScanStrip feeds arbitrary descriptions and schemas to Scan and Strip: neither may panic,
// excerpts stay short and free of raw invisible characters, and Strip and ForModel keep a valid
// schema valid.
// The seeds (the corpora) run with every go test; go test -fuzz FuzzScanStrip ./safety explores.
func FuzzScanStrip(f *testing.F) {
	for _, path := range []string{"testdata/poisoned.jsonl", "testdata/benign.jsonl"} {
		for _, e := range readCorpus(f, path) {
			f.Add(e.Def.Description, string(e.Def.InputSchema))
		}
	}
	others := []string{"mail.send_email", "send_email", "github.create_issue"}
	f.Fuzz(func(t *testing.T, desc, schema string) {
		def := Definition{Server: "s", Name: "t", Description: desc, InputSchema: json.RawMessage(schema)}
		fs := Scan(def, others)
		for _, fd := range fs {
			if len(fd.Excerpt) > maxExcerpt+2*len("…") {
				t.Errorf("got an excerpt of %d bytes", len(fd.Excerpt))
			}
			if h := hiddenRunes(fd.Excerpt + fd.Detail + fd.Where); h != "" {
				t.Errorf("got raw %s in finding %+v", h, fd)
			}
		}
		out := Strip(def, fs)
		if json.Valid([]byte(schema)) && !json.Valid(out.InputSchema) {
			t.Errorf("Strip turned valid schema %q into invalid %q", schema, out.InputSchema)
		}
		if json.Valid([]byte(schema)) && !json.Valid(ForModel(json.RawMessage(schema))) {
			t.Errorf("ForModel turned valid schema %q into invalid %q", schema, ForModel(json.RawMessage(schema)))
		}
		Pin(out)
	})
}
