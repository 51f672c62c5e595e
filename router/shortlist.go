package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	"toolrouter/inventory"
	"toolrouter/prompts"
	"toolrouter/retrieve"
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

// rankDepth is how many ranked tools a shortlist is filled from.
const rankDepth = 256

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
}

// ShortlistTool is one shown tool and its retrieval score (which orders tools and means nothing
// across queries).
type ShortlistTool struct {
	Name  string  `json:"name"`
	Score float64 `json:"score"`
}

// promptSet holds what is rendered once per inventory version and access policy: the tools the
// policy permits, the whole-inventory phase-1 view when it is wanted, and the static part of each
// tool's phase-2 prompt.
type promptSet struct {
	version uint64
	tools   []*inventory.Tool          // permitted, in inventory order
	byName  map[string]*inventory.Tool // the same, by qualified name
	servers []inventory.Server         // of the snapshot, for headings

	mu   sync.Mutex // guards full and args
	full *view      // the whole inventory, rendered on first use
	args map[string]string
}

// view is one phase-1 prompt: its system text, the selection enum and the tools it shows.
type view struct {
	text  string
	enum  []byte // JSON array of the shown qualified names and "none"
	tools map[string]*inventory.Tool
	// shortlist is nil when the whole inventory is shown.
	shortlist *Shortlist
	hits      []retrieve.Hit // the shown tools, best first (shortlists only)
}

// costs are the raw token estimates of each tool's and each server heading's text in the phase-1
// prompt, for one inventory version; policies share them.
type costs struct {
	version uint64
	mu      sync.Mutex // guards tool and heading
	tool    map[string]float64
	heading map[string]float64
}

// promptSet returns the prompt set of the snapshot's inventory version for an access policy.
func (r *Router) promptSet(snap *inventory.Snapshot, policy string, tools []*inventory.Tool) *promptSet {
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
	if r.costs == nil || r.costs.version != snap.Version {
		r.costs = &costs{version: snap.Version, tool: map[string]float64{}, heading: map[string]float64{}}
	}
	byName := make(map[string]*inventory.Tool, len(tools))
	for _, t := range tools {
		byName[t.Qualified] = t
	}
	ps := &promptSet{version: snap.Version, tools: tools, byName: byName, servers: snap.Servers, args: map[string]string{}}
	if r.prompts == nil {
		r.prompts = map[string]*promptSet{}
	}
	r.prompts[policy] = ps
	return ps
}

// permits reports whether the policy offers a tool.
func (p *promptSet) permits(qualified string) bool { return p.byName[qualified] != nil }

// argumentsHead returns the static phase-2 prompt of a tool, rendering it on first use.
func (p *promptSet) argumentsHead(t *inventory.Tool) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.args[t.Qualified]; ok {
		return s, nil
	}
	s, err := prompts.ArgumentsTool(promptTool(t))
	if err != nil {
		return "", err
	}
	p.args[t.Qualified] = s
	return s, nil
}

// wholeView is the whole permitted inventory, rendered once per version and policy.
func (p *promptSet) wholeView() (*view, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.full != nil {
		return p.full, nil
	}
	v, err := render(p.servers, p.tools, nil)
	if err != nil {
		return nil, err
	}
	p.full = v
	return v, nil
}

// render builds a view of tools, grouped by server in the order servers list them; with hits it
// is a shortlist (tools ordered by first appearance in hits), otherwise the whole inventory.
func render(servers []inventory.Server, tools []*inventory.Tool, sl *Shortlist) (*view, error) {
	v := &view{tools: make(map[string]*inventory.Tool, len(tools)), shortlist: sl}
	for _, t := range tools {
		v.tools[t.Qualified] = t
	}
	var groups []prompts.Server
	if sl == nil {
		groups = promptServers(servers, tools)
	} else {
		// Servers in the order of their best tool, tools in score order.
		purposes := make(map[string]string, len(servers))
		for _, s := range servers {
			purposes[s.Name] = s.Purpose
		}
		at := map[string]int{}
		for _, t := range tools {
			i, ok := at[t.Server]
			if !ok {
				i = len(groups)
				at[t.Server] = i
				groups = append(groups, prompts.Server{Name: t.Server, Purpose: purposes[t.Server]})
			}
			groups[i].Tools = append(groups[i].Tools, promptTool(t))
		}
	}
	text, err := prompts.Select(groups, sl != nil)
	if err != nil {
		return nil, err
	}
	v.text = text
	enum := make([]string, 0, len(tools)+1)
	for _, g := range groups {
		for _, t := range g.Tools {
			enum = append(enum, t.Qualified)
		}
	}
	v.enum, _ = json.Marshal(append(enum, noneTool))
	return v, nil
}

// rawCost is the raw token estimate of a tool's entry in the phase-1 prompt, with its server's
// heading when first is set.
func (r *Router) rawCost(c *costs, t *inventory.Tool, purpose string, first bool) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.tool[t.Qualified]
	if !ok {
		text, _ := prompts.SelectToolText(promptTool(t))
		n = rawTokens(text)
		c.tool[t.Qualified] = n
	}
	if first {
		h, ok := c.heading[t.Server]
		if !ok {
			text, _ := prompts.SelectServerText(prompts.Server{Name: t.Server, Purpose: purpose})
			h = rawTokens(text)
			c.heading[t.Server] = h
		}
		n += h
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
		return ps.wholeView()
	}
	return r.shortlist(ctx, snap, ps, query, budget)
}

// fits reports whether the whole permitted inventory fits the budget.
func (r *Router) fits(ps *promptSet, budget int, w window) bool {
	c := r.costsOf(ps.version)
	purposes := purposesOf(ps.servers)
	seen := map[string]bool{}
	raw := 0.0
	for _, t := range ps.tools {
		raw += r.rawCost(c, t, purposes[t.Server], !seen[t.Server])
		seen[t.Server] = true
		if r.est.scale(w.model, raw) > budget {
			return false
		}
	}
	return true
}

func (r *Router) costsOf(version uint64) *costs {
	r.promptMu.Lock()
	defer r.promptMu.Unlock()
	if r.costs == nil || r.costs.version != version {
		r.costs = &costs{version: version, tool: map[string]float64{}, heading: map[string]float64{}}
	}
	return r.costs
}

// shortlist ranks the permitted tools for query and renders the best that fit budget tokens.
func (r *Router) shortlist(ctx context.Context, snap *inventory.Snapshot, ps *promptSet, query string, budget int) (*view, error) {
	res := r.set.Ranker.Rank(ctx, snap, query, rankDepth, ps.permits)
	c := r.costsOf(ps.version)
	purposes := purposesOf(ps.servers)
	model := r.set.Model
	seen := map[string]bool{}
	raw := 0.0
	shown := res.Hits[:0:0]
	for _, h := range res.Hits {
		t := ps.byName[h.Qualified]
		if t == nil {
			continue
		}
		cost := r.rawCost(c, t, purposes[t.Server], !seen[t.Server])
		if len(shown) > 0 && r.est.scale(model, raw+cost) > budget {
			break
		}
		raw += cost
		seen[t.Server] = true
		shown = append(shown, h)
	}
	return r.renderShortlist(ps, query, shown, budget, r.est.scale(model, raw), res.Fallback)
}

func (r *Router) renderShortlist(ps *promptSet, query string, hits []retrieve.Hit, budget, used int, fallback string) (*view, error) {
	sl := &Shortlist{Query: query, Budget: budget, Used: used, Available: len(ps.tools),
		LeftOut: len(ps.tools) - len(hits), Fallback: fallback, Tools: make([]ShortlistTool, len(hits))}
	tools := make([]*inventory.Tool, len(hits))
	for i, h := range hits {
		sl.Tools[i] = ShortlistTool{Name: h.Qualified, Score: math.Round(h.Score*1e4) / 1e4}
		tools[i] = ps.byName[h.Qualified]
	}
	v, err := render(ps.servers, tools, sl)
	if err != nil {
		return nil, err
	}
	v.hits = hits
	return v, nil
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
	nv, err := tp.r.renderShortlist(tp.ps, v.shortlist.Query, keep, v.shortlist.Budget, used, v.shortlist.Fallback)
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

// promptServers groups tools by server, in the order servers list them.
func promptServers(servers []inventory.Server, tools []*inventory.Tool) []prompts.Server {
	var out []prompts.Server
	for _, s := range servers {
		ps := prompts.Server{Name: s.Name, Purpose: s.Purpose}
		for _, t := range tools {
			if t.Server == s.Name {
				ps.Tools = append(ps.Tools, promptTool(t))
			}
		}
		if len(ps.Tools) > 0 {
			out = append(out, ps)
		}
	}
	return out
}

func promptTool(t *inventory.Tool) prompts.Tool {
	pt := prompts.Tool{Qualified: t.Qualified, Description: t.Description, Schema: t.InputSchema}
	for _, p := range t.Parameters {
		pt.Parameters = append(pt.Parameters, prompts.Param{
			Name: p.Name, Type: p.Type, Description: p.Description, Required: p.Required, Enum: p.Enum,
		})
	}
	return pt
}

// Offer is what retrieval offers a caller for a query: the best-ranked tools, and what phase 1
// would be shown.
type Offer struct {
	Query string `json:"query"`
	// Ranked are the k best-ranked tools the caller may use.
	Ranked []ShortlistTool `json:"ranked"`
	// Whole says phase 1 would be shown the caller's whole inventory (it fits the budget, or
	// retrieval is off); otherwise Shortlist is what it would be shown.
	Whole     bool       `json:"whole_inventory"`
	Shortlist *Shortlist `json:"shortlist,omitempty"`
	Fallback  string     `json:"fallback,omitempty"`
}

// ErrNoRanker is Search's error when retrieval is off.
var ErrNoRanker = errors.New("retrieval is off")

// Search shows what retrieval would offer caller for query: the k best-ranked tools it may use,
// and the phase-1 view a request would get. Tools the caller may not use are never ranked.
func (r *Router) Search(ctx context.Context, query, caller string, k int) (*Offer, error) {
	if r.set.Ranker == nil {
		return nil, ErrNoRanker
	}
	snap := r.inv.Snapshot()
	policy, tools := r.allowed(snap, caller)
	ps := r.promptSet(snap, policy, tools)
	res := r.set.Ranker.Rank(ctx, snap, query, k, ps.permits)
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
