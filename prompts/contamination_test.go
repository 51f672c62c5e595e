package prompts

import (
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"toolrouter/bench/dataset"
)

// The prompts' example wording must stay apart from the benchmark's evaluation queries: a template
// that quotes a query the benchmark asks teaches the model that query's answer, and the benchmark
// then measures the prompt's memory, not the router.

// evalData is the benchmark's copy of the public data and the scenario set.
const evalData = "../bench/data"

// minWords is the shortest query or quoted phrase checked: "what is" or "calculate" appear in
// templates as words to discuss, not as examples.
const minWords = 3

// normalize lower-cases s and turns every run of characters other than letters and digits into
// one space, so case, punctuation and white space do not hide a copy.
func normalize(s string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}), " ")
}

// containsWords reports whether the normalized needle occurs in the normalized haystack on word
// boundaries.
func containsWords(haystack, needle string) bool {
	return needle != "" && strings.Contains(" "+haystack+" ", " "+needle+" ")
}

// quoted matches a double-quoted phrase in a template, outside template actions.
var quoted = regexp.MustCompile(`"([^"{}\n]+)"`)

// evaluationQueries loads every query the benchmark evaluates: BFCL's five categories, MetaTool's
// selection sample and awareness set, and the scenario set.
func evaluationQueries(t *testing.T) map[string][]string {
	t.Helper()
	bfcl := filepath.Join(evalData, "bfcl")
	mt := filepath.Join(evalData, "metatool")
	tools := filepath.Join(mt, "plugin_des.json")
	var sets []*dataset.Dataset
	add := func(ds *dataset.Dataset, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("loading evaluation data: %v", err)
		}
		sets = append(sets, ds)
	}
	for _, f := range []string{"BFCL_v4_simple_python.json", "BFCL_v4_multiple.json", "BFCL_v4_parallel.json", "BFCL_v4_parallel_multiple.json"} {
		add(dataset.LoadBFCL(f, filepath.Join(bfcl, f), filepath.Join(bfcl, "possible_answer", f)))
	}
	add(dataset.LoadBFCL("BFCL_v4_irrelevance.json", filepath.Join(bfcl, "BFCL_v4_irrelevance.json"), ""))
	add(dataset.LoadMetaToolSelection("metatool-selection", filepath.Join(mt, "all_clean_data_sample.csv"), tools, 0, 1))
	add(dataset.LoadMetaToolAwareness("metatool-awareness", filepath.Join(mt, "awareness.json"), tools))
	add(dataset.LoadScenarios("scenarios", filepath.Join(evalData, "scenarios.json"), dataset.ScenarioOptions{}))
	out := map[string][]string{}
	for _, ds := range sets {
		for _, c := range ds.Cases {
			out[ds.Name] = append(out[ds.Name], c.Query)
		}
	}
	return out
}

// TestTemplatesHoldNoEvaluationQuery fails when a prompt template contains a benchmark query
// (case, punctuation and white space ignored), or when a phrase a template quotes occurs in one.
func TestTemplatesHoldNoEvaluationQuery(t *testing.T) {
	queries := evaluationQueries(t)
	names, err := fs.Glob(files, "*.tmpl")
	if err != nil || len(names) == 0 {
		t.Fatalf("got templates %v (%v), want the embedded ones", names, err)
	}
	total := 0
	for _, qs := range queries {
		total += len(qs)
	}
	if total < 4000 {
		t.Fatalf("got %d evaluation queries, want the benchmark's 4,000 or more", total)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			raw, err := fs.ReadFile(files, name)
			if err != nil {
				t.Fatal(err)
			}
			text := normalize(string(raw))
			var phrases []string
			for _, m := range quoted.FindAllStringSubmatch(string(raw), -1) {
				if p := normalize(m[1]); len(strings.Fields(p)) >= minWords {
					phrases = append(phrases, p)
				}
			}
			for set, qs := range queries {
				for _, q := range qs {
					nq := normalize(q)
					if len(strings.Fields(nq)) >= minWords && containsWords(text, nq) {
						t.Errorf("got the %s query %q in the template, want no evaluation query there", set, q)
					}
					for _, p := range phrases {
						if containsWords(nq, p) {
							t.Errorf("got the template's quoted phrase %q in the %s query %q, want examples apart from the evaluation data", p, set, q)
						}
					}
				}
			}
		})
	}
}

// TestContainsWords checks the matcher on the copy this test exists for: select.tmpl once gave
// the scenario set's "What is the capital of France?" as its example.
func TestContainsWords(t *testing.T) {
	tests := []struct {
		name, haystack, needle string
		want                   bool
	}{
		{"case, punctuation and spaces differ", `not enough: "what is the capital of France"  needs`, "What  is the CAPITAL of france?", true},
		{"across a line break", "the capital\nof France", "capital of France", true},
		{"inside a longer word", "the capitals of Frances", "capital of France", false},
		{"empty needle", "anything", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := containsWords(normalize(tc.haystack), normalize(tc.needle)); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
