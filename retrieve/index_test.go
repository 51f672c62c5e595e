package retrieve_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"toolrouter/retrieve"
	"toolrouter/retrieve/retrievetest"
)

// realTools returns the named tools of the benchmark data, by source name.
func realTools(t *testing.T, names ...string) []retrieve.Doc {
	t.Helper()
	tools, _ := loadReal(t)
	var out []retrieve.Doc
	for _, d := range tools {
		if slices.Contains(names, d.Name) {
			out = append(out, d)
		}
	}
	if len(out) != len(names) {
		t.Fatalf("got %d of the tools %q in bench/data, want all", len(out), names)
	}
	return out
}

func names(hits []retrieve.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Qualified
	}
	return out
}

// tool returns the qualified name of the real tool called name.
func tool(docs []retrieve.Doc, name string) string {
	for _, d := range docs {
		if d.Name == name {
			return d.Qualified
		}
	}
	return "?" + name
}

func TestRankingOnRealTools(t *testing.T) {
	docs := realTools(t, "determine_body_mass_index", "calculate_compound_interest", "currency_converter",
		"triangle_properties.get", "circle_properties.get", "get_closest_prime", "draw_circle",
		"calculator", "airqualityforeast", "ChatOCR", "stellarexplorer", "SummarizeAnything_pr", "Now")
	idx := retrieve.NewIndex()
	idx.Sync(1, docs)
	tests := []struct{ query, want string }{
		{"compute the body mass index for 70 kg and 175 cm", "determine_body_mass_index"},
		{"convert 100 euros into another currency", "currency_converter"},
		{"area of a triangle with sides 3, 4 and 5", "triangle_properties.get"},
		{"circumference of a circle whose radius is 2", "circle_properties.get"},
		{"interest on 1000 dollars at 5% compounded monthly for 10 years", "calculate_compound_interest"},
		{"air quality forecast for zip code 94103", "airqualityforeast"},
		{"extract the handwriting text from this scanned photo", "ChatOCR"},
		{"show me Mars Rover photos from NASA", "stellarexplorer"},
		{"summarize this YouTube video for me", "SummarizeAnything_pr"},
		{"what's trending on Twitter in Japan", "Now"},
		{"largest prime number below 1000", "get_closest_prime"},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			hits := idx.Search(tc.query, 3, nil)
			if len(hits) == 0 || hits[0].Qualified != tool(docs, tc.want) {
				t.Errorf("top 3: got %q, want %s first", names(hits), tool(docs, tc.want))
			}
		})
	}
}

// TestRecallOnRealQueries guards the ranking's quality over every real tool (1,181) with the
// benchmark's labeled queries, each source's queries ranked among that source's tools.
func TestRecallOnRealQueries(t *testing.T) {
	tools, qs := loadReal(t)
	idx := retrieve.NewIndex()
	idx.Sync(1, tools)
	for _, tc := range []struct {
		source  string
		atLeast float64 // recall@5 floor
	}{
		{"bfcl", 0.85},
		{"metatool", 0.58},
	} {
		t.Run(tc.source, func(t *testing.T) {
			permit := func(q string) bool { return strings.HasPrefix(q, tc.source) }
			var n, at1, at5, at20 int
			for _, q := range qs {
				if !permit(q.Tool) {
					continue
				}
				n++
				i := slices.Index(names(idx.Search(q.Query, 20, permit)), q.Tool)
				if i == 0 {
					at1++
				}
				if i >= 0 && i < 5 {
					at5++
				}
				if i >= 0 {
					at20++
				}
			}
			r := func(k int) float64 { return float64(k) / float64(n) }
			t.Logf("%s: %d queries, recall@1 %.3f, @5 %.3f, @20 %.3f", tc.source, n, r(at1), r(at5), r(at20))
			if r(at5) < tc.atLeast {
				t.Errorf("recall@5: got %.3f, want at least %.2f", r(at5), tc.atLeast)
			}
		})
	}
}

// smallDocs is a made-up inventory of three servers.
func smallDocs() []retrieve.Doc {
	return []retrieve.Doc{
		{Server: "weather", Purpose: "Weather data", Name: "forecast", Description: "Get the weather forecast for a city.",
			Params: []retrieve.Param{{Name: "city", Description: "City name"}, {Name: "units", Enum: []string{"metric", "imperial"}}}},
		{Server: "weather", Purpose: "Weather data", Name: "current", Description: "Get the current weather conditions for a city."},
		{Server: "files", Purpose: "Local files", Name: "read_file", Description: "Read a text file from disk.",
			Params: []retrieve.Param{{Name: "path", Description: "File path"}}},
		{Server: "files", Purpose: "Local files", Name: "list_directory", Description: "List the files in a directory."},
		{Server: "calc", Purpose: "Arithmetic", Name: "add", Description: "Add two numbers."},
		{Server: "calc", Purpose: "Arithmetic", Name: "multiply", Description: "Multiply two numbers."},
	}
}

func TestSearchAccessFilter(t *testing.T) {
	idx := retrieve.NewIndex()
	idx.Sync(1, smallDocs())
	denied := map[string]bool{"weather.forecast": true, "files.read_file": true}
	permit := func(q string) bool { return !denied[q] }
	for _, tc := range []struct {
		name, query string
		k           int
	}{
		{"matching query", "weather forecast for Paris", 10},
		{"named verbatim", "use weather.forecast", 10},
		{"every tool", "read the file", 0},
		{"top one", "forecast", 1},
		{"no match pads", "zzz", 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits := idx.Search(tc.query, tc.k, permit)
			for _, h := range hits {
				if denied[h.Qualified] {
					t.Errorf("got denied tool %s in %q", h.Qualified, names(hits))
				}
			}
			if len(hits) == 0 {
				t.Errorf("got no hits, want the permitted tools")
			}
		})
	}
}

func TestSearchOrder(t *testing.T) {
	idx := retrieve.NewIndex()
	idx.Sync(1, smallDocs())
	tests := []struct {
		name, query string
		k           int
		want        []string
	}{
		{"best match first", "current weather conditions", 1, []string{"weather.current"}},
		{"named qualified tool first", "use weather.forecast to get the current weather conditions", 2,
			[]string{"weather.forecast", "weather.current"}},
		{"named bare identifier first", "call read_file on the directory listing", 1, []string{"files.read_file"}},
		{"no match: all by name", "zzz", 0,
			[]string{"calc.add", "calc.multiply", "files.list_directory", "files.read_file", "weather.current", "weather.forecast"}},
		{"matches then the rest by name", "multiply", 3, []string{"calc.multiply", "calc.add", "files.list_directory"}},
		{"k above the tool count gives all", "add", 100,
			[]string{"calc.add", "calc.multiply", "files.list_directory", "files.read_file", "weather.current", "weather.forecast"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(idx.Search(tc.query, tc.k, nil)); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSearchTiesByName(t *testing.T) {
	// Identical documents on servers named in reverse: equal scores, so name order decides.
	var docs []retrieve.Doc
	for _, s := range []string{"s9", "s3", "s5", "s1"} {
		docs = append(docs, retrieve.Doc{Server: s, Name: "lookup", Description: "Look up a word in the dictionary."})
	}
	idx := retrieve.NewIndex()
	idx.Sync(1, docs)
	for range 5 {
		got := idx.Search("dictionary word", 3, nil)
		if want := []string{"s1.lookup", "s3.lookup", "s5.lookup"}; !slices.Equal(names(got), want) {
			t.Fatalf("got %q, want %q", names(got), want)
		}
		if got[0].Score != got[2].Score {
			t.Fatalf("got scores %v, want equal", got)
		}
	}
}

// TestIncrementalEqualsRebuild checks that an index built by updates, removals and compactions
// scores every query exactly as one built in one go.
func TestIncrementalEqualsRebuild(t *testing.T) {
	tools, qs := loadReal(t)
	docs := retrievetest.Pool(tools, 1500)
	byServer := map[string][]retrieve.Doc{}
	for _, d := range docs {
		byServer[d.Server] = append(byServer[d.Server], d)
	}
	servers := slices.Sorted(func(yield func(string) bool) {
		for s := range byServer {
			if !yield(s) {
				return
			}
		}
	})

	full := retrieve.NewIndex()
	full.Sync(7, docs)

	inc := retrieve.NewIndex()
	rng := rand.New(rand.NewPCG(3, 4))
	// Half the servers, in random order, one at a time.
	order := slices.Clone(servers)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	for _, s := range order[:len(order)/2] {
		inc.Update(s, byServer[s][0].Purpose, byServer[s])
	}
	// A server changed, then removed; a made-up server added and removed.
	changed := slices.Clone(byServer[order[0]])
	changed[0].Description = "something else entirely"
	inc.Update(order[0], "another purpose", changed)
	inc.Remove(order[0])
	inc.Update("ghost", "haunting", []retrieve.Doc{{Name: "boo", Description: "scare people"}})
	inc.Remove("ghost")
	// Remove all but three, forcing a compaction, then bring everything in through Sync.
	for _, s := range order[1 : len(order)/2-3] {
		inc.Remove(s)
	}
	if got := inc.Sync(7, docs); len(got) != len(servers)-3 {
		t.Fatalf("Sync reindexed %d servers, want %d (all but the three kept)", len(got), len(servers)-3)
	}
	if got := inc.Sync(7, docs); len(got) != 0 {
		t.Fatalf("repeated Sync reindexed %q, want none", got)
	}
	if inc.Len() != full.Len() || inc.Version() != 7 {
		t.Fatalf("got %d tools at version %d, want %d at 7", inc.Len(), inc.Version(), full.Len())
	}
	for i, q := range qs {
		if i%7 != 0 {
			continue
		}
		want := full.Search(q.Query, 0, nil)
		got := inc.Search(q.Query, 0, nil)
		if !slices.Equal(got, want) {
			t.Fatalf("query %q: incremental and full indexes differ:\ngot  %v\nwant %v", q.Query, got[:min(5, len(got))], want[:min(5, len(want))])
		}
	}
}

func TestSyncReindexesOnlyChangedServers(t *testing.T) {
	idx := retrieve.NewIndex()
	docs := smallDocs()
	if got, want := idx.Sync(1, docs), []string{"calc", "files", "weather"}; !slices.Equal(got, want) {
		t.Fatalf("first Sync: got %q, want %q", got, want)
	}
	docs = slices.Clone(docs)
	docs[4].Examples = []string{"what is 2 plus 2"}
	docs = slices.DeleteFunc(docs, func(d retrieve.Doc) bool { return d.Server == "files" })
	if got, want := idx.Sync(2, docs), []string{"calc", "files"}; !slices.Equal(got, want) {
		t.Fatalf("second Sync: got %q, want %q", got, want)
	}
	if idx.Has("files.read_file") || !idx.Has("calc.add") || idx.Version() != 2 {
		t.Errorf("got Has(files.read_file) %v, Has(calc.add) %v, version %d; want false, true, 2",
			idx.Has("files.read_file"), idx.Has("calc.add"), idx.Version())
	}
	if got := names(idx.Search("2 plus 2", 1, nil)); !slices.Equal(got, []string{"calc.add"}) {
		t.Errorf("search by example: got %q, want calc.add", got)
	}
}

// TestSyncReindexesAChangedFormat: a parameter's format is part of a tool's document, so a
// server that now declares its parameter a "uri" is reindexed and a question holding a web address
// finds the tool.
func TestSyncReindexesAChangedFormat(t *testing.T) {
	idx := retrieve.NewIndex()
	docs := []retrieve.Doc{{Server: "web", Name: "get_page", Description: "Read one page.", Params: []retrieve.Param{{Name: "target", Type: "string"}}}}
	idx.Sync(1, docs)
	const q = "what does https://example.org/pricing say"
	if hits := idx.Search(q, 1, nil); len(hits) == 1 && hits[0].Score > 0 {
		t.Fatalf("before the format: %q found %v, want nothing", q, hits)
	}
	docs[0].Params = []retrieve.Param{{Name: "target", Type: "string", Format: "uri"}}
	if got := idx.Sync(2, docs); !slices.Equal(got, []string{"web"}) {
		t.Fatalf("Sync after the format changed: got %q, want [web]", got)
	}
	if hits := idx.Search(q, 1, nil); len(hits) != 1 || hits[0].Score == 0 {
		t.Errorf("after the format: %q found %v, want web.get_page", q, hits)
	}
}

// TestConcurrentSearchAndUpdate runs searches while a writer replaces servers; run with -race.
func TestConcurrentSearchAndUpdate(t *testing.T) {
	docs := smallDocs()
	idx := retrieve.NewIndex()
	idx.Sync(1, docs)
	var wg sync.WaitGroup
	for r := range 4 {
		wg.Go(func() {
			for i := range 300 {
				hits := idx.Search(fmt.Sprintf("weather forecast %d %d", r, i), 3, nil)
				if len(hits) == 0 {
					t.Error("got no hits, want some: calc and files never leave")
					return
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 300 {
			if i%2 == 0 {
				idx.Remove("weather")
			} else {
				idx.Update("weather", "Weather data", docs[:2])
			}
		}
	})
	wg.Wait()
}

// TestObviousToolAmongManyReal ranks the built-in calculator and clock, as their servers list
// them and with their shipped examples (DocsFrom), among every real tool of the benchmark data: an
// everyday arithmetic or clock query puts the obvious tool in the top 3, although "times" stems to "time", many real tools are about time,
// and a few tools' examples are a drop among a thousand tools without any.
func TestObviousToolAmongManyReal(t *testing.T) {
	docs, _ := loadReal(t)
	docs = append(docs, retrieve.DocsFrom(builtinInventory(t).Snapshot(), nil, nil)...)
	idx := retrieve.NewIndex()
	idx.Sync(1, docs)
	tests := []struct{ query, want string }{
		{"What is 17 times 23?", "calculator.multiply"},
		{"What's 17 × 23?", "calculator.multiply"},
		{"what is 15 percent of 80", "calculator.multiply"},
		{"what's 345 plus 678?", "calculator.add"},
		{"take the square root of 10", "calculator.sqrt"},
		{"What time is it in Tokyo?", "clock.current_time"},
		{"How many days are there between March 3, 2024 and July 4, 2024?", "clock.date_difference"},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			if got := names(idx.Search(tc.query, 3, nil)); !slices.Contains(got, tc.want) {
				t.Errorf("top 3: got %q, want %s among them", got, tc.want)
			}
		})
	}
}

// TestExactWordsInExamplesOutrankStems: in the example fields a word as written counts in full
// and a word that only shares its stem counts less, so "times" finds the tool whose examples say
// "times" before the tool whose examples say "time"; a server's name weighs as its purpose does,
// not as each tool's name.
func TestExactWordsInExamplesOutrankStems(t *testing.T) {
	docs := []retrieve.Doc{
		{Server: "clock", Name: "now", Description: "Return the current date.", Examples: []string{"what time is it"}},
		{Server: "math", Name: "product", Description: "Product of two numbers.", Examples: []string{"3 times 4"}},
		{Server: "everything", Name: "echo", Description: "Echo the input."},
		{Server: "memory", Name: "read_graph", Description: "Read the knowledge graph.", Examples: []string{"tell me everything you know"}},
	}
	idx := retrieve.NewIndex()
	idx.Sync(1, docs)
	tests := []struct{ query, want string }{
		{"times", "math.product"},
		{"time", "clock.now"},
		{"show me everything you know", "memory.read_graph"},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			if got := names(idx.Search(tc.query, 2, nil)); len(got) == 0 || got[0] != tc.want {
				t.Errorf("got %q, want %s first", got, tc.want)
			}
		})
	}
}

// TestWeakerMatches checks the matches besides a word's stem: a tool's name met by a looser stem
// or as an abbreviation, the date a query asks for, and a copy number that matches nothing; and
// that a word's own stem still outranks them.
func TestWeakerMatches(t *testing.T) {
	docs := []retrieve.Doc{
		{Server: "sci", Name: "get_discoverer", Description: "Name the person behind a finding."},
		{Server: "sci", Name: "element_facts", Description: "Facts about a chemical element."},
		{Server: "stats", Name: "calc_binomial_prob", Description: "Binomial distribution."},
		{Server: "stats", Name: "probability_table", Description: "Table of outcomes."},
		{Server: "history", Name: "event_date", Description: "Look up a historical event."},
		{Server: "history", Name: "event_summary", Description: "Summarise a historical event."},
		{Server: "units", Name: "convert_2", Description: "Change a quantity's unit."},
	}
	idx := retrieve.NewIndex()
	idx.Sync(1, docs)
	tests := []struct {
		name, query string
		want        []string // the first hits, in order
	}{
		{"looser stem of a name word", "the lab that discovered penicillin", []string{"sci.get_discoverer"}},
		{"abbreviation in a name", "calculate a binomial", []string{"stats.calc_binomial_prob"}},
		{"the stem outranks the abbreviation", "probability of 4 heads", []string{"stats.probability_table", "stats.calc_binomial_prob"}},
		{"when asks for a date", "when did the first historical event happen", []string{"history.event_date", "history.event_summary"}},
		{"a named date asks for one", "events on March 3, 1921", []string{"history.event_date"}},
		{"a copy number matches no number", "2", []string{"history.event_date", "history.event_summary"}},
		{"the whole name still names the tool", "use convert_2", []string{"units.convert_2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hits := idx.Search(tc.query, len(tc.want), nil)
			if got := names(hits); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
