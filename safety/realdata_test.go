package safety

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The real-data test scans every tool description in BFCL and MetaTool, which nobody wrote to
// attack anything, and bounds the share of definitions Scan flags: every finding there is a false
// positive.
//
// What "other servers" means here: each data set is one server. BFCL's functions are the tools
// of server "bfcl", MetaTool's plugins those of server "metatool", and a definition's others are
// Others of that deployment: the other set's tools, qualified and bare. A BFCL description that
// names another BFCL function names a sibling of the same API, not another server's tool, so it is
// not a cross-server reference. The same rule holds in production: a server's own tools are never
// its others, and Others leaves out bare names that the scanned server has too.
// TestRealDescriptionsStrictServers checks a harsher split as well.

// The bounds on the share of real definitions flagged: none of BFCL's, and one of MetaTool's 199
// (0.50%: word_sneak, whose description says what "the AI has to" do in its game).
const (
	maxBFCLRate     = 0
	maxMetaToolRate = 1.0 / 199
)

// evalData finds the BFCL and MetaTool copies: the repository's bench/data, else the shared set.
func evalData(t *testing.T) string {
	t.Helper()
	for _, dir := range []string{filepath.Join("..", "bench", "data"), "/work/shared/data"} {
		if _, err := os.Stat(filepath.Join(dir, "bfcl", "BFCL_v4_multiple.json")); err == nil {
			return dir
		}
	}
	t.Skip("no BFCL/MetaTool data (bench/data or /work/shared/data)")
	return ""
}

var bfclFiles = []string{
	"BFCL_v4_simple_python.json", "BFCL_v4_multiple.json", "BFCL_v4_parallel.json",
	"BFCL_v4_parallel_multiple.json", "BFCL_v4_irrelevance.json",
}

// bfclRecord is one BFCL test case: the functions offered together.
type bfclRecord struct {
	id   string
	defs []Definition
}

// loadBFCL returns every distinct function definition of the BFCL files (many recur across
// records), as tools of server "bfcl", and the records they came in.
func loadBFCL(t *testing.T, dir string) ([]Definition, []bfclRecord) {
	t.Helper()
	seen := map[string]bool{}
	var defs []Definition
	var records []bfclRecord
	for _, name := range bfclFiles {
		f, err := os.Open(filepath.Join(dir, "bfcl", name))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			var rec struct {
				ID       string `json:"id"`
				Function []struct {
					Name        string          `json:"name"`
					Description string          `json:"description"`
					Parameters  json.RawMessage `json:"parameters"`
				} `json:"function"`
			}
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			r := bfclRecord{id: rec.ID}
			for _, fn := range rec.Function {
				def := Definition{Server: "bfcl", Name: fn.Name, Description: fn.Description, InputSchema: fn.Parameters}
				r.defs = append(r.defs, def)
				if pin := Pin(def); !seen[pin] {
					seen[pin] = true
					defs = append(defs, def)
				}
			}
			records = append(records, r)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return defs, records
}

// loadMetaTool returns MetaTool's 199 plugins as tools of server "metatool".
func loadMetaTool(t *testing.T, dir string) []Definition {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "metatool", "plugin_des.json"))
	if err != nil {
		t.Fatal(err)
	}
	var des map[string]string
	if err := json.Unmarshal(raw, &des); err != nil {
		t.Fatal(err)
	}
	defs := make([]Definition, 0, len(des))
	for name, d := range des {
		defs = append(defs, Definition{Server: "metatool", Name: name, Description: d})
	}
	sort.Slice(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name })
	return defs
}

func names(defs []Definition) []string {
	out := make([]string, len(defs))
	for i, d := range defs {
		out[i] = d.Name
	}
	return out
}

// countTexts is how many texts Scan reads in def.
func countTexts(def Definition) int {
	n := 0
	for _, s := range []string{def.Title, def.Description} {
		if s != "" {
			n++
		}
	}
	_ = walkSchema(def.InputSchema, "inputSchema", func(schemaText) { n++ })
	return n
}

func TestRealDescriptionsFalsePositives(t *testing.T) {
	dir := evalData(t)
	bfcl, records := loadBFCL(t, dir)
	meta := loadMetaTool(t, dir)
	deployment := map[string][]string{"bfcl": names(bfcl), "metatool": names(meta)}
	entries := 0
	for _, r := range records {
		entries += len(r.defs)
	}

	for _, set := range []struct {
		name  string
		defs  []Definition
		bound float64
	}{
		{fmt.Sprintf("BFCL (%d records, %d function entries, %d distinct definitions)", len(records), entries, len(bfcl)), bfcl, maxBFCLRate},
		{fmt.Sprintf("MetaTool (%d plugins)", len(meta)), meta, maxMetaToolRate},
	} {
		sc := NewScanner(Others(deployment, set.defs[0].Server))
		flagged, texts := 0, 0
		var report strings.Builder
		for _, def := range set.defs {
			texts += countTexts(def)
			if fs := sc.Scan(def); len(fs) > 0 {
				flagged++
				fmt.Fprintf(&report, "  %s:\n%s", def.Name, dump(fs))
			}
		}
		checkRate(t, set.name, texts, flagged, len(set.defs), set.bound, report.String())
	}
}

// TestRealDescriptionsStrictServers is a harder deployment for the cross-server rule: every BFCL
// record is a server of its own, so a function's others are all functions of every other record
// (about 1,300 names) plus MetaTool's. Same-API siblings that sit in other records count as
// foreign here; the bound still holds.
func TestRealDescriptionsStrictServers(t *testing.T) {
	dir := evalData(t)
	bfcl, records := loadBFCL(t, dir)
	meta := loadMetaTool(t, dir)
	all := append(names(bfcl), names(meta)...)
	flagged, texts, scanned := 0, 0, 0
	var report strings.Builder
	for _, r := range records {
		own := map[string]bool{}
		for _, d := range r.defs {
			own[d.Name] = true
		}
		var others []string
		for _, n := range all {
			if !own[n] {
				others = append(others, n)
			}
		}
		sc := NewScanner(others)
		for _, def := range r.defs {
			scanned++
			texts += countTexts(def)
			if fs := sc.Scan(def); len(fs) > 0 {
				flagged++
				fmt.Fprintf(&report, "  %s %s:\n%s", r.id, def.Name, dump(fs))
			}
		}
	}
	checkRate(t, fmt.Sprintf("BFCL, each record its own server (%d function entries)", scanned), texts, flagged, scanned, maxBFCLRate, report.String())
}

func checkRate(t *testing.T, name string, texts, flagged, total int, bound float64, report string) {
	t.Helper()
	rate := float64(flagged) / float64(total)
	t.Logf("%s: %d texts scanned, %d of %d definitions flagged, false-positive rate %.2f%% (bound %.2f%%)",
		name, texts, flagged, total, 100*rate, 100*bound)
	if report != "" {
		t.Logf("false positives in %s:\n%s", name, report)
	}
	if rate > bound {
		t.Errorf("%s: got false-positive rate %.2f%%, want at most %.2f%%", name, 100*rate, 100*bound)
	}
}
