package retrieve

import (
	"slices"
	"testing"
)

func TestWords(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"dotted", "weather.forecast", []string{"weather", "forecast"}},
		{"snake", "get_current_weather", []string{"get", "current", "weather"}},
		{"kebab", "read-text-file", []string{"read", "text", "file"}},
		{"camel", "listFilesInDir", []string{"list", "Files", "In", "Dir"}},
		{"pascal", "SearchWeb", []string{"Search", "Web"}},
		{"acronym before word", "PDFFile", []string{"PDF", "File"}},
		{"acronym at end", "parseHTML", []string{"parse", "HTML"}},
		{"digits", "v2api", []string{"v", "2", "api"}},
		{"digits inside", "bfcl03-2.sum", []string{"bfcl", "03", "2", "sum"}},
		{"punctuation and spaces", "  Hello, world!  (x=1) ", []string{"Hello", "world", "x", "1"}},
		{"non-ASCII letters", "café_menü", []string{"café", "menü"}},
		{"empty", "", nil},
		{"only separators", "._- ", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Words(tc.in); !slices.Equal(got, tc.want) {
				t.Errorf("Words(%q): got %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestStem(t *testing.T) {
	tests := []struct{ in, want string }{
		{"files", "fil"}, {"file", "fil"}, {"filing", "fil"},
		{"searches", "search"}, {"searching", "search"}, {"searched", "search"}, {"search", "search"},
		{"queries", "query"}, {"query", "query"},
		{"boxes", "box"}, {"classes", "class"}, {"wishes", "wish"},
		{"cache", "cach"}, {"caches", "cach"}, {"cached", "cach"}, {"caching", "cach"},
		{"create", "creat"}, {"creates", "creat"}, {"created", "creat"}, {"creating", "creat"},
		{"running", "run"}, {"stopped", "stop"}, {"installed", "install"}, {"calls", "call"},
		{"status", "status"}, {"analysis", "analysis"}, {"address", "address"},
		{"speed", "speed"}, {"need", "need"},
		{"bus", "bus"}, {"ids", "ids"}, {"api", "api"},
		{"weather", "weather"}, {"forecasts", "forecast"},
		{"café", "café"}, {"2024", "2024"},
		// One derivational suffix, so that a word's forms meet.
		{"calculation", "calcul"}, {"calculate", "calcul"}, {"calculator", "calcul"},
		{"similarity", "similar"}, {"genetically", "genetic"}, {"genetics", "genetic"},
		{"preference", "prefer"}, {"preferring", "prefer"}, {"invention", "invent"}, {"invented", "invent"},
		{"information", "inform"}, {"development", "develop"}, {"annually", "annual"}, {"monthly", "month"},
		// Too short to strip, or a suffix left alone.
		{"date", "dat"}, {"update", "updat"}, {"city", "city"}, {"only", "only"}, {"family", "family"},
		{"weather", "weather"}, {"discoverer", "discoverer"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := Stem(tc.in); got != tc.want {
				t.Errorf("Stem(%q): got %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestTerms(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"identifier", "weather.getForecasts", []string{"weather", "get", "forecast"}},
		{"stop words dropped", "What is the weather in Paris?", []string{"weather", "paris"}},
		{"query meets name", "Searching the files", []string{"search", "fil"}},
		{"apostrophes", "the user's files don't load", []string{"user", "fil", "don", "load"}},
		{"case folded", "GitHub ISSUES", []string{"git", "hub", "issu"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Terms(tc.in); !slices.Equal(got, tc.want) {
				t.Errorf("Terms(%q): got %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestNameCandidates(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"qualified in backticks", "use `weather.forecast`.", []string{"\x00weather.forecast"}},
		{"call syntax", "weather.forecast(city=Paris)", []string{"\x00weather.forecast"}},
		{"snake name", "please run get_weather now", []string{"\x00get_weather"}},
		{"plain words are not names", "search the web", nil},
		{"sentence dot is trimmed", "I want forecast.", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := nameCandidates(tc.in); !slices.Equal(got, tc.want) {
				t.Errorf("nameCandidates(%q): got %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestEvidence(t *testing.T) {
	op := func(o string) string { return opKey + o }
	tests := []struct {
		name, in string
		want     []string
	}{
		{"times in words", "What is 17 times 23?", []string{op("*")}},
		{"times sign", "What's 17 × 23?", []string{op("*")}},
		{"star", "9*8", []string{op("*")}},
		{"plus and minus", "345 plus 678 minus 12", []string{op("+"), op("-")}},
		{"divided by", "144 divided by 12", []string{op("/")}},
		{"slash between numbers", "1000 / 25", []string{op("/")}},
		{"percent sign", "What is 12.5% of 640?", []string{op("%")}},
		{"percent in words", "15 percent of 80", []string{op("%")}},
		{"to the power of", "3 raised to the power of 5", []string{op("^"), op("^")}},
		{"caret", "2^16", []string{op("^")}},
		{"squared", "5 squared", []string{op("^")}},
		{"root", "square root of 729", []string{op("√")}},
		{"expression", "(12 + 7) * 3 - 4", []string{op("+"), op("*"), op("-")}},
		{"a date is no subtraction", "days between 2024-01-01 and 2024-03-01", nil},
		{"a date with slashes", "on 1/31/2024", nil},
		{"times without numbers", "how many times did it rain", nil},
		{"a glob is no product", "find *.go files", []string{fileKey}},
		{"file names", "rename draft.txt to final.txt", []string{fileKey, fileKey}},
		{"a path", "how big is reports/q3.csv?", []string{fileKey}},
		{"file types", "find all the csv files", []string{fileKey}},
		{"abbreviations are not files", "e.g. the U.S. economy", nil},
		{"numbers are not files", "pi is 3.14", nil},
		{"a URL is not a file", "open https://example.com/index.html", nil},
		{"nothing", "what time is it in Tokyo", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			evidence(tc.in, func(k string) { got = append(got, k) })
			if !slices.Equal(got, tc.want) {
				t.Errorf("evidence(%q): got %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestLooseStem(t *testing.T) {
	tests := []struct{ stem, want string }{
		{"discoverer", "discover"},
		{"discovery", "discover"},
		{"deliverer", "deliver"},
		{"scorer", "scor"}, // as "score" stems
		{"user", "user"},   // four letters must remain
		{"search", "search"},
	}
	for _, tc := range tests {
		if got := looseStem(tc.stem); got != tc.want {
			t.Errorf("looseStem(%q): got %q, want %q", tc.stem, got, tc.want)
		}
	}
}

func TestPartialQueryKeys(t *testing.T) {
	tests := []struct {
		word string
		want []string
	}{
		{"probability", []string{looseKey + "probabil", abbrevKey + "prob", abbrevKey + "proba", abbrevKey + "probab"}},
		// "file" is the stem of "files": not an abbreviation of it.
		{"files", []string{looseKey + "fil"}},
		{"map", []string{looseKey + "map"}},
	}
	for _, tc := range tests {
		var got []string
		partialQueryKeys(tc.word, Stem(tc.word), Matching{Loose: true}, func(prefix, text string) { got = append(got, prefix+text) })
		if !slices.Equal(got, tc.want) {
			t.Errorf("partialQueryKeys(%q): got %q, want %q", tc.word, got, tc.want)
		}
	}
}

func TestAsksDate(t *testing.T) {
	tests := []struct {
		text string
		want bool
	}{
		{"when was the bridge opened", true},
		{"weather on July 4, 1976", true},
		{"sales since 3 jan", true},
		{"logs from 2024-01-31", true},
		{"due 1/31/2024", true},
		{"march to the sea", false},
		{"divide 1/3", false},
		{"what is the date format", false},
	}
	for _, tc := range tests {
		if got := asksDate(lexTokens(tc.text)); got != tc.want {
			t.Errorf("asksDate(%q): got %v, want %v", tc.text, got, tc.want)
		}
	}
}
