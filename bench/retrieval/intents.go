package retrieval

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"

	"toolrouter/access"
	"toolrouter/config"
	"toolrouter/inventory"
	"toolrouter/retrieve"
	"toolrouter/router"
)

// toolsPerServer is how many pool tools share a made-up server, as in retrievetest.Pool.
const toolsPerServer = 20

// IntentSet is the obvious-intents set (bench/data/obvious_intents.json): everyday queries for
// the built-in servers and the npm reference servers, each with the one tool that answers it, and
// the BFCL functions left out of the pools beside them because they do the same job as one of
// those tools.
type IntentSet struct {
	// Rule says which pool tools are left out; Exclude lists them.
	Rule    string     `json:"rule"`
	Exclude []Excluded `json:"exclude"`
	Intents []Intent   `json:"intents"`
}

// Excluded is a BFCL function left out of the intents' pools, and the tool whose job it does.
type Excluded struct {
	Function  string `json:"function"`
	SameJobAs string `json:"same_job_as"`
}

// Intent is one everyday query and the qualified name of the tool that answers it.
type Intent struct {
	Query string `json:"query"`
	Tool  string `json:"tool"`
}

// LoadIntents reads an intents file.
func LoadIntents(path string) (*IntentSet, error) {
	var set IntentSet
	if err := readJSON(path, &set); err != nil {
		return nil, err
	}
	if len(set.Intents) == 0 {
		return nil, fmt.Errorf("%s: no intents", path)
	}
	return &set, nil
}

// Reference is the npm MCP reference servers' tools as recorded (bench/data/reference_tools.json)
// from the packages examples/npm pins, so that the benchmark serves them without Node.js.
type Reference struct {
	Packages map[string]string `json:"packages"`
	Servers  []Server          `json:"servers"`
}

// LoadReference reads a recording of the reference servers.
func LoadReference(path string) (*Reference, error) {
	var ref Reference
	if err := readJSON(path, &ref); err != nil {
		return nil, err
	}
	if len(ref.Servers) == 0 {
		return nil, fmt.Errorf("%s: no servers", path)
	}
	return &ref, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", filepath.Base(path), err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("reading %s: %w", filepath.Base(path), err)
	}
	return nil
}

// Record lists the tools of running reference servers (their purposes as
// examples/reference-servers.json gives them), as Reference records them.
func Record(snap *inventory.Snapshot, packages map[string]string) *Reference {
	ref := &Reference{Packages: packages}
	for _, s := range snap.Servers {
		rs := Server{Name: s.Name, Purpose: s.Purpose}
		for _, t := range s.Tools {
			rs.Tools = append(rs.Tools, Tool{Name: t.Name, Title: t.Title, Description: t.Description, Schema: t.InputSchema})
		}
		ref.Servers = append(ref.Servers, rs)
	}
	return ref
}

// IntentPool returns the pool the intents are ranked in: the built-in servers (served as the
// sidecar serves them, with their examples), the reference servers, and n BFCL functions
// (bfclDir's distinct functions less set.Exclude, by name) drawn as Real.Scale draws tools: a
// fixed shuffle repeated on renamed servers of 20. It fails when an excluded function is not
// among them, so that the exclusion list cannot go stale.
func IntentPool(set *IntentSet, ref *Reference, bfclDir string, n int) (*Pool, error) {
	fns, err := bfclFunctions(bfclDir)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, e := range set.Exclude {
		out[e.Function] = true
	}
	kept := fns[:0:0]
	found := map[string]bool{}
	for _, f := range fns {
		if out[f.original] {
			found[f.original] = true
			continue
		}
		kept = append(kept, f)
	}
	maps.DeleteFunc(out, func(name string, _ bool) bool { return found[name] })
	if len(out) > 0 {
		return nil, fmt.Errorf("excluded functions not in the BFCL data: %v", slices.Sorted(maps.Keys(out)))
	}
	p := &Pool{Name: fmt.Sprintf("%d BFCL tools", n)}
	for _, name := range []string{"calculator", "clock"} {
		p.Servers = append(p.Servers, Server{Name: name, Purpose: config.Default().Servers[name].Purpose, Builtin: true})
	}
	p.Servers = append(p.Servers, ref.Servers...)
	perm := rand.New(rand.NewPCG(1, 2)).Perm(len(kept))
	at := map[string]int{}
	var fns2 [][]function
	for i := range n {
		name := fmt.Sprintf("bfcl%02d", (i%len(kept))/toolsPerServer)
		if rep := i / len(kept); rep > 0 {
			name = fmt.Sprintf("%s-%d", name, rep)
		}
		j, ok := at[name]
		if !ok {
			j = len(fns2)
			at[name] = j
			fns2 = append(fns2, nil)
		}
		fns2[j] = append(fns2[j], kept[perm[i%len(kept)]])
	}
	names := make([]string, len(fns2))
	for name, j := range at {
		names[j] = name
	}
	for j, fs := range fns2 {
		s := Server{Name: names[j], Purpose: bfclPurpose}
		for k, nm := range mcpNames(fs) {
			s.Tools = append(s.Tools, Tool{Name: nm, Description: fs[k].description, Schema: fs[k].schema})
		}
		p.Servers = append(p.Servers, s)
	}
	for _, in := range set.Intents {
		p.Queries = append(p.Queries, Query{Text: in.Query, Gold: in.Tool})
	}
	return p, nil
}

// IntentRecall is the obvious intents ranked among the built-in servers, the reference servers
// and PoolTools BFCL tools, through router.Search with the sidecar's default budget.
type IntentRecall struct {
	PoolTools int   `json:"pool_tools"`
	Tools     int   `json:"tools"`
	Queries   int   `json:"queries"`
	AtK       []AtK `json:"at_k"`
	// Shown counts the intents whose tool the default shortlist shows; MeanShown is the mean
	// number of tools it shows, Budget its budget in tokens.
	Shown     int     `json:"shown"`
	MeanShown float64 `json:"mean_shown"`
	Budget    int     `json:"budget_tokens"`
	// With the built-in servers pinned (retrieval.pinned: calculator, clock): the tokens they
	// take of the budget on every shortlist, the intents whose tool is shown, and the mean number
	// of other tools shown beside them.
	PinnedTools     int     `json:"pinned_tools"`
	PinnedTokens    int     `json:"pinned_tokens"`
	ShownPinned     int     `json:"shown_pinned"`
	MeanOthersShown float64 `json:"mean_others_shown_pinned"`
	// Misses are the intents whose tool is not among the 5 best-ranked.
	Misses []IntentMiss `json:"misses,omitempty"`
}

// IntentMiss is an intent whose tool ranked below 5th (Rank 0: not among the first 10).
type IntentMiss struct {
	Query string   `json:"query"`
	Tool  string   `json:"tool"`
	Rank  int      `json:"rank"`
	Top   []string `json:"top"`
}

// IntentKs are the ranks the intents are scored at; the target is every intent within the
// second.
var IntentKs = []int{1, 5, 10}

// MeasureIntents serves the intents' pool of n BFCL tools, ranks every intent through a router
// with the sidecar's defaults (the reference servers' tools with their configured examples,
// refExamples) and through one with the built-in servers pinned, and scores them.
func MeasureIntents(ctx context.Context, set *IntentSet, ref *Reference, refExamples map[string][]string, bfclDir string, n int, log *slog.Logger) (*IntentRecall, error) {
	p, err := IntentPool(set, ref, bfclDir, n)
	if err != nil {
		return nil, err
	}
	inv, err := Serve(ctx, p, log)
	if err != nil {
		return nil, err
	}
	defer inv.Close()
	ex, err := retrieve.OpenExamples("", 0)
	if err != nil {
		return nil, err
	}
	ex.SetConfigured(refExamples)
	ranker := newCatalog(ex, log)
	plain := router.New(noChat{}, inv, inv, router.Settings{Model: "bench", Ranker: ranker}, log)
	pinned := router.New(noChat{}, inv, inv, router.Settings{Model: "bench", Ranker: ranker, Pinned: []string{"calculator", "clock"}}, log)
	cost := pinned.Pinned()
	res := &IntentRecall{PoolTools: n, Tools: len(inv.Snapshot().Available()), Queries: len(p.Queries),
		PinnedTools: len(cost.Tools), PinnedTokens: cost.Tokens}
	hits := make([]int, len(IntentKs))
	shownSum, shownPinnedSum := 0, 0
	for _, q := range p.Queries {
		offer, err := plain.Search(ctx, q.Text, access.Identity{}, slices.Max(IntentKs))
		if err != nil {
			return nil, fmt.Errorf("ranking %q: %w", q.Text, err)
		}
		rank := slices.IndexFunc(offer.Ranked, func(t router.ShortlistTool) bool { return t.Name == q.Gold }) + 1
		for i, k := range IntentKs {
			if rank > 0 && rank <= k {
				hits[i]++
			}
		}
		if rank == 0 || rank > 5 {
			m := IntentMiss{Query: q.Text, Tool: q.Gold, Rank: rank}
			for _, t := range offer.Ranked[:min(5, len(offer.Ranked))] {
				m.Top = append(m.Top, t.Name)
			}
			res.Misses = append(res.Misses, m)
		}
		n, shown, budget := shortlisted(offer, q.Gold, res.Tools)
		res.Budget = budget
		shownSum += n
		if shown {
			res.Shown++
		}
		offer, err = pinned.Search(ctx, q.Text, access.Identity{}, 1)
		if err != nil {
			return nil, fmt.Errorf("ranking %q: %w", q.Text, err)
		}
		n, shown, _ = shortlisted(offer, q.Gold, res.Tools)
		if offer.Shortlist != nil {
			for _, t := range offer.Shortlist.Tools {
				if t.Pinned {
					n--
				}
			}
		}
		shownPinnedSum += n
		if shown {
			res.ShownPinned++
		}
	}
	for i, k := range IntentKs {
		res.AtK = append(res.AtK, AtK{K: k, Hits: hits[i], Recall: float64(hits[i]) / float64(max(res.Queries, 1))})
	}
	res.MeanShown = float64(shownSum) / float64(max(res.Queries, 1))
	res.MeanOthersShown = float64(shownPinnedSum) / float64(max(res.Queries, 1))
	if got := len(inv.Snapshot().Available()); got != res.Tools {
		return nil, fmt.Errorf("%s: %d tools available at the end, %d at the start: a server went down while ranking", p.Name, got, res.Tools)
	}
	return res, nil
}

// shortlisted is what an offer shows phase 1: how many tools, whether gold is among them, and
// the budget (0 when the whole inventory, of tools tools, is shown).
func shortlisted(o *router.Offer, gold string, tools int) (n int, shown bool, budget int) {
	if o.Whole {
		return tools, true, 0
	}
	sl := o.Shortlist
	return len(sl.Tools), slices.ContainsFunc(sl.Tools, func(t router.ShortlistTool) bool { return t.Name == gold }), sl.Budget
}
