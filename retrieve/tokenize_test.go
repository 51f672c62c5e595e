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
