package retrieval

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"toolrouter/bench/report"
)

// Results is one run of the retrieval benchmark.
type Results struct {
	Command string         `json:"command"`
	Started time.Time      `json:"started"`
	Seconds float64        `json:"seconds"`
	Machine report.Machine `json:"machine"`
	Seed    uint64         `json:"seed"`
	// Limit, when not 0, is how many queries of each pool were run.
	Limit int `json:"limit,omitempty"`
	// LoadStart and LoadEnd are the machine's one-minute load average when the run started and
	// ended (-1 where unknown): other work on the machine lengthens the latencies, p99 most.
	LoadStart float64  `json:"load_start"`
	LoadEnd   float64  `json:"load_end"`
	Recall    []Recall `json:"recall"`
	// HeldOut is recall on each pool's tune and report parts (PartOf), by query length and script.
	HeldOut []HeldOut `json:"held_out,omitempty"`
	// Matching is recall on each part with each way of matching words turned off alone.
	Matching []MatchingRecall `json:"matching,omitempty"`
	// Languages is how the non-English set's questions reach their tools, by pool and language;
	// WeakShares how many English queries get a weak shortlist, by pool and part.
	Languages  []LanguageRecall `json:"languages,omitempty"`
	WeakShares []WeakShare      `json:"weak_shares,omitempty"`
	// Intents is the obvious-intents set ranked beside each pool size; IntentRule and
	// IntentExcluded say which pool tools were left out.
	Intents        []IntentRecall `json:"obvious_intents,omitempty"`
	IntentRule     string         `json:"obvious_intents_rule,omitempty"`
	IntentExcluded []Excluded     `json:"obvious_intents_excluded,omitempty"`
	Scale          []Scale        `json:"scale"`
	Targets        []Target       `json:"targets"`
}

// Target is one figure the shortlist is held to, and whether this run met it.
type Target struct {
	What     string `json:"what"`
	Measured string `json:"measured"`
	// Met is nil when the run did not measure it (a pool or size left out).
	Met *bool `json:"met,omitempty"`
}

// Target thresholds.
const (
	targetShortlistUS = 1000.0
	targetSize        = 20000
	targetBudget      = 2000
	targetRecall      = 0.97
	// targetBFCLAt10 is the BFCL pool's recall among the 10 best-ranked (bm25).
	targetBFCLAt10 = 0.98
	// targetIntentK: every obvious intent's tool among this many best-ranked.
	targetIntentK = 5
)

// Pool names as the report uses them.
const (
	PoolMetaTool = "MetaTool"
	PoolBFCL     = "BFCL pool"
)

// Evaluate sets the run's targets from its figures.
func (r *Results) Evaluate() {
	r.Targets = nil
	add := func(what, measured string, met *bool) {
		r.Targets = append(r.Targets, Target{What: what, Measured: measured, Met: met})
	}
	yes := func(b bool) *bool { return &b }

	if s := r.scaleAt(targetSize); s != nil {
		add(fmt.Sprintf("shortlist p50 < %.0f ms at %d tools", targetShortlistUS/1000, targetSize),
			fmt.Sprintf("%.0f µs (p99 %.0f µs)", s.ShortlistUS.P50, s.ShortlistUS.P99), yes(s.ShortlistUS.P50 < targetShortlistUS))
	} else {
		add(fmt.Sprintf("shortlist p50 < %.0f ms at %d tools", targetShortlistUS/1000, targetSize), "not measured in this run", nil)
	}

	over, shortlists, maxUsed := 0, 0, []string{}
	for _, s := range r.Scale {
		over += s.OverBudget + s.OverWindow
		shortlists += s.Routes - s.Whole
		maxUsed = append(maxUsed, fmt.Sprintf("%d tools: at most %.0f of %d", s.Tools, s.UsedTokens.Max, s.Budget))
	}
	for _, rc := range r.Recall {
		for _, b := range rc.AtBudget {
			over += b.OverBudget
			shortlists += rc.Queries - b.Whole
		}
	}
	if shortlists > 0 {
		add("phase-1 tool list never over its budget, at any pool size or budget",
			fmt.Sprintf("%d of %d shortlists over (%s)", over, shortlists, strings.Join(maxUsed, "; ")), yes(over == 0))
	}

	for _, t := range []struct{ pool, set string }{{PoolBFCL, BM25}, {PoolMetaTool, BM25Examples}} {
		what := fmt.Sprintf("recall within a %d-token budget ≥ %.2f: %s, %s", targetBudget, targetRecall, t.pool, t.set)
		if a, ok := r.atBudget(t.pool, t.set, targetBudget); ok {
			// Compared on the counts: 582 of 600 is 0.97 exactly.
			add(what, fmt.Sprintf("%.3f (%d of %d)", a.Recall, a.Hits, a.queries), yes(float64(a.Hits) >= targetRecall*float64(a.queries)-1e-9))
		} else {
			add(what, "not measured in this run", nil)
		}
	}
	what := fmt.Sprintf("recall among the 10 best-ranked ≥ %.2f: %s, %s", targetBFCLAt10, PoolBFCL, BM25)
	if a, n, ok := r.atK(PoolBFCL, BM25, 10); ok {
		add(what, fmt.Sprintf("%.3f (%d of %d)", a.Recall, a.Hits, n), yes(float64(a.Hits) >= targetBFCLAt10*float64(n)-1e-9))
	} else {
		add(what, "not measured in this run", nil)
	}
	for _, in := range r.Intents {
		for _, a := range in.AtK {
			if a.K == targetIntentK {
				add(fmt.Sprintf("obvious intents: the expected tool among the %d best-ranked for every one, beside %d BFCL tools", targetIntentK, in.PoolTools),
					fmt.Sprintf("%.3f (%d of %d)", a.Recall, a.Hits, in.Queries), yes(a.Hits == in.Queries))
			}
		}
	}
	if a, ok := r.atBudget(PoolMetaTool, BM25, targetBudget); ok {
		add(fmt.Sprintf("recall within a %d-token budget: MetaTool, bm25 (reported as it is, no target)", targetBudget),
			fmt.Sprintf("%.3f (%d of %d)", a.Recall, a.Hits, a.queries), nil)
	}
}

func (r *Results) scaleAt(tools int) *Scale {
	for i := range r.Scale {
		if r.Scale[i].Tools == tools {
			return &r.Scale[i]
		}
	}
	return nil
}

// atK returns a candidate set's recall among the k best-ranked and its number of queries.
func (r *Results) atK(pool, set string, k int) (AtK, int, bool) {
	for _, rc := range r.Recall {
		if rc.Pool != pool || rc.Set != set {
			continue
		}
		for _, a := range rc.AtK {
			if a.K == k {
				return a, rc.Queries, true
			}
		}
	}
	return AtK{}, 0, false
}

// budgetRecall is one recall figure with the number of queries it is over.
type budgetRecall struct {
	AtBudget
	queries int
}

func (r *Results) atBudget(pool, set string, budget int) (budgetRecall, bool) {
	for _, rc := range r.Recall {
		if rc.Pool != pool || rc.Set != set {
			continue
		}
		for _, b := range rc.AtBudget {
			if b.Budget == budget {
				return budgetRecall{b, rc.Queries}, true
			}
		}
	}
	return budgetRecall{}, false
}

// Intro says what the retrieval benchmark measures; its figures follow it.
const Intro = "Phase 1 is shown the whole inventory when it fits the tool list's token budget, and a shortlist " +
	"of the best-ranked tools that fit otherwise (`router/shortlist.go`). Recall is scored through the real " +
	"pipeline: each pool is served by in-process MCP servers in an `inventory.Manager`, and every query goes " +
	"through `router.Search` of a router ranking with a `retrieve.Catalog` (BM25F, no embedding model), so the " +
	"tools counted as shown are those the router's own cost measure (each tool's phase-1 entry, " +
	"`prompts.SelectToolText`, and its server's heading, by the router's token estimate) fits in the budget. " +
	"**R@k**: the gold tool among the k best-ranked. **1k/2k/4k tokens**: the gold tool among the tools shown " +
	"under that budget. The keyword gate (the council's, `bench/baseline`) passes on every tool, ordered by " +
	"words shared with the query, when the query holds one of its indicators, and nothing otherwise; it is " +
	"ranked and cut by the same router. With examples, each query is in one of 5 folds by a seeded hash of " +
	"its normalised text (repeated queries share a fold) and is ranked with examples learned " +
	"(`retrieve.Examples.Learn`, the router's cap per tool) from the other folds' queries only, in a seeded " +
	"order; the run fails if a query of the fold is among them.\n\n"

// Markdown renders the results: the recall table, the chart (at chartPath, relative to the
// document; "" for none), the cost at scale and the targets.
func Markdown(r *Results, chartPath string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Command: `%s`  \n", r.Command)
	fmt.Fprintf(&b, "Date: %s.  \n", r.Started.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "Machine: %s/%s, %d CPUs, %s; seed %d; %.0f s.", r.Machine.OS, r.Machine.Arch, r.Machine.CPUs, r.Machine.GoVersion, r.Seed, r.Seconds)
	if r.Limit > 0 {
		fmt.Fprintf(&b, " First %d queries of each pool only.", r.Limit)
	}
	if r.LoadStart >= 0 && r.LoadEnd >= 0 {
		fmt.Fprintf(&b, "  \nLoad average (1 min) %.1f at the start, %.1f at the end: the machine may be shared, and the latencies, p99 most, include any wait for a core.", r.LoadStart, r.LoadEnd)
	}
	b.WriteString("\n\n### Recall of the phase-1 candidate set\n\n")
	b.WriteString("| pool | candidate set | tools | queries | R@1 | R@5 | R@10 | R@20 | 1k tokens | 2k tokens | 4k tokens | tools shown at 1k / 2k / 4k |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var notes []string
	for _, rc := range r.Recall {
		fmt.Fprintf(&b, "| %s | %s | %d | %d |", rc.Pool, rc.Set, rc.Tools, rc.Queries)
		for _, a := range rc.AtK {
			fmt.Fprintf(&b, " %.3f |", a.Recall)
		}
		var shown []string
		for _, a := range rc.AtBudget {
			fmt.Fprintf(&b, " %.3f |", a.Recall)
			shown = append(shown, fmt.Sprintf("%.1f", a.MeanShown))
		}
		fmt.Fprintf(&b, " %s |\n", strings.Join(shown, " / "))
		if rc.Passed != nil {
			notes = append(notes, fmt.Sprintf("%s: the keyword gate passed on %d of %d queries (%.3f); the others are shown no tool.",
				rc.Pool, *rc.Passed, rc.Queries, float64(*rc.Passed)/float64(max(rc.Queries, 1))))
		}
		if e := rc.Examples; e != nil {
			notes = append(notes, fmt.Sprintf("%s, %s: %d folds, at most %d examples per tool (the router's `retrieval.examples_per_tool` default), %.1f per tool on average.",
				rc.Pool, rc.Set, e.Folds, e.PerTool, e.MeanPerTool))
		}
		for _, a := range rc.AtBudget {
			if a.Whole > 0 {
				notes = append(notes, fmt.Sprintf("%s, %s: the whole inventory fit %d tokens for %d queries.", rc.Pool, rc.Set, a.Budget, a.Whole))
			}
		}
	}
	for _, n := range notes {
		fmt.Fprintf(&b, "\n%s", n)
	}
	if len(notes) > 0 {
		b.WriteString("\n")
	}
	if chartPath != "" {
		fmt.Fprintf(&b, "\n![Recall against the tool list's budget](%s)\n", chartPath)
	}

	if len(r.HeldOut) > 0 {
		writeHeldOut(&b, r.HeldOut)
	}
	if len(r.Matching) > 0 {
		writeMatching(&b, r.Matching)
	}
	if len(r.Languages) > 0 {
		writeLanguages(&b, r.Languages, r.WeakShares)
	}

	if len(r.Intents) > 0 {
		writeIntents(&b, r)
	}

	if len(r.Scale) > 0 {
		b.WriteString("\n### Cost at scale\n\n")
		b.WriteString(ScaleIntro)
		b.WriteString("| tools | servers | index build ms | heap MB | RSS MB | rank µs p50 / p99 | shortlist µs p50 / p99 | prompt bytes p50 / max | request bytes p50 / max | prompt tokens p50 / max | tools shown p50 (min–max) | tool-list tokens max / budget | over budget |\n")
		b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, s := range r.Scale {
			fmt.Fprintf(&b, "| %d | %d | %.1f | %s | %s | %.0f / %.0f | %.0f / %.0f | %.0f / %.0f | %.0f / %.0f | %.0f / %.0f | %.0f (%.0f–%.0f) | %.0f / %d | %d of %d |\n",
				s.Tools, s.Servers, s.BuildMS.P50, megabytes(s.HeapMB), megabytes(s.RSSMB), s.RankUS.P50, s.RankUS.P99, s.ShortlistUS.P50, s.ShortlistUS.P99,
				s.PromptBytes.P50, s.PromptBytes.Max, s.RequestBytes.P50, s.RequestBytes.Max, s.PromptTokens.P50, s.PromptTokens.Max,
				s.Shown.P50, s.Shown.Min, s.Shown.Max, s.UsedTokens.Max, s.Budget, s.OverBudget, s.Routes-s.Whole)
		}
		for _, s := range r.Scale {
			for _, why := range s.MemoryUnmeasured {
				fmt.Fprintf(&b, "\nAt %d tools, not measured: %s.\n", s.Tools, why)
			}
		}
		if first, last := r.Scale[0], r.Scale[len(r.Scale)-1]; len(r.Scale) > 1 && first.PromptBytes.P50 > 0 {
			fmt.Fprintf(&b, "\nThe phase-1 prompt at %d tools is %.2f× its size at %d (p50 bytes); at most %.0f of the %d-token window.\n",
				last.Tools, last.PromptBytes.P50/first.PromptBytes.P50, first.Tools, maxTokens(r.Scale), first.Window)
		}
	}

	if len(r.Targets) > 0 {
		b.WriteString("\n### Targets\n\n| target | measured | met |\n|---|---|---|\n")
		for _, t := range r.Targets {
			met := "—"
			if t.Met != nil {
				met = map[bool]string{true: "met", false: "**not met**"}[*t.Met]
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", t.What, t.Measured, met)
		}
	}
	return b.String()
}

// megabytes is a table cell: mb to a tenth, or a dash where it was not measured (the reason
// follows the table).
func megabytes(mb *float64) string {
	if mb == nil {
		return "—"
	}
	return fmt.Sprintf("%.1f", *mb)
}

func maxTokens(ss []Scale) float64 {
	m := 0.0
	for _, s := range ss {
		m = max(m, s.PromptTokens.Max)
	}
	return m
}

// ScaleIntro says how the cost at scale is measured.
const ScaleIntro = "Pools of real tools with their real schemas (BFCL's functions and MetaTool's plugins, " +
	"`retrievetest.Pool`: a fixed shuffle repeated on renamed servers of 20 tools), each served by in-process " +
	"mcp-go servers in an `inventory.Manager`. Every real query (BFCL simple and multiple, MetaTool's sample) is routed, " +
	"one at a time after a warm-up, by `router.New` with the built-in settings (the tool list's budget half of " +
	"num_ctx less the reserve) against a fake Ollama over HTTP that records each phase-1 request and " +
	"answers \"no tool\". **rank**: the ranker's `Rank` calls within the route. **shortlist**: from the request's " +
	"start to the shortlist ready to show (the trace's shortlist step: access, ranking, budget fill and the " +
	"prompt rendered). **prompt bytes**: the messages the model received; **request bytes**: the HTTP body, with " +
	"the format schema and its enum of the shown tools; **prompt tokens**: the router's estimate, checked " +
	"against the window before sending. Then, the routes done and the inventory stopped (a started inventory " +
	"lists its servers again for a while, and that churn would be counted as the index's), the index alone: " +
	"**index build ms**: `retrieve.Catalog.Sync` from empty (documents and BM25F index) from the inventory's " +
	"snapshot, median of the builds; **heap MB** and **RSS MB**: what one built index holds, the live heap " +
	"(`HeapAlloc`) and the resident set (VmRSS) with the index alive less before it was built, each reading after " +
	"two forced GCs and freed memory returned to the system. A memory figure is left out (—), with the reason " +
	"below the table, unless it is above zero and the heap once the index is released is back where it began, " +
	"within a tenth of the figure or 64 KB, whichever is more (else something else moved memory meanwhile). " +
	"The same routes as a Go benchmark: " +
	"`go test -run x -bench Shortlist ./bench/retrieval/`; the router's own benchmark of building the phase-1 " +
	"view alone: `go test -run x -bench Shortlist ./router/`.\n\n"

// Chart draws recall against the tool list's budget, one panel per pool and one line per
// candidate set, with the recall target.
func Chart(r *Results) string {
	colors := map[string]string{KeywordGate: "#d62728", BM25: "#9467bd", BM25Examples: "#2ca02c"}
	c := report.LineChart{
		Title:  "Recall of the phase-1 candidate set against the tool list's budget (log scale)",
		XLabel: "budget (estimated tokens)", YLabel: "recall",
		XTickLabel: func(x float64) string { return fmt.Sprintf("%.0fk", x/1000) },
		YMin:       0, YMax: 1,
		Reference: &report.Reference{Y: targetRecall, Label: fmt.Sprintf("target %.2f", targetRecall)},
	}
	for _, b := range Budgets {
		c.XTicks = append(c.XTicks, float64(b))
	}
	at := map[string]int{}
	for _, rc := range r.Recall {
		i, ok := at[rc.Pool]
		if !ok {
			i = len(c.Panels)
			at[rc.Pool] = i
			c.Panels = append(c.Panels, report.LinePanel{Title: fmt.Sprintf("%s (%d tools)", rc.Pool, rc.Tools)})
		}
		s := report.Series{Name: rc.Set, Color: colors[rc.Set]}
		for _, a := range rc.AtBudget {
			s.Points = append(s.Points, report.Point{X: float64(a.Budget), Y: a.Recall})
		}
		c.Panels[i].Series = append(c.Panels[i].Series, s)
	}
	return c.SVG()
}

// IntentsIntro says how the obvious intents are measured.
const IntentsIntro = "Everyday requests for the built-in servers (calculator, clock) and the npm reference servers " +
	"(everything, filesystem, memory), each with the one tool that answers it (`bench/data/obvious_intents.json`), " +
	"ranked by `router.Search` with the sidecar's defaults (a 3,584-token tool list) among those servers and real BFCL " +
	"tools: BFCL's distinct functions (`bench/data/bfcl`) less those that do the same job as an intent's tool, drawn " +
	"in a fixed shuffle, on servers of 20, and repeated on renamed servers once all are drawn, as the pools above are. The " +
	"built-in servers run as the sidecar runs them, with the examples they ship (`inventory/builtin/examples.go`); " +
	"the reference servers' tools are those the pinned npm packages list (`bench/data/reference_tools.json`, checked " +
	"against the running servers by `TestReferenceRecording`), with example queries configured as " +
	"`servers.NAME.examples` would (`bench/data/reference_examples.json`). No example is an intent or a query of any " +
	"benchmark, numbers aside, nor holds a run of four words or more of one (`TestExamplesAreNotBenchmarkQueries`; " +
	"the run fails otherwise). **shown**: the intent's tool is on the shortlist phase 1 would be shown. **pinned**: the " +
	"same with `retrieval.pinned: [\"calculator\", \"clock\"]`, whose tools then take the tokens given of every " +
	"shortlist's budget, whatever the query.\n\n"

func writeIntents(b *strings.Builder, r *Results) {
	b.WriteString("\n### Obvious intents\n\n")
	b.WriteString(IntentsIntro)
	b.WriteString("| BFCL tools | tools | intents | R@1 | R@5 | R@10 | shown | tools shown | pinned built-ins: tools, tokens of budget | shown, pinned | other tools shown, pinned |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, in := range r.Intents {
		fmt.Fprintf(b, "| %d | %d | %d |", in.PoolTools, in.Tools, in.Queries)
		for _, a := range in.AtK {
			fmt.Fprintf(b, " %.3f |", a.Recall)
		}
		fmt.Fprintf(b, " %d of %d | %.1f | %d, %d of %d | %d of %d | %.1f |\n", in.Shown, in.Queries, in.MeanShown,
			in.PinnedTools, in.PinnedTokens, in.Budget, in.ShownPinned, in.Queries, in.MeanOthersShown)
	}
	for _, in := range r.Intents {
		for _, m := range in.Misses {
			fmt.Fprintf(b, "\nBeside %d BFCL tools, %q (%s) ranked %s; the first five: %s.", in.PoolTools, m.Query, m.Tool,
				map[bool]string{true: "below 10th", false: fmt.Sprintf("%dth", m.Rank)}[m.Rank == 0], strings.Join(m.Top, ", "))
		}
	}
	if r.IntentRule != "" {
		var ex []string
		for _, e := range r.IntentExcluded {
			ex = append(ex, fmt.Sprintf("`%s` (%s)", e.Function, e.SameJobAs))
		}
		fmt.Fprintf(b, "\n\nLeft out of the pools: %s Left out: %s.\n", r.IntentRule, strings.Join(ex, ", "))
	}
}

// HeldOutIntro explains the held-out tables.
const HeldOutIntro = "Each pool's queries are split in two parts by a hash of the pool's name and the query's " +
	"normalised text (`retrieval.PartOf`; repeated queries share a part), fixed by the benchmark rather than seeded. " +
	"A ranking rule or weight is chosen on the **tune** parts, or on one source's tune part when it is to be checked " +
	"on the other source, and judged on the **report** parts, which no rule may be chosen on. " +
	"Ranks are the ranker's own order (what `router.Search` returns as `Offer.Ranked`). " +
	"**bm25**: no examples. **bm25+traffic**: the other part's queries learned as examples of their tools first " +
	"(`retrieve.Examples.Learn`, the router's cap per tool), as answered requests become examples in a deployment: " +
	"half of a pool's questions play the traffic, the other half are asked. " +
	"Slices: queries of at most 12 words and longer ones; queries whose letters are all Latin and the others. " +
	"A slice without queries is left out.\n\n"

// writeHeldOut writes the held-out tables.
func writeHeldOut(b *strings.Builder, hs []HeldOut) {
	b.WriteString("\n### Held-out recall: tune and report parts\n\n")
	b.WriteString(HeldOutIntro)
	for _, part := range Parts {
		fmt.Fprintf(b, "**%s parts**\n\n", part)
		kHeader(b, "| pool | candidate set | queries |", "|---|---|---|", "", "")
		for _, h := range hs {
			if h.Part != part {
				continue
			}
			for _, s := range h.Slices {
				if s.Queries == 0 {
					continue
				}
				fmt.Fprintf(b, "| %s | %s | %s, %d |", h.Pool, h.Set, s.Slice, s.Queries)
				for _, a := range s.AtK {
					fmt.Fprintf(b, " %.3f |", a.Recall)
				}
				b.WriteString("\n")
			}
		}
		b.WriteString("\n")
	}
}

// kHeader writes a table's header: the columns before the R@k ones (head, and align, their
// alignment row), a column for each of HeldOutKs, and the columns after them (tail, tailAlign).
func kHeader(b *strings.Builder, head, align, tail, tailAlign string) {
	b.WriteString(head)
	for _, k := range HeldOutKs {
		fmt.Fprintf(b, " R@%d |", k)
	}
	b.WriteString(tail + "\n" + align)
	for range HeldOutKs {
		b.WriteString("---:|")
	}
	b.WriteString(tailAlign + "\n")
}

// writeMatching writes the table of the ways of matching words, one turned off at a time.
func writeMatching(b *strings.Builder, ms []MatchingRecall) {
	b.WriteString("\n### Matching, one way changed at a time\n\n")
	b.WriteString("Recall without examples on each part with the sidecar's default ways of matching a word beyond its stem, " +
		"then one of them changed (`retrieval.match` in the configuration; `retrieve.Matching`), then the rules as they " +
		"were before this table existed (the loose stem on; no bigrams, no related words). A way that does not pay on the " +
		"report parts is off by default: the loose stem of a tool name's words.\n\n")
	kHeader(b, "| pool | part | matching | queries |", "|---|---|---|---:|", "", "")
	for _, m := range ms {
		fmt.Fprintf(b, "| %s | %s | %s | %d |", m.Pool, m.Part, m.Variant, m.Queries)
		for _, a := range m.AtK {
			fmt.Fprintf(b, " %.3f |", a.Recall)
		}
		b.WriteString("\n")
	}
}

// LanguagesIntro explains the tables of questions in other languages.
const LanguagesIntro = "Questions in twelve languages (zh ja ko ru ar hi th es pt fr de vi), each a translation of a query of a pool, " +
	"in two sets: `bench/data/nonenglish_tune.json` (6 per language) translates **tune**-part queries and is what " +
	"`retrieval.search_when_weak`'s rule was chosen on; `bench/data/nonenglish.json` (12 per language) translates " +
	"**report**-part queries and was chosen on by nothing. Both are machine-written by this project, picked by a fixed " +
	"stride, two thirds MetaTool and one third BFCL pool, each labeled with the tool its pool labels the English query " +
	"with. They are ranked and routed with the sidecar's defaults (a 3,584-token tool list) and no examples. " +
	"**R@k**: the tool among the question's k best-ranked. **weak**: its first shortlist is weak (ranked by words, " +
	"fewer than half of the question's words in any tool's text and fewer than a tenth of them English function " +
	"words). **shown**: the tool is on the first shortlist. **reached, must search**: a route (`router.Route` with " +
	"`retrieval.search_when_weak` on, the default) showed the tool on some shortlist, with a model that searches only " +
	"when the format requires it, writing the English query (up to the format's 100 characters) as its search words, " +
	"where a model told to search in the tools' language would write a few words of its own: with the whole " +
	"question's words, this is close to an upper bound, as **English shown** is. **reached, searching**: the same with a model that " +
	"searches whenever it does not see the tool. **English shown**: the English query's own first shortlist shows the " +
	"tool. The model is a stand-in that reads the labels (`retrieval.searcher`): these figures say what the search " +
	"can reach, not what a model would write.\n\n"

// writeLanguages writes the tables of questions in other languages and of the share of English
// queries whose shortlist is weak.
func writeLanguages(b *strings.Builder, ls []LanguageRecall, ws []WeakShare) {
	b.WriteString("\n### Questions in other languages\n\n")
	b.WriteString(LanguagesIntro)
	type sum struct {
		n, weak, shown, must, searching, english int
		at                                       []int
	}
	add := func(t *sum, l LanguageRecall) {
		t.n, t.weak, t.shown, t.must, t.searching, t.english = t.n+l.Questions, t.weak+l.Weak, t.shown+l.Shown,
			t.must+l.WhenWeak, t.searching+l.Searching, t.english+l.English
		for i, a := range l.AtK {
			if len(t.at) <= i {
				t.at = append(t.at, 0)
			}
			t.at[i] += a.Hits
		}
	}
	byPool := map[[2]string]*sum{}
	var order [][2]string
	byLang := map[string]*sum{}
	for _, l := range ls {
		k := [2]string{l.Part, l.Pool}
		if byPool[k] == nil {
			byPool[k] = &sum{}
			order = append(order, k)
		}
		add(byPool[k], l)
		if l.Part == PartReport {
			if byLang[l.Lang] == nil {
				byLang[l.Lang] = &sum{}
			}
			add(byLang[l.Lang], l)
		}
	}
	slices.SortStableFunc(order, func(a, b [2]string) int { return slices.Index(Parts, a[0]) - slices.Index(Parts, b[0]) })
	frac := func(n, of int) string { return fmt.Sprintf("%.2f (%d)", float64(n)/float64(max(of, 1)), n) }
	kHeader(b, "| part | pool | questions |", "|---|---|---:|",
		" weak | shown | reached, must search | reached, searching | English shown |", "---:|---:|---:|---:|---:|")
	for _, k := range order {
		t := byPool[k]
		fmt.Fprintf(b, "| %s | %s | %d |", k[0], k[1], t.n)
		for _, h := range t.at {
			fmt.Fprintf(b, " %.2f |", float64(h)/float64(max(t.n, 1)))
		}
		fmt.Fprintf(b, " %s | %s | %s | %s | %s |\n", frac(t.weak, t.n), frac(t.shown, t.n), frac(t.must, t.n), frac(t.searching, t.n), frac(t.english, t.n))
	}
	if len(byLang) > 0 {
		b.WriteString("\nThe report set by language, both pools:\n\n")
		b.WriteString("| language | questions | weak | shown | reached, must search | reached, searching | English shown |\n|---|---:|---:|---:|---:|---:|---:|\n")
		for _, lang := range NonEnglishLangs {
			if t := byLang[lang]; t != nil {
				fmt.Fprintf(b, "| %s | %d | %d | %d | %d | %d | %d |\n", lang, t.n, t.weak, t.shown, t.must, t.searching, t.english)
			}
		}
	}
	if len(ws) > 0 {
		b.WriteString("\nEnglish queries whose first shortlist is weak: with `retrieval.search_when_weak` phase 1 must search " +
			"before it may answer \"no tool\", one more phase-1 call when it would have answered so. Among MetaTool's " +
			"awareness queries labeled as needing no tool (split in parts by `retrieval.PartOf(\"awareness\", …)`) that call " +
			"is spent for nothing.\n\n| set | part | queries | weak |\n|---|---|---:|---:|\n")
		for _, w := range ws {
			set := w.Set
			if set == NoToolSet {
				set = w.Pool + ", " + NoToolSet
			}
			fmt.Fprintf(b, "| %s | %s | %d | %s |\n", set, w.Part, w.Queries, fmt.Sprintf("%.3f (%d)", float64(w.Weak)/float64(max(w.Queries, 1)), w.Weak))
		}
	}
}
