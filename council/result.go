package council

import (
	"fmt"
	"math"
	"strings"
	"time"

	"toolrouter/provider"
)

// AnsweredBy says who wrote the final answer.
type AnsweredBy string

// Values of AnsweredBy. The HTTP layer adds "tool" for answers that skip the council.
const (
	// AnsweredByCouncil: the chairman synthesised the answer.
	AnsweredByCouncil AnsweredBy = "council"
	// AnsweredByFallback: the chairman failed; the answer is the best-ranked member's.
	AnsweredByFallback AnsweredBy = "fallback"
)

// Result is everything a council run produced. Its JSON field names follow the llm-council front
// end's (stage1 entries {model, response}, stage2 {model, ranking, parsed_ranking},
// label_to_model, aggregate_rankings {model, average_rank, rankings_count}, stage3 {model,
// response}), with more fields beside them.
type Result struct {
	// Stage1 has one answer per member, in the members' order; failed members have Error.
	Stage1 []Answer `json:"stage1"`
	// Stage2 has one review per reviewer (the members that answered), when peer review ran.
	Stage2 []Review `json:"stage2,omitempty"`
	// LabelToModel maps each anonymous label ("Response A") to the member's name.
	LabelToModel map[string]string `json:"label_to_model,omitempty"`
	// AggregateRankings orders the answers by average position over the reviews, best first.
	AggregateRankings []Aggregate `json:"aggregate_rankings,omitempty"`
	// Stage3 is the chairman's synthesis, or the fallback; nil when the council stopped earlier.
	Stage3 *Synthesis `json:"stage3,omitempty"`
	// Final is the answer to give the user.
	Final      string     `json:"final"`
	AnsweredBy AnsweredBy `json:"answered_by,omitempty"`
	// ChairmanError is why the chairman failed, when AnsweredBy is "fallback".
	ChairmanError string `json:"chairman_error,omitempty"`
	// Skipped lists every member call that failed, with its reason.
	Skipped []Skip `json:"skipped,omitempty"`
	Usage   Usage  `json:"usage"`
}

// Answer is one member's stage-1 answer.
type Answer struct {
	// Model is the member's name.
	Model   string `json:"model"`
	ModelID string `json:"model_id,omitempty"`
	// Label is the answer's anonymous label; empty when the member failed.
	Label    string    `json:"label,omitempty"`
	Response string    `json:"response"`
	Error    string    `json:"error,omitempty"`
	Usage    CallUsage `json:"usage"`
}

// Review is one member's stage-2 review.
type Review struct {
	// Model is the reviewer's name; Label its own answer's label.
	Model   string `json:"model"`
	ModelID string `json:"model_id,omitempty"`
	Label   string `json:"label"`
	// Ranking is the review as written.
	Ranking string `json:"ranking"`
	// ParsedRanking is the labels read from it, best first.
	ParsedRanking []string `json:"parsed_ranking"`
	// ParseOK says the review ended with a complete FINAL RANKING; ParseProblems says what was not.
	ParseOK       bool      `json:"parse_ok"`
	ParseProblems []string  `json:"parse_problems,omitempty"`
	Error         string    `json:"error,omitempty"`
	Usage         CallUsage `json:"usage"`
}

// Aggregate is one answer's place in the aggregate ranking.
type Aggregate struct {
	// Model is the member's name.
	Model         string  `json:"model"`
	Label         string  `json:"label"`
	AverageRank   float64 `json:"average_rank"`
	RankingsCount int     `json:"rankings_count"`
}

// Synthesis is stage 3: the chairman's answer, or the fallback answer with the chairman's error.
type Synthesis struct {
	// Model is the chairman's name.
	Model   string `json:"model"`
	ModelID string `json:"model_id,omitempty"`
	// Response is the final answer (the fallback member's answer when the chairman failed).
	Response   string     `json:"response"`
	AnsweredBy AnsweredBy `json:"answered_by"`
	// Error is the chairman's error, FallbackFrom the member whose answer replaced its answer.
	Error        string    `json:"error,omitempty"`
	FallbackFrom string    `json:"fallback_from,omitempty"`
	Usage        CallUsage `json:"usage"`
}

// Skip is one member call that failed.
type Skip struct {
	Member string `json:"member"`
	Stage  int    `json:"stage"`
	Reason string `json:"reason"`
}

// CallUsage is what one call used.
type CallUsage struct {
	PromptTokens     int     `json:"prompt_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	DurationMS       float64 `json:"duration_ms"`
	// CostUSD is set when the member has a price.
	CostUSD *float64 `json:"cost_usd,omitempty"`
	// Breakdown splits the server's time (load_ms, prefill_ms, decode_ms, rest_ms; 0 where the
	// server reports none, as OpenAI-compatible ones) and counts the prompt tokens not served from
	// its cache (uncached_prompt_tokens).
	provider.Breakdown
}

// Usage is what the run used, per stage and in total.
type Usage struct {
	Stage1 StageUsage `json:"stage1"`
	Stage2 StageUsage `json:"stage2"`
	Stage3 StageUsage `json:"stage3"`
	// Total sums the stages; its DurationMS is the whole run's wall time.
	Total StageUsage `json:"total"`
}

// StageUsage sums the calls of a stage.
type StageUsage struct {
	// DurationMS is the stage's wall time: about its slowest call, not the sum of its calls.
	DurationMS       float64 `json:"duration_ms"`
	Calls            int     `json:"calls"`
	PromptTokens     int     `json:"prompt_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	// CostUSD sums the priced calls; nil when none was priced. UnpricedCalls counts the others.
	CostUSD       *float64 `json:"cost_usd,omitempty"`
	UnpricedCalls int      `json:"unpriced_calls,omitempty"`
	// Breakdown sums the calls' breakdowns (see CallUsage).
	provider.Breakdown
}

func stageUsage(wall time.Duration, calls []call) StageUsage {
	u := StageUsage{DurationMS: ms(wall)}
	for _, c := range calls {
		u.add(c.usage)
	}
	return u
}

func (u *StageUsage) add(c CallUsage) {
	u.Calls++
	u.PromptTokens += c.PromptTokens
	u.CompletionTokens += c.CompletionTokens
	u.Breakdown.Add(c.Breakdown)
	if c.CostUSD == nil {
		u.UnpricedCalls++
		return
	}
	u.addCost(*c.CostUSD)
}

func (u *StageUsage) addCost(c float64) {
	if u.CostUSD == nil {
		u.CostUSD = new(float64)
	}
	*u.CostUSD = roundCost(*u.CostUSD + c)
}

// roundCost rounds to a nano-dollar, so sums print as 0.00052, not 0.0005200000000000001.
func roundCost(c float64) float64 { return math.Round(c*1e9) / 1e9 }

func (u *Usage) total(wall time.Duration) {
	t := StageUsage{DurationMS: ms(wall)}
	for _, s := range []StageUsage{u.Stage1, u.Stage2, u.Stage3} {
		t.Calls += s.Calls
		t.PromptTokens += s.PromptTokens
		t.CompletionTokens += s.CompletionTokens
		t.UnpricedCalls += s.UnpricedCalls
		t.Breakdown.Add(s.Breakdown)
		if s.CostUSD != nil {
			t.addCost(*s.CostUSD)
		}
	}
	u.Total = t
}

// MemberUsage sums one member's calls over the stages.
type MemberUsage struct {
	Member string `json:"member"`
	CallUsage
	Calls int `json:"calls"`
}

// ByMember sums the usage of each member (and the chairman) over the stages, in order of first
// appearance.
func (r *Result) ByMember() []MemberUsage {
	var out []MemberUsage
	idx := map[string]int{}
	add := func(name string, c CallUsage) {
		i, ok := idx[name]
		if !ok {
			i = len(out)
			idx[name] = i
			out = append(out, MemberUsage{Member: name})
		}
		m := &out[i]
		m.Calls++
		m.PromptTokens += c.PromptTokens
		m.CompletionTokens += c.CompletionTokens
		m.DurationMS += c.DurationMS
		m.Breakdown.Add(c.Breakdown)
		if c.CostUSD != nil {
			if m.CostUSD == nil {
				m.CostUSD = new(float64)
			}
			*m.CostUSD = roundCost(*m.CostUSD + *c.CostUSD)
		}
	}
	for _, a := range r.Stage1 {
		add(a.Model, a.Usage)
	}
	for _, rv := range r.Stage2 {
		add(rv.Model, rv.Usage)
	}
	if r.Stage3 != nil {
		add(r.Stage3.Model, r.Stage3.Usage)
	}
	return out
}

// ErrQuorum is matched (errors.Is) by a *QuorumError.
var ErrQuorum = fmt.Errorf("council quorum not met")

// QuorumError means fewer than Quorum members answered stage 1; Skipped says why each failed.
type QuorumError struct {
	Quorum, Members, Answered int
	Skipped                   []Skip
}

func (e *QuorumError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d of %d members answered, %d needed", ErrQuorum, e.Answered, e.Members, e.Quorum)
	for i, s := range e.Skipped {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %s", s.Member, s.Reason)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrQuorum) true.
func (e *QuorumError) Is(target error) bool { return target == ErrQuorum }
