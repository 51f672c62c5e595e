package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"toolrouter/access"
	"toolrouter/inventory"
	"toolrouter/prompts"
	"toolrouter/retrieve"
	"toolrouter/tokens"
)

// Ranker ranks the available tools of an inventory snapshot for a query, best first, keeping to
// those permit allows; *retrieve.Catalog satisfies it. It never fails: without its embedding
// model it ranks lexically and says so in the result's Fallback.
type Ranker interface {
	Rank(ctx context.Context, snap *inventory.Snapshot, query string, k int, permit func(qualified string) bool) retrieve.Result
}

// Learner keeps a query as an example of the tool that answered it; *retrieve.Examples satisfies it.
type Learner interface {
	Learn(tool, query string) (bool, error)
}

// A shortlist is filled from the rankFirst best tools, or the rankDepth best when those all fit.
const (
	rankFirst = 64
	rankDepth = 512
)

// Shortlist is what phase 1 was shown when the inventory did not fit its budget: the tools in
// score order, the budget and what was left out.
type Shortlist struct {
	// Query is what was ranked: the request's query, or the words of a search.
	Query string          `json:"query"`
	Tools []ShortlistTool `json:"tools"`
	// Budget and Used are the tool list's estimated tokens: allowed and taken.
	Budget int `json:"budget_tokens"`
	Used   int `json:"used_tokens"`
	// Available counts the tools the caller may use; LeftOut those not shown.
	Available int `json:"available"`
	LeftOut   int `json:"left_out"`
	// Fallback says why ranking was lexical only when dense retrieval was configured.
	Fallback string `json:"fallback,omitempty"`
	// Weak says the ranking rests on little: lexical, and the query reads as another language
	// than the tools' (retrieve.Result.Weak).
	Weak bool `json:"weak,omitempty"`
}

// ShortlistTool is one shown tool and its retrieval score (which orders tools and means nothing
// across queries). A pinned tool is shown whatever its score, before the ranked ones.
type ShortlistTool struct {
	Name   string  `json:"name"`
	Score  float64 `json:"score"`
	Pinned bool    `json:"pinned,omitempty"`
}

// promptSet holds what is rendered once per inventory version and access policy: the tools the
// policy permits, the whole-inventory phase-1 view when it is wanted, and the static part of each
// tool's phase-2 prompt.
type promptSet struct {
	version uint64
	tools   []*inventory.Tool          // permitted, in inventory order
	byName  map[string]*inventory.Tool // the same, by qualified name
	servers []inventory.Server         // of the snapshot, for headings
	// purposes are the servers' purposes by name, for headings and costs.
	purposes map[string]string
	all      bool // every available tool is permitted
	// pinned are the permitted pinned tools, in inventory order; isPinned the same by name.
	pinned   []*inventory.Tool
	isPinned map[string]bool

	mu   sync.Mutex // guards full and args
	full *view      // the whole inventory, rendered on first use
	args map[string]knownPrefix
}

// view is one phase-1 prompt: its system text, the selection enum and the tools it shows.
type view struct {
	text  string
	enum  []byte   // JSON array of the shown qualified names and "none"
	names []string // the same names
	tools map[string]*inventory.Tool
	// shortlist is nil when the whole inventory is shown.
	shortlist *Shortlist
	hits      []retrieve.Hit // the shown tools, best first (shortlists only)
	// client says the view shows a caller's own tools (Plan), not the inventory's.
	client bool
}

// own reports whether the view is one request's own (a shortlist, a caller's tools): what is
// derived from it is never shared or cached.
func (v *view) own() bool { return v.shortlist != nil || v.client }

// pieces are each tool's entry and each server's heading in the phase-1 prompt, rendered once
// per inventory version (policies share them), with their raw token estimates.
type pieces struct {
	version uint64
	mu      sync.Mutex // guards tool and heading
	tool    map[string]piece
	heading map[string]piece
}

// piece is one rendered part of the phase-1 prompt.
type piece struct {
	text string
	raw  float64
}

// promptSet returns the prompt set of the snapshot's inventory version for an access policy.
// all says the policy permits every available tool.
func (r *Router) promptSet(snap *inventory.Snapshot, policy string, tools []*inventory.Tool, all bool) *promptSet {
	r.promptMu.Lock()
	defer r.promptMu.Unlock()
	if ps, ok := r.prompts[policy]; ok && ps.version == snap.Version {
		return ps
	}
	for k, ps := range r.prompts {
		if ps.version != snap.Version {
			delete(r.prompts, k)
		}
	}
	byName := make(map[string]*inventory.Tool, len(tools))
	for _, t := range tools {
		byName[t.Qualified] = t
	}
	ps := &promptSet{version: snap.Version, tools: tools, byName: byName, servers: snap.Servers, all: all, args: map[string]knownPrefix{}}
	ps.purposes = purposesOf(snap.Servers)
	ps.pinned, ps.isPinned = r.pinnedOf(snap, tools)
	if r.prompts == nil {
		r.prompts = map[string]*promptSet{}
	}
	r.prompts[policy] = ps
	return ps
}

// pinnedOf returns the pinned tools among tools, in their order: those Settings.Pinned matches
// and those of servers the inventory marks pinned.
func (r *Router) pinnedOf(snap *inventory.Snapshot, tools []*inventory.Tool) ([]*inventory.Tool, map[string]bool) {
	servers := map[string]bool{}
	for _, s := range snap.Servers {
		if s.Pinned {
			servers[s.Name] = true
		}
	}
	if len(servers) == 0 && r.pinned.Empty() {
		return nil, nil
	}
	var pinned []*inventory.Tool
	is := map[string]bool{}
	for _, t := range tools {
		if servers[t.Server] || r.pinned.Match(t.Qualified) {
			pinned = append(pinned, t)
			is[t.Qualified] = true
		}
	}
	return pinned, is
}

// permit is the ranker's filter: nil when the policy permits every tool (nothing to check).
func (p *promptSet) permit() func(string) bool {
	if p.all {
		return nil
	}
	return func(qualified string) bool { return p.byName[qualified] != nil }
}

// argumentsHead returns the static phase-2 prompt of a tool, rendering and measuring it on first
// use: every phase-2 prompt of the tool starts with it.
func (p *promptSet) argumentsHead(t *inventory.Tool) (knownPrefix, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if h, ok := p.args[t.Qualified]; ok {
		return h, nil
	}
	s, err := prompts.ArgumentsTool(prompts.ToolOf(t))
	if err != nil {
		return knownPrefix{}, err
	}
	h := newKnownPrefix(s)
	p.args[t.Qualified] = h
	return h, nil
}

// wholeView is the whole permitted inventory, rendered once per version and policy.
func (r *Router) wholeView(p *promptSet) (*view, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.full != nil {
		return p.full, nil
	}
	p.full = r.render(p, p.tools, nil)
	return p.full, nil
}

// render builds a view of tools, grouped by server: for the whole inventory in the order servers
// list them, for a shortlist (sl set) servers in the order of their best tool and tools in score
// order. The text is assembled from pieces rendered once per version.
func (r *Router) render(ps *promptSet, tools []*inventory.Tool, sl *Shortlist) *view {
	v := &view{tools: make(map[string]*inventory.Tool, len(tools)), shortlist: sl}
	for _, t := range tools {
		v.tools[t.Qualified] = t
	}
	if sl == nil {
		order := make(map[string]int, len(ps.servers))
		for i, s := range ps.servers {
			order[s.Name] = i
		}
		tools = slices.Clone(tools)
		slices.SortStableFunc(tools, func(a, b *inventory.Tool) int { return order[a.Server] - order[b.Server] })
	}
	pc := r.piecesOf(ps.version)
	purposes := ps.purposes
	var groups []prompts.SelectGroup
	at := map[string]int{}
	enum := make([]string, 0, len(tools)+1)
	for _, t := range tools {
		i, ok := at[t.Server]
		if !ok {
			i = len(groups)
			at[t.Server] = i
			groups = append(groups, prompts.SelectGroup{Heading: pc.headingOf(t.Server, purposes[t.Server]).text})
		}
		groups[i].Tools = append(groups[i].Tools, pc.toolOf(t).text)
	}
	for _, t := range groupedOrder(tools, at, len(groups)) {
		enum = append(enum, t.Qualified)
	}
	v.text = prompts.SelectFrom(prompts.SelectStyle{Shortlist: sl != nil, Reasoning: string(r.set.Reasoning)}, groups)
	v.names = append(enum, noneTool)
	v.enum, _ = json.Marshal(v.names)
	return v
}

// groupedOrder lists tools in the order the prompt shows them: grouped by server, in the groups'
// order.
func groupedOrder(tools []*inventory.Tool, at map[string]int, n int) []*inventory.Tool {
	byGroup := make([][]*inventory.Tool, n)
	for _, t := range tools {
		byGroup[at[t.Server]] = append(byGroup[at[t.Server]], t)
	}
	return slices.Concat(byGroup...)
}

// toolOf is a tool's entry, rendered on first use.
func (p *pieces) toolOf(t *inventory.Tool) piece {
	p.mu.Lock()
	defer p.mu.Unlock()
	pc, ok := p.tool[t.Qualified]
	if !ok {
		text, _ := prompts.SelectToolText(prompts.ToolOf(t))
		pc = piece{text: text, raw: tokens.Raw(text)}
		p.tool[t.Qualified] = pc
	}
	return pc
}

// headingOf is a server's heading, rendered on first use.
func (p *pieces) headingOf(server, purpose string) piece {
	p.mu.Lock()
	defer p.mu.Unlock()
	pc, ok := p.heading[server]
	if !ok {
		text, _ := prompts.SelectServerText(prompts.Server{Name: server, Purpose: purpose})
		pc = piece{text: text, raw: tokens.Raw(text)}
		p.heading[server] = pc
	}
	return pc
}

// rawCost is the raw token estimate of a tool's entry in the phase-1 prompt, with its server's
// heading when first is set.
func (r *Router) rawCost(pc *pieces, t *inventory.Tool, purpose string, first bool) float64 {
	n := pc.toolOf(t).raw
	if first {
		n += pc.headingOf(t.Server, purpose).raw
	}
	return n
}

// promptBudget is the tokens phase 1 may spend on its tool list.
func (r *Router) promptBudget(w window) int {
	if r.set.PromptBudget > 0 {
		return min(r.set.PromptBudget, w.limit)
	}
	return w.limit / 2
}

// phase1View picks what phase 1 shows for query: the whole permitted inventory when it fits the
// budget (or there is no ranker), else the best-ranked tools that fit.
func (r *Router) phase1View(ctx context.Context, snap *inventory.Snapshot, ps *promptSet, query string) (*view, error) {
	w := r.window()
	budget := r.promptBudget(w)
	if r.set.Ranker == nil || r.fits(ps, budget, w) {
		return r.wholeView(ps)
	}
	return r.shortlist(ctx, snap, ps, query, budget)
}

// fits reports whether the whole permitted inventory fits the budget.
func (r *Router) fits(ps *promptSet, budget int, w window) bool {
	c := r.piecesOf(ps.version)
	purposes := ps.purposes
	seen := map[string]bool{}
	raw := 0.0
	for _, t := range ps.tools {
		raw += r.rawCost(c, t, purposes[t.Server], !seen[t.Server])
		seen[t.Server] = true
		if r.est.Scale(w.model, raw) > budget {
			return false
		}
	}
	return true
}

func (r *Router) piecesOf(version uint64) *pieces {
	r.promptMu.Lock()
	defer r.promptMu.Unlock()
	if r.pieces == nil || r.pieces.version != version {
		r.pieces = &pieces{version: version, tool: map[string]piece{}, heading: map[string]piece{}}
	}
	return r.pieces
}

// shortlist ranks the permitted tools for query and renders the best that fit budget tokens,
// after the pinned ones (which count against the budget). It ranks a first few and ranks deeper
// only when they all fit.
func (r *Router) shortlist(ctx context.Context, snap *inventory.Snapshot, ps *promptSet, query string, budget int) (*view, error) {
	c := r.piecesOf(ps.version)
	purposes := ps.purposes
	model := r.set.Model
	var res retrieve.Result
	for k := rankFirst; ; k = rankDepth {
		res = r.set.Ranker.Rank(ctx, snap, query, k, ps.permit())
		seen := map[string]bool{}
		raw := 0.0
		shown := res.Hits[:0:0]
		full := false
		pinned, hits := ps.pinnedHits(res.Hits), res.Hits
		if len(pinned) > 0 {
			hits = slices.Concat(pinned, res.Hits)
		}
		for i, h := range hits {
			t := ps.byName[h.Qualified]
			if t == nil || i >= len(pinned) && ps.isPinned[h.Qualified] {
				continue // not permitted, or pinned and shown already
			}
			cost := r.rawCost(c, t, purposes[t.Server], !seen[t.Server])
			if len(shown) > 0 && r.est.Scale(model, raw+cost) > budget {
				full = true
				break
			}
			raw += cost
			seen[t.Server] = true
			shown = append(shown, h)
		}
		if full || k == rankDepth || len(res.Hits) < k {
			return r.renderShortlist(ps, query, shown, budget, r.est.Scale(model, raw), res)
		}
	}
}

// pinnedHits returns the pinned tools as hits, in inventory order, with their scores in hits (0
// for one not among them).
func (p *promptSet) pinnedHits(hits []retrieve.Hit) []retrieve.Hit {
	if len(p.pinned) == 0 {
		return nil
	}
	score := make(map[string]float64, len(p.pinned))
	for _, h := range hits {
		if p.isPinned[h.Qualified] {
			score[h.Qualified] = h.Score
		}
	}
	out := make([]retrieve.Hit, len(p.pinned))
	for i, t := range p.pinned {
		out[i] = retrieve.Hit{Qualified: t.Qualified, Score: score[t.Qualified]}
	}
	return out
}

func (r *Router) renderShortlist(ps *promptSet, query string, hits []retrieve.Hit, budget, used int, res retrieve.Result) (*view, error) {
	sl := &Shortlist{Query: query, Budget: budget, Used: used, Available: len(ps.tools),
		LeftOut: len(ps.tools) - len(hits), Fallback: res.Fallback, Weak: res.Weak, Tools: make([]ShortlistTool, len(hits))}
	tools := make([]*inventory.Tool, len(hits))
	for i, h := range hits {
		sl.Tools[i] = ShortlistTool{Name: h.Qualified, Score: math.Round(h.Score*1e4) / 1e4, Pinned: ps.isPinned[h.Qualified]}
		tools[i] = ps.byName[h.Qualified]
	}
	v := r.render(ps, tools, sl)
	v.hits = hits
	return v, nil
}

// PinnedCost is what the pinned tools take of phase 1's tool list: the tools (of every identity,
// in inventory order), their estimated tokens with their servers' headings, and the budget.
type PinnedCost struct {
	Tools  []string
	Tokens int
	Budget int
}

// Pinned returns the pinned tools of the current inventory and what they cost.
func (r *Router) Pinned() PinnedCost {
	snap := r.inv.Snapshot()
	pinned, _ := r.pinnedOf(snap, snap.Available())
	c := r.piecesOf(snap.Version)
	purposes := purposesOf(snap.Servers)
	seen := map[string]bool{}
	raw := 0.0
	pc := PinnedCost{Budget: r.promptBudget(r.window())}
	for _, t := range pinned {
		raw += r.rawCost(c, t, purposes[t.Server], !seen[t.Server])
		seen[t.Server] = true
		pc.Tools = append(pc.Tools, t.Qualified)
	}
	pc.Tokens = r.est.Scale(r.set.Model, raw)
	return pc
}

// PinnedOverBudgetError is CheckPinned's error: the pinned tools take more than the budget.
type PinnedOverBudgetError struct {
	PinnedCost
}

func (e *PinnedOverBudgetError) Error() string {
	names := e.Tools
	if len(names) > 8 {
		names = append(slices.Clone(names[:8]), "…")
	}
	return fmt.Sprintf("retrieval.pinned: the %d pinned tools take %d tokens of phase 1's tool list, more than its budget of %d "+
		"(retrieval.prompt_budget; 0 is half of num_ctx less router.context_reserve): %s; pin fewer tools or raise the budget",
		len(e.Tools), e.Tokens, e.Budget, strings.Join(names, ", "))
}

// CheckPinned returns a *PinnedOverBudgetError when the pinned tools of the current inventory do
// not fit the tool list's budget together: run at start-up, once the servers are up, it stops a
// configuration whose pinned tools would crowd out every other tool. A server that grows later
// past the budget is not refused: its pinned tools are shown in order while they fit.
func (r *Router) CheckPinned() error {
	if pc := r.Pinned(); pc.Tokens > pc.Budget {
		return &PinnedOverBudgetError{pc}
	}
	return nil
}

// halve is a shrinker for fit: it drops the lower-scored half of a shortlist (at least one tool
// stays). It cannot shrink the whole inventory.
func (tp *twoPhase) halve(int) (string, bool) {
	v := tp.view
	if v.shortlist == nil || len(v.hits) <= 1 {
		return "", false
	}
	keep := v.hits[:len(v.hits)/2]
	used := int(math.Ceil(float64(v.shortlist.Used) * float64(len(keep)) / float64(len(v.hits))))
	nv, err := tp.r.renderShortlist(tp.ps, v.shortlist.Query, keep, v.shortlist.Budget, used,
		retrieve.Result{Fallback: v.shortlist.Fallback, Weak: v.shortlist.Weak})
	if err != nil {
		return "", false
	}
	tp.show(nv)
	return fmt.Sprintf("shortlist cut from %d to %d tools", len(v.hits), len(keep)), true
}

// describe is a shortlist's trace detail.
func (s *Shortlist) describe() string {
	names := make([]string, 0, min(len(s.Tools), 8))
	for i, t := range s.Tools {
		if i == 8 {
			names = append(names, "…")
			break
		}
		names = append(names, fmt.Sprintf("%s %.3g", t.Name, t.Score))
	}
	d := fmt.Sprintf("%d of %d tools shown (%d of %d budget tokens): %s", len(s.Tools), s.Available, s.Used, s.Budget, strings.Join(names, ", "))
	if s.Fallback != "" {
		d += "; lexical ranking only: " + s.Fallback
	}
	return d
}

func purposesOf(servers []inventory.Server) map[string]string {
	m := make(map[string]string, len(servers))
	for _, s := range servers {
		m[s.Name] = s.Purpose
	}
	return m
}

// Offer is what retrieval offers an identity for a query: the best-ranked tools, and what phase 1
// would be shown.
type Offer struct {
	Query string `json:"query"`
	// Ranked are the k best-ranked tools the identity may use.
	Ranked []ShortlistTool `json:"ranked"`
	// Whole says phase 1 would be shown the identity's whole inventory (it fits the budget, or
	// retrieval is off); otherwise Shortlist is what it would be shown.
	Whole     bool       `json:"whole_inventory"`
	Shortlist *Shortlist `json:"shortlist,omitempty"`
	Fallback  string     `json:"fallback,omitempty"`
}

// ErrNoRanker is Search's error when retrieval is off.
var ErrNoRanker = errors.New("retrieval is off")

// Search shows what retrieval would offer id for query: the k best-ranked tools it may use, and
// the phase-1 view a request would get. Tools the identity may not use are never ranked.
func (r *Router) Search(ctx context.Context, query string, id access.Identity, k int) (*Offer, error) {
	if r.set.Ranker == nil {
		return nil, ErrNoRanker
	}
	snap := r.inv.Snapshot()
	ps := r.allowed(snap, id)
	res := r.set.Ranker.Rank(ctx, snap, query, k, ps.permit())
	o := &Offer{Query: query, Ranked: make([]ShortlistTool, 0, len(res.Hits)), Fallback: res.Fallback}
	for _, h := range res.Hits {
		o.Ranked = append(o.Ranked, ShortlistTool{Name: h.Qualified, Score: math.Round(h.Score*1e4) / 1e4})
	}
	v, err := r.phase1View(ctx, snap, ps, query)
	if err != nil {
		return nil, err
	}
	o.Whole, o.Shortlist = v.shortlist == nil, v.shortlist
	return o, nil
}
