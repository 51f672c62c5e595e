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
// one labeled report-part query of a known pool, or the translation is missing or looks English.
func TestNonEnglishRefusesWhatIsNotThePoolsOwn(t *testing.T) {
	report := inPart(t, "P", PartReport, "how do I find the weather in Paris")
	tuned := inPart(t, "P", PartTune, "how do I find the weather in Paris")
	unlabeled := inPart(t, "P", PartReport, "what is the time")
	twice := inPart(t, "P", PartReport, "convert the currency")
	other := inPart(t, "Q", PartReport, "sum the numbers")
	pools := []*Pool{
		{Name: "P", Queries: []Query{
			{Text: report, Gold: "s.weather"}, {Text: report, Gold: "s.weather"}, {Text: tuned, Gold: "s.weather"},
			{Text: unlabeled}, {Text: twice, Gold: "s.fx"}, {Text: twice, Gold: "s.rates"},
		}},
		{Name: "Q", Queries: []Query{{Text: other, Gold: "q.sum"}}},
	}
	type item struct{ Pool, Lang, English, Question string }
	zh := item{"P", "zh", report, "巴黎的天气怎么查？"}
	es := item{"Q", "es", other, "Suma los números"}
	for _, tc := range []struct {
		name  string
		items []item
		want  error // nil: loads
	}{
		{"labels", []item{zh, es}, nil},
		{"unknown pool", []item{{"R", "zh", report, zh.Question}}, errUnknownPool},
		{"query of another pool", []item{{"P", "es", other, es.Question}}, errNotQuery},
		{"English not verbatim", []item{{"P", "zh", strings.ToUpper(report), zh.Question}}, errNotQuery},
		{"tune part", []item{{"P", "zh", tuned, zh.Question}}, errNotReport},
		{"unlabeled query", []item{{"P", "zh", unlabeled, "现在几点？"}}, errUnlabeled},
		{"two labels", []item{{"P", "zh", twice, "换算一下货币"}}, errUnlabeled},
		{"no language", []item{{"P", "", report, zh.Question}}, errEmpty},
		{"no question", []item{{"P", "zh", report, " "}}, errEmpty},
		{"unknown language", []item{{"P", "xx", report, zh.Question}}, errUnknownLang},
		{"the English itself", []item{{"Q", "es", other, " " + strings.ToUpper(other) + " "}}, errLooksEnglish},
		{"ASCII for a non-Latin script", []item{{"P", "ja", report, "How do I find the weather in Paris?"}}, errLooksEnglish},
		{"repeated", []item{zh, es, {"P", "ko", report, "파리 날씨는 어떻게 찾나요?"}}, errRepeated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var qs []map[string]string
			for _, it := range tc.items {
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
			got, err := NonEnglish(path, pools...)
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
			want := []Translated{
				{Pool: "P", Lang: "zh", English: report, Question: zh.Question, Gold: "s.weather"},
				{Pool: "Q", Lang: "es", English: other, Question: es.Question, Gold: "q.sum"},
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

// TestNonEnglishRefusesAnEmptySet: a file without questions is an error, not an empty set.
func TestNonEnglishRefusesAnEmptySet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nonenglish.json")
	if err := os.WriteFile(path, []byte(`{"about": "x", "questions": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NonEnglish(path, &Pool{Name: "P"}); err == nil || !strings.Contains(err.Error(), "no questions") {
		t.Errorf("got %v, want no questions", err)
	}
}

// TestNonEnglishSet loads bench/data/nonenglish.json against the public pools: all 144
// questions are report-part queries labeled by their pool, 12 in each language, 96 of MetaTool
// (each on a different tool) and 48 of the BFCL pool, and every label is a tool its pool serves.
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
	set, err := NonEnglish(filepath.Join(data, "nonenglish.json"), meta, bfcl)
	if err != nil {
		t.Fatal(err)
	}
	if len(set) != 144 {
		t.Errorf("got %d questions, want 144", len(set))
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
	}
	for _, lang := range NonEnglishLangs {
		if perLang[lang] != 12 {
			t.Errorf("%s: got %d questions, want 12", lang, perLang[lang])
		}
	}
	if len(perLang) != len(NonEnglishLangs) {
		t.Errorf("got languages %v, want %v", perLang, NonEnglishLangs)
	}
	if perPool[PoolMetaTool] != 96 || perPool[PoolBFCL] != 48 || len(metaGolds) != 96 {
		t.Errorf("got %v and %d MetaTool tools, want 96 MetaTool questions on 96 tools and 48 of the BFCL pool", perPool, len(metaGolds))
	}
}
