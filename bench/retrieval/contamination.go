package retrieval

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"toolrouter/inventory"
	"toolrouter/inventory/builtin"
)

// Examples returns the example queries written for the intents' servers, by qualified tool
// name: the built-in servers' own (builtin.Examples) and the reference servers' as the benchmark
// configures them (bench/data/reference_examples.json).
func Examples(refExamplesPath string) (shipped, reference map[string][]string, err error) {
	shipped = map[string][]string{}
	for _, s := range builtin.Names() {
		for tool, qs := range builtin.Examples(s) {
			shipped[inventory.Qualify(s, tool)] = qs
		}
	}
	var rx struct {
		Examples map[string][]string `json:"examples"`
	}
	if err := readJSON(refExamplesPath, &rx); err != nil {
		return nil, nil, err
	}
	return shipped, rx.Examples, nil
}

// BenchmarkQueries returns every query the benchmarks ask, by source: each user message of the
// BFCL files (bfcl/*.json), the MetaTool selection rows of metatoolCSV and awareness.json, the
// scenario set, the obvious intents and the questions in other languages (nonenglish*.json).
func BenchmarkQueries(dataDir, metatoolCSV string) (map[string][]string, error) {
	out := map[string][]string{}
	files, _ := filepath.Glob(filepath.Join(dataDir, "bfcl", "*.json"))
	if len(files) == 0 {
		return nil, fmt.Errorf("no BFCL files under %s", dataDir)
	}
	for _, f := range files {
		err := eachLine(f, func(line []byte) error {
			var r struct {
				Question [][]struct {
					Role    string `json:"role"`
					Content string `json:"content"`
				} `json:"question"`
			}
			if err := json.Unmarshal(line, &r); err != nil {
				return err
			}
			for _, turn := range r.Question {
				for _, m := range turn {
					if m.Role == "user" {
						out["BFCL"] = append(out["BFCL"], m.Content)
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	f, err := os.Open(metatoolCSV)
	if err != nil {
		return nil, fmt.Errorf("reading MetaTool queries: %w", err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Base(metatoolCSV), err)
	}
	for _, row := range rows[min(1, len(rows)):] {
		if len(row) > 0 {
			out["MetaTool"] = append(out["MetaTool"], row[0])
		}
	}
	var awareness []struct{ Query string }
	if err := readJSON(filepath.Join(dataDir, "metatool", "awareness.json"), &awareness); err != nil {
		return nil, err
	}
	for _, a := range awareness {
		out["MetaTool awareness"] = append(out["MetaTool awareness"], a.Query)
	}
	var sc struct{ Scenarios []struct{ Query string } }
	if err := readJSON(filepath.Join(dataDir, "scenarios.json"), &sc); err != nil {
		return nil, err
	}
	for _, s := range sc.Scenarios {
		out["scenarios"] = append(out["scenarios"], s.Query)
	}
	set, err := LoadIntents(filepath.Join(dataDir, "obvious_intents.json"))
	if err != nil {
		return nil, err
	}
	for _, in := range set.Intents {
		out["obvious intents"] = append(out["obvious intents"], in.Query)
	}
	files, _ = filepath.Glob(filepath.Join(dataDir, "nonenglish*.json"))
	for _, f := range files {
		var ne struct{ Questions []struct{ Question string } }
		if err := readJSON(f, &ne); err != nil {
			return nil, err
		}
		for _, q := range ne.Questions {
			out["other languages"] = append(out["other languages"], q.Question)
		}
	}
	return out, nil
}

// containedWords is how many words the shorter of an example and a query must have for it to
// count as contained in the other: "5 squared" may be part of a question without being a copy of
// it; "what day of the week is it" may not.
const containedWords = 4

// Contaminated returns each example (by tool) that is a benchmark query (by source), numbers
// aside: the same words once lower-cased, with punctuation dropped and every number made "#";
// or the one's words a run of the other's, when the shorter has containedWords words or more.
// Empty means the examples are disjoint from every query.
func Contaminated(examples map[string][]string, queries map[string][]string) []string {
	type entry struct{ source, text string }
	var qs []entry
	for _, src := range slices.Sorted(maps.Keys(queries)) {
		for _, q := range queries[src] {
			qs = append(qs, entry{src, maskedWords(q)})
		}
	}
	exact := map[string]string{}
	for _, q := range qs {
		exact[q.text] = q.source
	}
	var out []string
	for _, tool := range slices.Sorted(maps.Keys(examples)) {
		for _, ex := range examples[tool] {
			m := maskedWords(ex)
			if src, ok := exact[m]; ok {
				out = append(out, fmt.Sprintf("%s example %q is a %s query", tool, ex, src))
				continue
			}
			for _, q := range qs {
				short, long := m, q.text
				if len(strings.Fields(long)) < len(strings.Fields(short)) {
					short, long = long, short
				}
				if len(strings.Fields(short)) >= containedWords && strings.Contains(" "+long+" ", " "+short+" ") {
					out = append(out, fmt.Sprintf("%s example %q overlaps a %s query %q", tool, ex, q.source, q.text))
					break
				}
			}
		}
	}
	return out
}

// maskedWords is s lower-cased, its numbers made "#", each arithmetic symbol a word of its own,
// every run of other characters than letters one space.
func maskedWords(s string) string {
	var b strings.Builder
	inNum, space := false, true
	sep := func() {
		if !space {
			b.WriteByte(' ')
		}
		space = true
	}
	for _, r := range strings.ToLower(s) {
		switch {
		case unicode.IsDigit(r) || inNum && (r == '.' || r == ','):
			if !inNum {
				b.WriteByte('#')
			}
			inNum, space = true, false
		case unicode.IsLetter(r):
			b.WriteRune(r)
			inNum, space = false, false
		case strings.ContainsRune("+-−*×÷/^%√=", r):
			sep()
			b.WriteRune(r)
			b.WriteByte(' ')
			inNum = false
		default:
			sep()
			inNum = false
		}
	}
	return strings.TrimSpace(b.String())
}
