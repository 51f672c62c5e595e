package retrieval

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/ollama/ollama/api"
	"golang.org/x/sync/errgroup"

	"toolrouter/access"
	"toolrouter/inventory"
	"toolrouter/router"
)

// LanguageRecall is how the questions of the non-English set (NonEnglish) of one pool and
// language reach their tool, ranked by the sidecar's defaults without examples. Each count is of
// questions.
type LanguageRecall struct {
	Pool string `json:"pool"`
	// Part is the part of the pool the questions' English queries are in.
	Part      string `json:"part"`
	Lang      string `json:"lang"`
	Questions int    `json:"questions"`
	// AtK is the question's own ranking: the gold tool among its k best-ranked.
	AtK []AtK `json:"at_k"`
	// Weak: the question's first shortlist is weak (router.Shortlist.Weak).
	Weak int `json:"weak"`
	// Shown: the gold tool is on the question's first shortlist.
	Shown int `json:"shown"`
	// WhenWeak: a route reached the gold tool (on a shortlist phase 1 was shown) with a model that
	// searches, in the English words of the question, only when it must: with
	// retrieval.search_when_weak, after a weak first shortlist.
	WhenWeak int `json:"reached_when_weak"`
	// Searching: the same with a model that searches whenever the gold tool is not shown.
	Searching int `json:"reached_searching"`
	// English: the English question's own first shortlist shows the gold tool.
	English int `json:"english_shown"`
}

// WeakShare is how many of a part of a set of English queries get a weak first shortlist: the
// searches retrieval.search_when_weak may add for questions in the tools' own language. Set is the
// pool's name (its own queries) or NoToolSet.
type WeakShare struct {
	Pool    string `json:"pool"`
	Set     string `json:"set"`
	Part    string `json:"part"`
	Queries int    `json:"queries"`
	Weak    int    `json:"weak"`
}

// NoToolSet names the WeakShares of queries that need no tool; AwarenessPool is the pool name
// their parts are split by (PartOf).
const (
	NoToolSet     = "needs no tool"
	AwarenessPool = "awareness"
)

// MeasureLanguages routes each question of qs that belongs to p (served by inv) with the sidecar's
// defaults and a model that writes the question's English text as its search words (searcher),
// once searching only when it must and once whenever its tool is not shown, and returns one
// LanguageRecall per part (Parts order) and language (NonEnglishLangs order). Nothing is learned:
// the ranking has no examples.
func MeasureLanguages(ctx context.Context, inv *inventory.Manager, p *Pool, qs []Translated, o RecallOptions) ([]LanguageRecall, error) {
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	var mine []Translated
	for _, q := range qs {
		if q.Pool == p.Name {
			mine = append(mine, q)
		}
	}
	ranker := newCatalog(nil, o.Log)
	plain := router.New(noChat{}, inv, inv, router.Settings{Model: "bench", Ranker: ranker}, o.Log)
	chat := &searcher{english: map[string]Translated{}}
	for _, q := range mine {
		chat.english[q.Question] = q
	}
	whenWeak := router.New(chat, inv, inv, router.Settings{Model: "bench", Ranker: ranker, MaxSearches: 1, SearchWhenWeak: true}, o.Log)
	searching := router.New(chat.always(), inv, inv, router.Settings{Model: "bench", Ranker: ranker, MaxSearches: 1}, o.Log)

	type result struct {
		rank                               int
		weak, shown, reached, reached2, en bool
	}
	out := make([]result, len(mine))
	k := HeldOutKs[len(HeldOutKs)-1]
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Workers)
	for i, q := range mine {
		g.Go(func() error {
			offer, err := plain.Search(gctx, q.Question, access.Identity{}, k)
			if err != nil {
				return fmt.Errorf("ranking %q: %w", q.Question, err)
			}
			en, err := plain.Search(gctx, q.English, access.Identity{}, k)
			if err != nil {
				return fmt.Errorf("ranking %q: %w", q.English, err)
			}
			if offer.Shortlist == nil || en.Shortlist == nil {
				return fmt.Errorf("%s: the whole inventory fits phase 1: there is no shortlist to measure", p.Name)
			}
			r := result{rank: slices.IndexFunc(offer.Ranked, func(t router.ShortlistTool) bool { return t.Name == q.Gold }) + 1,
				weak: offer.Shortlist.Weak, shown: shows(offer.Shortlist, q.Gold), en: shows(en.Shortlist, q.Gold)}
			if r.reached, err = reaches(gctx, whenWeak, q); err != nil {
				return err
			}
			if r.reached2, err = reaches(gctx, searching, q); err != nil {
				return err
			}
			out[i] = r
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var res []LanguageRecall
	for _, part := range Parts {
		for _, lang := range NonEnglishLangs {
			lr := LanguageRecall{Pool: p.Name, Part: part, Lang: lang}
			var ranks []int
			for i, q := range mine {
				if q.Lang != lang || q.Part != part {
					continue
				}
				r := out[i]
				ranks = append(ranks, r.rank)
				lr.Weak += btoi(r.weak)
				lr.Shown += btoi(r.shown)
				lr.WhenWeak += btoi(r.reached)
				lr.Searching += btoi(r.reached2)
				lr.English += btoi(r.en)
			}
			if len(ranks) == 0 {
				continue
			}
			lr.Questions, lr.AtK = len(ranks), recallAt(ranks)
			res = append(res, lr)
		}
	}
	return res, nil
}

// MeasureWeak counts, for each part of p's queries (p served by inv) and of noTool (queries that
// need no tool, split by PartOf(AwarenessPool, …); left out when empty), the queries whose first
// shortlist is weak, ranked with the sidecar's defaults and no examples.
func MeasureWeak(ctx context.Context, inv *inventory.Manager, p *Pool, noTool []string, o RecallOptions) ([]WeakShare, error) {
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	rt := router.New(noChat{}, inv, inv, router.Settings{Model: "bench", Ranker: newCatalog(nil, o.Log)}, o.Log)
	sets := map[[2]string][]string{}
	for part, idx := range p.parts() {
		for _, i := range idx {
			sets[[2]string{p.Name, part}] = append(sets[[2]string{p.Name, part}], p.Queries[i].Text)
		}
	}
	for _, q := range noTool {
		k := [2]string{NoToolSet, PartOf(AwarenessPool, q)}
		sets[k] = append(sets[k], q)
	}
	var res []WeakShare
	for _, key := range [][2]string{{p.Name, PartTune}, {p.Name, PartReport}, {NoToolSet, PartTune}, {NoToolSet, PartReport}} {
		qs := sets[key]
		if len(qs) == 0 {
			continue
		}
		weak := make([]bool, len(qs))
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(o.Workers)
		for j, q := range qs {
			g.Go(func() error {
				offer, err := rt.Search(gctx, q, access.Identity{}, 1)
				if err != nil {
					return fmt.Errorf("ranking %q: %w", q, err)
				}
				if offer.Shortlist == nil {
					return fmt.Errorf("%s: the whole inventory fits phase 1: there is no shortlist to measure", p.Name)
				}
				weak[j] = offer.Shortlist.Weak
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return nil, err
		}
		n := 0
		for _, w := range weak {
			n += btoi(w)
		}
		res = append(res, WeakShare{Pool: p.Name, Set: key[0], Part: key[1], Queries: len(qs), Weak: n})
	}
	return res, nil
}

// AwarenessNegatives are the queries of MetaTool's awareness set (awareness.json) labeled as
// needing no tool.
func AwarenessNegatives(path string) ([]string, error) {
	var items []struct {
		Query string `json:"query"`
		Label string `json:"label"`
	}
	if err := readJSON(path, &items); err != nil {
		return nil, err
	}
	var out []string
	for _, it := range items {
		if it.Label == "negative" {
			out = append(out, it.Query)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no query labeled negative", path)
	}
	return out, nil
}

// reaches routes q's question and reports whether a shortlist phase 1 was shown held q's tool.
func reaches(ctx context.Context, rt *router.Router, q Translated) (bool, error) {
	out, err := rt.Route(ctx, router.Request{Query: q.Question})
	if err != nil {
		return false, fmt.Errorf("routing %q: %w", q.Question, err)
	}
	if out.Degraded != "" {
		return false, fmt.Errorf("routing %q: degraded: %s", q.Question, out.Degraded)
	}
	return slices.ContainsFunc(out.Shortlists, func(s router.Shortlist) bool { return shows(&s, q.Gold) }), nil
}

func shows(sl *router.Shortlist, gold string) bool {
	return slices.ContainsFunc(sl.Tools, func(t router.ShortlistTool) bool { return t.Name == gold })
}

// searchWords is text cut to at most n characters (n ≤ 0: no bound) at a space, as the format's
// maxLength bounds what a model may write.
func searchWords(text string, n int) string {
	r := []rune(strings.TrimSpace(text))
	if n <= 0 || len(r) <= n {
		return string(r)
	}
	cut := string(r[:n])
	if i := strings.LastIndexByte(cut, ' '); i > 0 {
		cut = cut[:i]
	}
	return cut
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// searcher is the model of MeasureLanguages' routes, in process: it reads the labels, as a model
// that knows the right tool when it sees it would. It never calls a tool: on a shortlist that
// shows the question's tool, or when it may not search, it answers "no tool" (the route ends; what
// was shown is what is measured). Otherwise it searches, with the question's English text as its
// words, when the format requires it (retrieval.search_when_weak), or, with always, whenever the
// format allows it.
type searcher struct {
	english map[string]Translated // by the question
	all     bool
}

// always is the searcher that searches whenever it may and does not see the tool.
func (s *searcher) always() *searcher { return &searcher{english: s.english, all: true} }

func (s *searcher) Chat(_ context.Context, req *api.ChatRequest, fn api.ChatResponseFunc) error {
	var query string
	for _, m := range req.Messages {
		if m.Role == "user" {
			query = m.Content
		}
	}
	q, ok := s.english[query]
	if !ok {
		return fmt.Errorf("searcher: no question %q", query)
	}
	var f struct {
		Required   []string `json:"required"`
		Properties struct {
			UseTool json.RawMessage `json:"use_tool"`
			Search  *struct {
				MaxLength int `json:"maxLength"`
			} `json:"search"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(req.Format, &f); err != nil || f.Properties.UseTool == nil {
		return fmt.Errorf("searcher: not a phase-1 format: %s", req.Format)
	}
	sel := map[string]any{"use_tool": false, "calls": []string{}, "needs_more": false, "direct": false}
	must := slices.Contains(f.Required, "search")
	seen := strings.Contains(req.Messages[0].Content, "- "+q.Gold+":")
	if sf := f.Properties.Search; sf != nil && !seen && (must || s.all) {
		sel["search"] = searchWords(q.English, sf.MaxLength)
	}
	b, _ := json.Marshal(sel)
	return fn(api.ChatResponse{Model: req.Model, Message: api.Message{Role: "assistant", Content: string(b)}, Done: true, DoneReason: "stop"})
}
