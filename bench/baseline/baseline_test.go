package baseline

import (
	"math"
	"slices"
	"testing"
)

func TestWordsAndTerms(t *testing.T) {
	if got, want := Words("What's 2+2? Calculator.add"), []string{"what", "s", "2", "2", "calculator", "add"}; !slices.Equal(got, want) {
		t.Errorf("Words: got %q, want %q", got, want)
	}
	tests := []struct{ in, want []string }{
		{[]string{"getFileInfo"}, []string{"file", "info"}},
		{[]string{"PDFReader read_text_file"}, []string{"pdf", "reader", "read", "text", "file"}},
		{[]string{"list-directory with sizes"}, []string{"list", "directory", "size"}},
		{[]string{"What are the queries about files?"}, []string{"query", "file"}},
		{[]string{"mp3 player2go"}, []string{"mp", "3", "player", "2", "go"}},
	}
	for _, tc := range tests {
		if got := Terms(tc.in[0]); !slices.Equal(got, tc.want) {
			t.Errorf("Terms(%q): got %q, want %q", tc.in[0], got, tc.want)
		}
	}
}

func TestStem(t *testing.T) {
	for in, want := range map[string]string{
		"queries": "query", "series": "sery", "movies": "movy", "files": "file", "shoes": "shoe", "goes": "goe",
		"status": "status", "class": "class", "tools": "tool", "bus": "bus", "news": "new",
	} {
		if got := stem(in); got != want {
			t.Errorf("stem(%q): got %q, want %q", in, got, want)
		}
	}
}

func TestGate(t *testing.T) {
	tests := []struct {
		query string
		want  bool
	}{
		{"What is the capital of France?", true},          // "what is"
		{"My address is 12 Rue de la Paix.", true},        // "add" inside "address"
		{"I was born on 1990-05-14.", true},               // "-"
		{"Who won the game yesterday?", true},             // "yesterday"
		{"Compute 3×4", true},                             // "compute", "×"
		{"Read the file notes.txt.", false},               // no indicator
		{"Translate 'good morning' into Spanish.", false}, // no indicator
		{"WHERE IS the station?", true},                   // case-insensitive
	}
	for _, tc := range tests {
		if got := Gate(tc.query); got != tc.want {
			t.Errorf("Gate(%q): got %v, want %v", tc.query, got, tc.want)
		}
	}
}

var tools = []Tool{
	{Name: "calculator.add", Description: "Add two numbers and return a + b.", Params: []Param{{Name: "a"}, {Name: "b"}}},
	{Name: "clock.current_time", Description: "Return the current date and time in a time zone.", Params: []Param{{Name: "timezone"}}},
	{Name: "filesystem.read_text_file", Description: "Read the complete contents of a file as text.", Params: []Param{{Name: "path", Description: "Where the file is"}}},
}

func TestCouncil(t *testing.T) {
	tests := []struct {
		query string
		ok    bool
		tool  string
		score float64
	}{
		// Gate passes ("what is", "current"); clock shares current, time, the, in.
		{"What is the current time in Tokyo?", true, "clock.current_time", 4},
		// Gate passes ("add" inside "address", one word that matches no tool word). Both calculator
		// ("a + b") and clock ("in a time zone") share only "a": the tie goes to the first tool.
		{"My address is a secret", true, "calculator.add", 1},
		// No indicator: no tool, even though the filesystem tool fits.
		{"Read the file notes.txt", false, "", 0},
		// Gate passes, no word shared with any tool: the first tool.
		{"Who is Ada Lovelace?", true, "calculator.add", 0},
	}
	for _, tc := range tests {
		c := NewCouncil(tools)
		m, ok := c.Route(tc.query)
		if ok != tc.ok || m.Tool != tc.tool || m.Score != tc.score {
			t.Errorf("Council(%q): got %+v %v, want {%s %v} %v", tc.query, m, ok, tc.tool, tc.score, tc.ok)
		}
		// What the gate passes on: every tool, Route's choice first, or nothing.
		ranked, rok := c.Ranked(tc.query)
		if rok != ok || ok && (len(ranked) != len(tools) || ranked[0] != m) || !ok && len(ranked) != 0 {
			t.Errorf("Ranked(%q): got %+v %v, want all %d tools led by %+v, or none when the gate fails", tc.query, ranked, rok, len(tools), m)
		}
	}
	ranked, _ := NewCouncil(tools).Ranked("What is the current time in Tokyo?")
	var order []string
	for _, m := range ranked {
		order = append(order, m.Tool)
	}
	// clock shares 4 words, calculator 0 and filesystem 1 ("the").
	if want := []string{"clock.current_time", "filesystem.read_text_file", "calculator.add"}; !slices.Equal(order, want) {
		t.Errorf("Ranked order: got %v, want %v", order, want)
	}
	if _, ok := NewCouncil(nil).Route("what is 2+2"); ok {
		t.Error("Council with no tools: got a tool, want none")
	}
}

func TestOverlap(t *testing.T) {
	o := NewOverlap(tools)
	tests := []struct {
		query string
		want  Match
	}{
		{"read the text of notes.txt", Match{Tool: "filesystem.read_text_file", Score: 2}}, // read, text ("txt" is not "text")
		{"What is the capital of France?", Match{}},
		{"what time is it in the timezone of Tokyo", Match{Tool: "clock.current_time", Score: 2}}, // time, timezone
		// Parameter names count, parameter descriptions do not: "path" matches, "where" is a stop word.
		{"path please", Match{Tool: "filesystem.read_text_file", Score: 1}},
	}
	for _, tc := range tests {
		if got := o.Best(tc.query); got != tc.want {
			t.Errorf("Best(%q): got %+v, want %+v", tc.query, got, tc.want)
		}
	}
}

func TestBM25(t *testing.T) {
	// Documents after Terms: A = [alpha apple banana] (the "a" of "a.alpha" is a stop word),
	// B = [b beta banana cherry cherry]; N = 2, avgdl = 4, k1 = 1.2, b = 0.75.
	x := NewBM25([]Tool{
		{Name: "a.alpha", Description: "apple banana"},
		{Name: "b.beta", Description: "banana cherry cherry"},
	})
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	// cherry: df 1, idf = ln(1 + 1.5/1.5) = ln 2; B: f = 2, |D| = 5:
	// ln2 · 2·2.2 / (2 + 1.2·(0.25 + 0.75·5/4)) = ln2 · 4.4/3.425.
	if m := x.Best("cherry"); m.Tool != "b.beta" || !near(m.Score, math.Ln2*4.4/3.425) {
		t.Errorf("cherry: got %+v, want b.beta %.6f", m, math.Ln2*4.4/3.425)
	}
	// banana: df 2, idf = ln 1.2; A (|D| = 3): 2.2/(1 + 1.2·0.8125) = 2.2/1.975 beats B (|D| = 5): 2.2/2.425.
	if m := x.Best("banana"); m.Tool != "a.alpha" || !near(m.Score, math.Log(1.2)*2.2/1.975) {
		t.Errorf("banana: got %+v, want a.alpha %.6f", m, math.Log(1.2)*2.2/1.975)
	}
	if m := x.Best("durian"); m != (Match{}) {
		t.Errorf("durian: got %+v, want no match", m)
	}
	// Repeated query terms count once.
	if a, b := x.Best("cherry cherry"), x.Best("cherry"); a != b {
		t.Errorf("got %+v for a repeated term, want %+v", a, b)
	}
}
