package retrieval

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/ollama/ollama/api"
	"golang.org/x/sync/errgroup"

	"toolrouter/access"
	"toolrouter/bench/baseline"
	"toolrouter/inventory"
	"toolrouter/retrieve"
	"toolrouter/router"
)

// Candidate sets: what phase 1 would be offered for a query.
const (
	// KeywordGate is the council's keyword gate (bench/baseline): every tool, by shared words,
	// when the query holds one of its indicators; nothing otherwise.
	KeywordGate = "keyword gate"
	// BM25 is the router's shortlist ranked by the BM25F index of retrieve, without examples.
	BM25 = "bm25"
	// BM25Examples is the same with examples learned from the other folds' queries.
	BM25Examples = "bm25+examples"
)

// Sets lists the candidate sets in report order.
var Sets = []string{KeywordGate, BM25, BM25Examples}

// Budgets are the phase-1 tool-list budgets recall is measured at, in the router's estimated
// tokens; Ks the ranks.
var (
	Budgets = []int{1000, 2000, 4000}
	Ks      = []int{1, 5, 10, 20}
)

// Folds is the number of folds examples are cross-fitted over.
const Folds = 5

// Recall is one candidate set's recall on one pool: how often the gold tool is among the first k
// ranked, and among the tools phase 1 would be shown under each budget.
type Recall struct {
	Pool    string `json:"pool"`
	Set     string `json:"candidate_set"`
	Tools   int    `json:"tools"`
	Queries int    `json:"queries"`
	// Passed counts the queries the keyword gate passed on (the others get no tool at all).
	Passed   *int        `json:"passed,omitempty"`
	AtK      []AtK       `json:"at_k"`
	AtBudget []AtBudget  `json:"at_budget"`
	Examples *ExampleSet `json:"examples,omitempty"`
}

// AtK is recall among the k best-ranked tools.
type AtK struct {
	K      int     `json:"k"`
	Hits   int     `json:"hits"`
	Recall float64 `json:"recall"`
}

// AtBudget is recall among the tools a phase-1 prompt with this budget shows, as router.Search
// reports them (Offer.Shortlist, or the whole inventory when it fits).
type AtBudget struct {
	Budget int     `json:"budget_tokens"`
	Hits   int     `json:"hits"`
	Recall float64 `json:"recall"`
	// MeanShown is the mean number of tools shown; MaxUsed the most budget tokens a shortlist
	// used, and OverBudget how many shortlists used more than the budget (the router shows the
	// best tool even when it alone is over).
	MeanShown  float64 `json:"mean_shown"`
	MaxUsed    int     `json:"max_used_tokens"`
	OverBudget int     `json:"over_budget"`
	// Whole counts queries for which the whole inventory fit the budget.
	Whole int `json:"whole_inventory"`
}

// ExampleSet says how the examples were drawn.
type ExampleSet struct {
	Folds   int `json:"folds"`
	PerTool int `json:"per_tool_cap"`
	// MeanPerTool is the mean number of examples a tool had, over tools and folds.
	MeanPerTool float64 `json:"mean_per_tool"`
	// Learned counts Learn calls that added an example, over the folds.
	Learned int `json:"learned"`
}

// RecallOptions configure MeasureRecall.
type RecallOptions struct {
	Seed uint64
	// PerTool caps the examples kept per tool (the router's retrieval.examples_per_tool).
	PerTool int
	// Workers is how many queries are ranked at once (0: GOMAXPROCS).
	Workers int
	Log     *slog.Logger
}

// MeasureRecall ranks every query of p against the whole of inv (p served) for one candidate set,
// through router.Search at each budget. With BM25Examples each query falls in one of Folds folds
// by a seeded hash of its normalised text (so repeated queries share a fold) and is ranked with
// examples learned, through retrieve.Examples, from the other folds' queries only.
func MeasureRecall(ctx context.Context, inv *inventory.Manager, p *Pool, set string, o RecallOptions) (*Recall, error) {
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	res := &Recall{Pool: p.Name, Set: set, Tools: p.Tools(), Queries: len(p.Queries)}
	out := make([]queryResult, len(p.Queries))
	switch set {
	case KeywordGate:
		if err := rankAll(ctx, inv, p, all(len(p.Queries)), &gateRanker{}, baseline.Gate, out, o); err != nil {
			return nil, err
		}
	case BM25:
		if err := rankAll(ctx, inv, p, all(len(p.Queries)), newCatalog(nil, o.Log), nil, out, o); err != nil {
			return nil, err
		}
	case BM25Examples:
		res.Examples = &ExampleSet{Folds: Folds, PerTool: o.PerTool}
		folds := make([][]int, Folds)
		for i, q := range p.Queries {
			f := foldOf(o.Seed, q.Text)
			folds[f] = append(folds[f], i)
		}
		perTool := 0.0
		for f := range Folds {
			ex, learned, err := learnExamples(p, folds, f, o)
			if err != nil {
				return nil, err
			}
			res.Examples.Learned += learned
			for _, s := range p.Servers {
				for _, t := range s.Tools {
					perTool += float64(len(ex.For(inventory.Qualify(s.Name, t.Name))))
				}
			}
			if err := rankAll(ctx, inv, p, folds[f], newCatalog(ex, o.Log), nil, out, o); err != nil {
				return nil, err
			}
		}
		res.Examples.MeanPerTool = perTool / float64(Folds*p.Tools())
	default:
		return nil, fmt.Errorf("unknown candidate set %q", set)
	}
	res.tally(out)
	if set == KeywordGate {
		n := 0
		for _, r := range out {
			if r.passed {
				n++
			}
		}
		res.Passed = &n
	}
	return res, nil
}

// queryResult is what one query got: the rank of its gold tool (0: not among the first
// slices.Max(Ks)) and, per budget, whether the tool was shown, how many were and the tokens used.
type queryResult struct {
	rank   int
	passed bool
	shown  []bool
	count  []int
	used   []int
	whole  []bool
	budget []int
}

func (r *Recall) tally(out []queryResult) {
	n := float64(max(len(out), 1))
	for _, k := range Ks {
		a := AtK{K: k}
		for _, q := range out {
			if q.rank > 0 && q.rank <= k {
				a.Hits++
			}
		}
		a.Recall = float64(a.Hits) / n
		r.AtK = append(r.AtK, a)
	}
	for i, b := range Budgets {
		a := AtBudget{Budget: b}
		shown := 0
		for _, q := range out {
			if q.shown[i] {
				a.Hits++
			}
			shown += q.count[i]
			a.MaxUsed = max(a.MaxUsed, q.used[i])
			if q.used[i] > q.budget[i] {
				a.OverBudget++
			}
			if q.whole[i] {
				a.Whole++
			}
		}
		a.Recall = float64(a.Hits) / n
		a.MeanShown = float64(shown) / n
		r.AtBudget = append(r.AtBudget, a)
	}
}

// rankAll ranks the queries idx of p with ranker, one router per budget, and fills out[i] for
// each. passes, when set, is whether the candidate set passes the query on at all (the keyword
// gate); a query it does not pass on is shown nothing even when the whole inventory would fit.
func rankAll(ctx context.Context, inv *inventory.Manager, p *Pool, idx []int, ranker router.Ranker, passes func(string) bool, out []queryResult, o RecallOptions) error {
	routers := make([]*router.Router, len(Budgets))
	for i, b := range Budgets {
		routers[i] = router.New(noChat{}, inv, inv, router.Settings{Model: "bench", PromptBudget: b, Ranker: ranker}, o.Log)
	}
	maxK := slices.Max(Ks)
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Workers)
	// One failing query fails the run: a figure over fewer queries than the pool has would mislead.
	for _, i := range idx {
		q := p.Queries[i]
		g.Go(func() error {
			r := queryResult{passed: passes == nil || passes(q.Text)}
			for bi, rt := range routers {
				offer, err := rt.Search(ctx, q.Text, access.Identity{}, maxK)
				if err != nil {
					return fmt.Errorf("ranking %q: %w", q.Text, err)
				}
				if bi == 0 {
					r.rank = slices.IndexFunc(offer.Ranked, func(t router.ShortlistTool) bool { return t.Name == q.Gold }) + 1
				}
				var shown bool
				var count, used, budget int
				if offer.Whole {
					shown, count, budget = r.passed, p.Tools(), Budgets[bi]
					if !r.passed {
						count = 0
					}
				} else {
					sl := offer.Shortlist
					shown = slices.ContainsFunc(sl.Tools, func(t router.ShortlistTool) bool { return t.Name == q.Gold })
					count, used, budget = len(sl.Tools), sl.Used, sl.Budget
					if sl.Budget != Budgets[bi] {
						return fmt.Errorf("shortlist budget %d, want %d", sl.Budget, Budgets[bi])
					}
				}
				r.shown = append(r.shown, shown)
				r.count = append(r.count, count)
				r.used = append(r.used, used)
				r.budget = append(r.budget, budget)
				r.whole = append(r.whole, offer.Whole)
			}
			out[i] = r
			return nil
		})
	}
	return g.Wait()
}

// newCatalog is the production ranker (see wire.go): a BM25F retriever without dense retrieval,
// kept in step with the inventory and ex (nil: no examples) by a retrieve.Catalog.
func newCatalog(ex *retrieve.Examples, log *slog.Logger) *retrieve.Catalog {
	return newCatalogWith(retrieve.Matching{}, ex, log)
}

// newCatalogWith is newCatalog with an index that matches words as m says.
func newCatalogWith(m retrieve.Matching, ex *retrieve.Examples, log *slog.Logger) *retrieve.Catalog {
	ret, _ := retrieve.NewRetriever(retrieve.NewIndexWith(m), nil, retrieve.DenseOptions{}) // no embedder: cannot fail
	return retrieve.NewCatalog(ret, ex, log)
}

// learnExamples returns the examples fold f is ranked with: every query of the other folds
// learned, in a seeded random order, as an example of its gold tool by retrieve.Examples (which
// keeps the last o.PerTool per tool), and how many were added. It fails if any of fold f's
// queries is among them.
func learnExamples(p *Pool, folds [][]int, f int, o RecallOptions) (*retrieve.Examples, int, error) {
	ex, err := retrieve.OpenExamples("", o.PerTool)
	if err != nil {
		return nil, 0, err
	}
	var train []int
	for g, idx := range folds {
		if g != f {
			train = append(train, idx...)
		}
	}
	slices.Sort(train)
	rand.New(rand.NewPCG(o.Seed, uint64(f))).Shuffle(len(train), func(i, j int) { train[i], train[j] = train[j], train[i] })
	learned := 0
	for _, i := range train {
		q := p.Queries[i]
		ok, err := ex.Learn(q.Gold, q.Text)
		if err != nil {
			return nil, 0, err
		}
		if ok {
			learned++
		}
	}
	seen := map[string]bool{}
	for _, qs := range ex.All() {
		for _, q := range qs {
			seen[normalise(q)] = true
		}
	}
	for _, i := range folds[f] {
		if seen[normalise(p.Queries[i].Text)] {
			return nil, 0, fmt.Errorf("fold %d: test query %q is an example", f, p.Queries[i].Text)
		}
	}
	return ex, learned, nil
}

// foldOf is a query's fold: a seeded hash of its normalised text.
func foldOf(seed uint64, text string) int {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	h.Write([]byte(normalise(text)))
	return int(h.Sum64() % Folds)
}

// normalise is how retrieve.Examples tells two examples apart: lower case, spacing collapsed.
func normalise(q string) string { return strings.Join(strings.Fields(strings.ToLower(q)), " ") }

func all(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// noChat is the model of routers that only search: router.Search never calls it.
type noChat struct{}

func (noChat) Chat(context.Context, *api.ChatRequest, api.ChatResponseFunc) error {
	return fmt.Errorf("no model: this router only searches")
}

// gateRanker ranks as the keyword gate passes tools on: nothing when the gate does not pass,
// else every permitted tool by words shared with the query (baseline.Council.Ranked).
type gateRanker struct {
	mu      sync.Mutex // guards version and council
	version uint64
	council *baseline.Council
}

// Rank implements router.Ranker.
func (g *gateRanker) Rank(_ context.Context, snap *inventory.Snapshot, query string, k int, permit func(string) bool) retrieve.Result {
	ranked, ok := g.of(snap).Ranked(query)
	if !ok {
		return retrieve.Result{}
	}
	var hits []retrieve.Hit
	for _, m := range ranked {
		if k > 0 && len(hits) == k {
			break
		}
		if permit == nil || permit(m.Tool) {
			hits = append(hits, retrieve.Hit{Qualified: m.Tool, Score: m.Score})
		}
	}
	return retrieve.Result{Hits: hits}
}

// of returns the council over snap's available tools, as the accuracy harness builds it.
func (g *gateRanker) of(snap *inventory.Snapshot) *baseline.Council {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.council == nil || g.version != snap.Version {
		var tools []baseline.Tool
		for _, t := range snap.Available() {
			tools = append(tools, baseline.Tool{Name: t.Qualified, Description: t.Description})
		}
		g.council, g.version = baseline.NewCouncil(tools), snap.Version
	}
	return g.council
}
