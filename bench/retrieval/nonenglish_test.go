package retrieval

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"toolrouter/inventory"
	"toolrouter/retrieve/retrievetest"
)

// inPart returns a query text of pool in part, made from prefix.
func inPart(t *testing.T, pool, part, prefix string) string {
	t.Helper()
	for i := range 100 {
		if text := fmt.Sprintf("%s %d", prefix, i); PartOf(pool, text) == part {
			return text
		}
	}
	t.Fatalf("no text of %q in part %s", prefix, part)
	return ""
}

// TestNonEnglishRefusesWhatIsNotThePoolsOwn: a question is labeled with its pool's own tool for
// the verbatim English text, and the file is refused, naming the question, when that text is not
// one labeled query of a known pool in the part the set is read for, or the translation is missing
// or looks English.
func TestNonEnglishRefusesWhatIsNotThePoolsOwn(t *testing.T) {
	report := inPart(t, "P", PartReport, "how do I find the weather in Paris")
	tuned := inPart(t, "P", PartTune, "how do I find the weather in Paris")
	unlabeled := inPart(t, "P", PartReport, "what is the time")
	twice := inPart(t, "P", PartReport, "convert the currency")
	other := inPart(t, "Q", PartReport, "sum the numbers")
	otherTuned := inPart(t, "Q", PartTune, "sum the numbers")
	pools := []*Pool{
		{Name: "P", Queries: []Query{
			{Text: report, Gold: "s.weather"}, {Text: report, Gold: "s.weather"}, {Text: tuned, Gold: "s.forecast"},
			{Text: unlabeled}, {Text: twice, Gold: "s.fx"}, {Text: twice, Gold: "s.rates"},
		}},
		{Name: "Q", Queries: []Query{{Text: other, Gold: "q.sum"}, {Text: otherTuned, Gold: "q.add"}}},
	}
	type item = setItem
	zh := item{"P", "zh", report, "巴黎的天气怎么查？"}
	es := item{"Q", "es", other, "Suma los números"}
	zhTuned := item{"P", "zh", tuned, zh.Question}
	esTuned := item{"Q", "es", otherTuned, es.Question}
	for _, tc := range []struct {
		name  string
		part  string
		items []item
		want  error    // nil: loads
		golds []string // when it loads, the items' labels
	}{
		{"labels", PartReport, []item{zh, es}, nil, []string{"s.weather", "q.sum"}},
		{"labels in the tune part", PartTune, []item{zhTuned, esTuned}, nil, []string{"s.forecast", "q.add"}},
		{"unknown pool", PartReport, []item{{"R", "zh", report, zh.Question}}, errUnknownPool, nil},
		{"query of another pool", PartReport, []item{{"P", "es", other, es.Question}}, errNotQuery, nil},
		{"English not verbatim", PartReport, []item{{"P", "zh", strings.ToUpper(report), zh.Question}}, errNotQuery, nil},
		{"tune part read as report", PartReport, []item{zh, zhTuned}, notInPart{PartReport}, nil},
		{"report part read as tune", PartTune, []item{zhTuned, es}, notInPart{PartTune}, nil},
		{"unlabeled query", PartReport, []item{{"P", "zh", unlabeled, "现在几点？"}}, errUnlabeled, nil},
		{"two labels", PartReport, []item{{"P", "zh", twice, "换算一下货币"}}, errUnlabeled, nil},
		{"no language", PartReport, []item{{"P", "", report, zh.Question}}, errEmpty, nil},
		{"no question", PartReport, []item{{"P", "zh", report, " "}}, errEmpty, nil},
		{"unknown language", PartReport, []item{{"P", "xx", report, zh.Question}}, errUnknownLang, nil},
		{"the English itself", PartReport, []item{{"Q", "es", other, " " + strings.ToUpper(other) + " "}}, errLooksEnglish, nil},
		{"ASCII for a non-Latin script", PartReport, []item{{"P", "ja", report, "How do I find the weather in Paris?"}}, errLooksEnglish, nil},
		{"repeated", PartReport, []item{zh, es, {"P", "ko", report, "파리 날씨는 어떻게 찾나요?"}}, errRepeated, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NonEnglish(writeSet(t, tc.items), tc.part, pools...)
			if tc.want != nil {
				last := tc.items[len(tc.items)-1]
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), fmt.Sprintf("question %d (%s, %s", len(tc.items), last.Pool, last.Lang)) {
					t.Fatalf("got %v, want %v naming question %d", err, tc.want, len(tc.items))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var want []Translated
			for i, it := range tc.items {
				want = append(want, Translated{Pool: it.Pool, Part: tc.part, Lang: it.Lang, English: it.English, Question: it.Question, Gold: tc.golds[i]})
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

// setItem is one question of a non-English set file.
type setItem struct{ Pool, Lang, English, Question string }

// writeSet writes a non-English set of items to a file and returns its path.
func writeSet(t *testing.T, items []setItem) string {
	t.Helper()
	var qs []map[string]string
	for _, it := range items {
		qs = append(qs, map[string]string{"pool": it.Pool, "lang": it.Lang, "english": it.English, "question": it.Question})
	}
	b, err := json.Marshal(map[string]any{"about": "test", "questions": qs})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "nonenglish.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestNonEnglishRefusesAnEmptySet: a file without questions is an error, not an empty set.
func TestNonEnglishRefusesAnEmptySet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nonenglish.json")
	if err := os.WriteFile(path, []byte(`{"about": "x", "questions": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NonEnglish(path, PartReport, &Pool{Name: "P"}); err == nil || !strings.Contains(err.Error(), "no questions") {
		t.Errorf("got %v, want no questions", err)
	}
}

// TestNonEnglishRefusesAnUnknownPart: a set is read for the tune or the report part, nothing else
// (not every part at once), and the error names the part asked for.
func TestNonEnglishRefusesAnUnknownPart(t *testing.T) {
	text := inPart(t, "P", PartReport, "sum the numbers")
	path := writeSet(t, []setItem{{"P", "es", text, "Suma los números"}})
	pool := &Pool{Name: "P", Queries: []Query{{Text: text, Gold: "p.sum"}}}
	for _, part := range []string{"", "all", "Report"} {
		if _, err := NonEnglish(path, part, pool); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("no part %q", part)) {
			t.Errorf("part %q: got %v, want no part %q", part, err, part)
		}
	}
}

// TestNonEnglishSet loads the non-English sets against the public pools: bench/data/nonenglish.json
// has 144 report-part questions, 12 in each language, 96 of MetaTool and 48 of the BFCL pool;
// nonenglish_tune.json has 72 tune-part ones, 6 in each language, 48 of MetaTool and 24 of the BFCL
// pool. In each set every MetaTool question is on a different tool, and every label is a tool its
// pool serves; no English query is in both sets.
func TestNonEnglishSet(t *testing.T) {
	data := retrievetest.DataDir()
	meta, err := MetaTool(filepath.Join(data, "metatool", "plugin_des.json"), filepath.Join(data, "metatool", "all_clean_data_sample.csv"))
	if err != nil {
		t.Fatal(err)
	}
	bfcl, err := BFCL(filepath.Join(data, "bfcl"))
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]map[string]bool{}
	for _, p := range []*Pool{meta, bfcl} {
		tools[p.Name] = map[string]bool{}
		for _, s := range p.Servers {
			for _, tool := range s.Tools {
				tools[p.Name][inventory.Qualify(s.Name, tool.Name)] = true
			}
		}
	}
	inSet := map[[2]string]string{} // pool and English → the file holding it
	for _, tc := range []struct {
		file                   string
		part                   string
		perLang, meta, bfclLen int
	}{
		{"nonenglish.json", PartReport, 12, 96, 48},
		{"nonenglish_tune.json", PartTune, 6, 48, 24},
	} {
		t.Run(tc.file, func(t *testing.T) {
			set, err := NonEnglish(filepath.Join(data, tc.file), tc.part, meta, bfcl)
			if err != nil {
				t.Fatal(err)
			}
			if want := tc.meta + tc.bfclLen; len(set) != want {
				t.Errorf("got %d questions, want %d", len(set), want)
			}
			perLang, perPool, metaGolds := map[string]int{}, map[string]int{}, map[string]bool{}
			for _, q := range set {
				perLang[q.Lang]++
				perPool[q.Pool]++
				if !tools[q.Pool][q.Gold] {
					t.Errorf("%q: gold %s is not a tool of %s", q.English, q.Gold, q.Pool)
				}
				if q.Pool == PoolMetaTool {
					metaGolds[q.Gold] = true
				}
				key := [2]string{q.Pool, q.English}
				if other, ok := inSet[key]; ok {
					t.Errorf("%s %q is in %s as well", q.Pool, q.English, other)
				}
				inSet[key] = tc.file
			}
			for _, lang := range NonEnglishLangs {
				if perLang[lang] != tc.perLang {
					t.Errorf("%s: got %d questions, want %d", lang, perLang[lang], tc.perLang)
				}
			}
			if len(perLang) != len(NonEnglishLangs) {
				t.Errorf("got languages %v, want %v", perLang, NonEnglishLangs)
			}
			if perPool[PoolMetaTool] != tc.meta || perPool[PoolBFCL] != tc.bfclLen || len(metaGolds) != tc.meta {
				t.Errorf("got %v and %d MetaTool tools, want %d MetaTool questions on as many tools and %d of the BFCL pool",
					perPool, len(metaGolds), tc.meta, tc.bfclLen)
			}
		})
	}
}
