package retrieval

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"toolrouter/retrieve/retrievetest"
)

// TestExamplesAreNotBenchmarkQueries: no example written for the built-in servers or for the
// reference servers is a query of any benchmark (BFCL, MetaTool's committed sample and awareness
// set, the scenarios, the obvious intents), numbers aside, nor a long run of one. With
// TOOLROUTER_METATOOL_CSV naming the full all_clean_data.csv, its 20,614 rows are checked too.
func TestExamplesAreNotBenchmarkQueries(t *testing.T) {
	dir := retrievetest.DataDir()
	csvs := []string{filepath.Join(dir, "metatool", "all_clean_data_sample.csv")}
	if full := os.Getenv("TOOLROUTER_METATOOL_CSV"); full != "" {
		csvs = append(csvs, full)
	}
	shipped, reference, err := Examples(filepath.Join(dir, "reference_examples.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, csv := range csvs {
		queries, err := BenchmarkQueries(dir, csv)
		if err != nil {
			t.Fatal(err)
		}
		for name, ex := range map[string]map[string][]string{"built-in": shipped, "reference": reference} {
			if bad := Contaminated(ex, queries); len(bad) > 0 {
				t.Errorf("%s examples against %s: %d overlap benchmark queries:\n%s", name, filepath.Base(csv), len(bad), bad)
			}
		}
	}
}

// TestContaminated: an example equal to a query but for case, punctuation and numbers is caught,
// and so is one whose words run inside a query's (or the other way round) when the shorter has
// four words or more; other examples are not.
func TestContaminated(t *testing.T) {
	queries := map[string][]string{"set": {"What is 17 times 23?", "what day of the week is it today", "Sum 2 and 3 please"}}
	tests := []struct {
		example string
		caught  bool
	}{
		{"what is 4 times 9", true},
		{"WHAT IS 17.5 TIMES 2!", true},
		{"what day of the week is it", true},
		{"day of the week", true},
		{"sum 2 and", false},
		{"what is 4 plus 9", false},
		{"times", false},
	}
	for _, tc := range tests {
		t.Run(tc.example, func(t *testing.T) {
			got := Contaminated(map[string][]string{"s.t": {tc.example}}, queries)
			if (len(got) > 0) != tc.caught {
				t.Errorf("got %q, want caught %v", got, tc.caught)
			}
		})
	}
	if got := Contaminated(map[string][]string{"s.t": {"a b"}}, nil); !slices.Equal(got, nil) {
		t.Errorf("no queries: got %q", got)
	}
}
