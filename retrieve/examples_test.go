package retrieve_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"toolrouter/retrieve"
)

func openExamples(t *testing.T, path string, perTool int) *retrieve.Examples {
	t.Helper()
	e, err := retrieve.OpenExamples(path, perTool)
	if err != nil {
		t.Fatalf("OpenExamples: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func learn(t *testing.T, e *retrieve.Examples, tool, query string) bool {
	t.Helper()
	added, err := e.Learn(tool, query)
	if err != nil {
		t.Fatalf("Learn(%q, %q): %v", tool, query, err)
	}
	return added
}

func TestExamplesSurviveRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "examples.jsonl")
	e := openExamples(t, path, 3)
	learn(t, e, "weather.forecast", "will it rain in Paris tomorrow")
	learn(t, e, "weather.forecast", "forecast for Oslo")
	learn(t, e, "calc.add", "what is 2 plus 2")
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	again := openExamples(t, path, 3)
	tests := []struct {
		tool string
		want []string
	}{
		{"weather.forecast", []string{"will it rain in Paris tomorrow", "forecast for Oslo"}},
		{"calc.add", []string{"what is 2 plus 2"}},
		{"files.read", nil},
	}
	for _, tc := range tests {
		t.Run(tc.tool, func(t *testing.T) {
			if got := again.For(tc.tool); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestExamplesDedupeAndBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "examples.jsonl")
	e := openExamples(t, path, 2)
	e.SetConfigured(map[string][]string{"calc.add": {"Add 1 and 2"}})
	steps := []struct {
		tool, query string
		added       bool
		want        []string
	}{
		{"calc.add", "sum of 3 and 4", true, []string{"Add 1 and 2", "sum of 3 and 4"}},
		{"calc.add", "  SUM of 3   and 4 ", false, []string{"Add 1 and 2", "sum of 3 and 4"}},
		{"calc.add", "add 1 AND 2", false, []string{"Add 1 and 2", "sum of 3 and 4"}},
		{"calc.add", "5 + 6", true, []string{"Add 1 and 2", "sum of 3 and 4", "5 + 6"}},
		{"calc.add", "seven plus eight", true, []string{"Add 1 and 2", "5 + 6", "seven plus eight"}},
		{"calc.add", "   ", false, []string{"Add 1 and 2", "5 + 6", "seven plus eight"}},
		{"calc.add", string(bytes.Repeat([]byte("x "), 600)), false, []string{"Add 1 and 2", "5 + 6", "seven plus eight"}},
		{"calc.mul", "sum of 3 and 4", true, []string{"sum of 3 and 4"}},
	}
	for i, s := range steps {
		t.Run(fmt.Sprintf("%d %s", i, s.query), func(t *testing.T) {
			if got := learn(t, e, s.tool, s.query); got != s.added {
				t.Errorf("Learn: got added %v, want %v", got, s.added)
			}
			if got := e.For(s.tool); !slices.Equal(got, s.want) {
				t.Errorf("For: got %q, want %q", got, s.want)
			}
		})
	}
	// The bound holds after a restart, whatever the file holds.
	e.Close()
	again := openExamples(t, path, 2)
	if got, want := again.For("calc.add"), []string{"5 + 6", "seven plus eight"}; !slices.Equal(got, want) {
		t.Errorf("after restart: got %q, want %q", got, want)
	}
}

func TestExamplesFileStaysBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "examples.jsonl")
	e := openExamples(t, path, 5)
	for i := range 2000 {
		learn(t, e, fmt.Sprintf("tool%d", i%3), fmt.Sprintf("query number %d", i))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// 15 kept; the file is rewritten past max(2×15, 256) records.
	if lines := bytes.Count(data, []byte("\n")); lines > 256 {
		t.Errorf("got %d lines in the file, want at most 256", lines)
	}
	e.Close()
	again := openExamples(t, path, 5)
	if got, want := again.For("tool1"), []string{"query number 1987", "query number 1990", "query number 1993", "query number 1996", "query number 1999"}; !slices.Equal(got, want) {
		t.Errorf("after restart: got %q, want %q", got, want)
	}
}

func TestExamplesPrune(t *testing.T) {
	path := filepath.Join(t.TempDir(), "examples.jsonl")
	e := openExamples(t, path, 5)
	learn(t, e, "old.tool", "gone soon")
	learn(t, e, "kept.tool", "still here")
	v := e.Version()
	if err := e.Prune(func(tool string) bool { return tool != "old.tool" }); err != nil {
		t.Fatalf("Prune: %v", err)
	}
	if e.Version() == v {
		t.Errorf("got version %d after Prune, want it changed", e.Version())
	}
	e.Close()
	again := openExamples(t, path, 5)
	if got, want := again.All(), map[string][]string{"kept.tool": {"still here"}}; len(got) != 1 || !slices.Equal(got["kept.tool"], want["kept.tool"]) {
		t.Errorf("after restart: got %q, want %q", got, want)
	}
}

func TestExamplesDamagedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "examples.jsonl")
	content := `{"tool":"a.b","query":"first"}` + "\n" + "not json\n" + `{"tool":"a.b","query":"sec`
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	e := openExamples(t, path, 5)
	learn(t, e, "a.b", "third")
	e.Close()
	again := openExamples(t, path, 5)
	if got, want := again.For("a.b"), []string{"first", "third"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestExamplesConcurrentLearn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "examples.jsonl")
	e := openExamples(t, path, 100)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 50 {
				if _, err := e.Learn("t.x", fmt.Sprintf("w%d q%d", w, i)); err != nil {
					t.Error(err)
					return
				}
				_ = e.All()
			}
		})
	}
	wg.Wait()
	e.Close()
	again := openExamples(t, path, 100)
	if got := len(again.For("t.x")); got != 100 {
		t.Errorf("after restart: got %d examples, want 100", got)
	}
}

// TestLearnedExamplesRank shows the point of examples: a query in words the tool's own text does
// not use finds it once a similar query was learned.
func TestLearnedExamplesRank(t *testing.T) {
	e := openExamples(t, "", 20)
	idx := retrieve.NewIndex()
	docs := smallDocs()
	idx.Sync(1, docs)
	query := "how many is seven times six"
	if got := idx.Search(query, 1, nil); len(got) > 0 && got[0].Qualified == "calc.multiply" && got[0].Score > 0 {
		t.Fatalf("before learning: got %v, want calc.multiply not matched", got)
	}
	learn(t, e, "calc.multiply", "how many is three times four")
	for i := range docs {
		docs[i].Examples = e.All()[docs[i].Server+"."+docs[i].Name]
	}
	idx.Sync(2, docs)
	if got := names(idx.Search(query, 1, nil)); !slices.Equal(got, []string{"calc.multiply"}) {
		t.Errorf("after learning: got %q, want calc.multiply", got)
	}
}

// TestExamplesWrittenAndLearned: Written and Learned keep the two apart: the configured examples
// then the model's that do not repeat them, and each tool's learned examples without those a later
// configuration repeats (ignoring case and spacing); what they return is the caller's to change.
func TestExamplesWrittenAndLearned(t *testing.T) {
	e := openExamples(t, "", 20)
	learn(t, e, "s.a", "what is 6 by 7")
	learn(t, e, "s.a", "multiply these")
	learn(t, e, "s.b", "read my notes")
	e.SetConfigured(map[string][]string{"s.a": {"What is  6 by 7", "times table"}})
	e.SetGenerated("s.a", []string{"times table", "six sevens"})
	e.SetGenerated("s.c", []string{"convert a time"})
	written, learned := e.Written(), e.Learned()
	if want := map[string][]string{"s.a": {"What is  6 by 7", "times table", "six sevens"}, "s.c": {"convert a time"}}; !equalExamples(written, want) {
		t.Errorf("Written: got %q, want %q", written, want)
	}
	if want := map[string][]string{"s.a": {"multiply these"}, "s.b": {"read my notes"}}; !equalExamples(learned, want) {
		t.Errorf("Learned: got %q, want %q", learned, want)
	}
	written["s.a"][0], learned["s.b"][0] = "changed", "changed"
	if e.Written()["s.a"][0] == "changed" || e.Learned()["s.b"][0] == "changed" {
		t.Error("changing a returned map changed the store")
	}
	e.SetGenerated("s.c", nil)
	if _, ok := e.Written()["s.c"]; ok {
		t.Error("SetGenerated(nil) kept the tool's generated examples")
	}
}

func equalExamples(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}
