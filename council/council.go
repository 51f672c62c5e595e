// Package council runs a council of language models over one query and the results of the tool
// calls made for it: every member answers in parallel (stage 1), the members rank each other's
// anonymised answers (stage 2, optional), and a chairman model writes the final answer from the
// answers and rankings (stage 3).
//
// Partial failure is normal. A member that errors or times out is skipped and reported with its
// reason; the council goes on when at least Quorum members answered stage 1. When the chairman
// fails, the best-ranked member answer is returned, flagged as a fallback, with the chairman's
// error. Run emits the stage events a council front end knows (stage1_start … stage3_complete) as
// it goes, and between them the answers as the models write them: the members' (stage1_delta,
// stage1_answer) and the chairman's (stage3_delta), so that a reader sees the final answer form
// instead of waiting for all of it. Words of a chairman that fails after writing some are never
// silently followed by the fallback: a marker between them says what happened.
//
// The package owns the deliberation only. It does not decide whether a query needs the council
// (the HTTP handler does, from the router's outcome), it knows no provider or wire protocol (a
// member's Model is anything with Complete, e.g. provider.ChatModel), and it holds no state
// between runs: a Council is safe for concurrent use.
package council

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"toolrouter/internal/errtext"
	"toolrouter/prompts"
	"toolrouter/provider"
)

// Model is one language model as the council uses it; provider.ChatModel satisfies it for
// Ollama and OpenAI-compatible servers.
type Model interface {
	Complete(ctx context.Context, msgs []provider.Message) (provider.Answer, error)
}

// StreamingModel is a Model that passes its answer's text on as the server sends it;
// provider.ChatModel is one. onText is called on the calling goroutine, before CompleteStream
// returns.
type StreamingModel interface {
	Model
	CompleteStream(ctx context.Context, msgs []provider.Message, onText func(string)) (provider.Answer, error)
}

// Member is one model of the council, or its chairman.
type Member struct {
	// Name identifies the member in results, logs and events; reviewers never see it.
	Name string
	// ModelID is the model's id at its provider ("gpt-4o-mini"), reported with the results and,
	// like Name, hidden from reviewers. Empty: the Model's String method when it has one.
	ModelID string
	Model   Model
	// Timeout bounds each call to this member; 0 means only the stage and the caller's deadline.
	Timeout time.Duration
	// Price, when set, gives each call a cost.
	Price Price
}

// Price is what a model costs, in dollars per million tokens.
type Price struct {
	PromptPerMTok     float64
	CompletionPerMTok float64
}

// IsZero reports whether no price is set.
func (p Price) IsZero() bool { return p.PromptPerMTok == 0 && p.CompletionPerMTok == 0 }

// Cost returns the cost of a call with these token counts.
func (p Price) Cost(prompt, completion int) float64 {
	return (float64(prompt)*p.PromptPerMTok + float64(completion)*p.CompletionPerMTok) / 1e6
}

// Options configure a Council. The zero value is a council without peer review, a quorum of one,
// no stage timeout and no logging.
type Options struct {
	// PeerReview runs stage 2: members rank each other's anonymised answers.
	PeerReview bool
	// Quorum is how many members must answer stage 1 for the council to go on (at least 1).
	Quorum int
	// StageTimeout, when > 0, bounds each stage as a whole.
	StageTimeout time.Duration
	// MaxParallel bounds how many calls of one stage run at once; 0 means every member at once.
	MaxParallel int
	// MaxEvidenceBytes bounds each tool result shown to the models (head and tail kept, the cut
	// marked), so one long result cannot push a member's prompt out of its context window;
	// 0 means DefaultMaxEvidenceBytes, a negative value no bound.
	MaxEvidenceBytes int
	// Logger receives a warning for every skipped member and a failed chairman; nil discards.
	Logger *slog.Logger
}

// DefaultMaxEvidenceBytes bounds each tool result a model is shown when nothing else does
// (council.max_evidence_bytes's default): room for a page of text, far under a context window.
const DefaultMaxEvidenceBytes = 16384

// Council is a configured council. It is immutable and safe for concurrent use.
type Council struct {
	members  []Member
	chairman Member
	opts     Options
	log      *slog.Logger
	redact   func(string) string
}

// New returns a council of members with chairman.
func New(members []Member, chairman Member, opts Options) *Council {
	members = slices.Clone(members)
	for i := range members {
		members[i].ModelID = modelID(members[i])
	}
	chairman.ModelID = modelID(chairman)
	if opts.Quorum < 1 {
		opts.Quorum = 1
	}
	if opts.MaxEvidenceBytes == 0 {
		opts.MaxEvidenceBytes = DefaultMaxEvidenceBytes
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Council{members: members, chairman: chairman, opts: opts, log: log, redact: redactor(append(slices.Clone(members), chairman))}
}

func modelID(m Member) string {
	if m.ModelID != "" {
		return m.ModelID
	}
	if s, ok := m.Model.(fmt.Stringer); ok {
		return s.String()
	}
	return ""
}

// Members returns the names of the members, in order.
func (c *Council) Members() []string {
	names := make([]string, len(c.members))
	for i, m := range c.members {
		names[i] = m.Name
	}
	return names
}

// Input is what the council deliberates on.
type Input struct {
	Query string
	// History is the conversation before the query (user and assistant turns).
	History []provider.Message
	// Evidence is the tool calls made for the query, with their results, in order.
	Evidence []Evidence
}

// Evidence is one tool call and what came of it.
type Evidence struct {
	Server    string
	Tool      string
	Arguments map[string]any
	// Text is the tool's answer.
	Text string
	// IsError says the tool answered with an error (isError): Text is its message.
	IsError bool
	// Error says the call did not complete (invalid arguments, timeout, server down): why.
	Error string
}

// Run deliberates on in. emit, when not nil, is called with each stage event in order
// (stage1_start, stage1_complete, then stage2_start and stage2_complete when peer review runs —
// it needs two answers — then stage3_start and stage3_complete), and between them with the
// pieces of the answers as the models write them (stage1_delta, stage1_answer, stage3_delta;
// see Delta). It is called from Run's goroutine or a member call's, never concurrently; it
// should not block for long (a member's call waits for it), and must not modify the event's
// data. A model that implements StreamingModel is streamed; any other sends its answer as one
// piece once it has it.
//
// The error is a *QuorumError (errors.Is ErrQuorum) when fewer than Quorum members answered stage
// 1, or the context's error when the caller gave up during stage 1; the partial Result is returned
// with it. A failing chairman is not an error: the Result is a fallback (see Result.AnsweredBy).
func (c *Council) Run(ctx context.Context, in Input, emit func(Event)) (*Result, error) {
	emit = serialised(emit)
	start := time.Now()
	res := &Result{}
	defer func() { res.Usage.total(time.Since(start)) }()
	if len(c.members) < c.opts.Quorum {
		return res, &QuorumError{Quorum: c.opts.Quorum, Members: len(c.members)}
	}
	evidence := PromptEvidence(in.Evidence, c.opts.MaxEvidenceBytes)

	// Stage 1.
	emit(Event{Type: Stage1Start, Data: StageStart{Members: c.Members()}})
	system, err := prompts.CouncilStage1(evidence)
	if err != nil {
		return res, fmt.Errorf("council: %w", err)
	}
	msgs := make([]provider.Message, 0, len(in.History)+2)
	msgs = append(msgs, provider.Message{Role: "system", Content: system})
	msgs = append(msgs, in.History...)
	msgs = append(msgs, provider.Message{Role: "user", Content: in.Query})
	slots := labels(in.Query, len(c.members))
	answerOf := func(i int, call call) Answer {
		a := Answer{Model: c.members[i].Name, ModelID: c.members[i].ModelID, Response: call.text, Error: call.reason, Usage: call.usage}
		if call.reason == "" {
			a.Label = slots[i]
		}
		return a
	}
	t := time.Now()
	calls := c.fanOut(ctx, 1, c.members, func(int) []provider.Message { return msgs }, watch{
		text: func(i int, piece string) {
			emit(Event{Type: Stage1Delta, Data: Delta{Model: c.members[i].Name, Label: slots[i], Text: piece}})
		},
		done: func(i int, call call) { emit(Event{Type: Stage1Answer, Data: answerOf(i, call)}) },
	})
	res.Usage.Stage1 = stageUsage(time.Since(t), calls)
	answered := 0
	res.LabelToModel = map[string]string{}
	for i, call := range calls {
		res.Stage1 = append(res.Stage1, answerOf(i, call))
		if call.reason != "" {
			res.skip(c.members[i].Name, 1, call.reason)
			continue
		}
		res.LabelToModel[slots[i]] = c.members[i].Name
		answered++
	}
	emit(Event{Type: Stage1Complete, Data: res.Stage1})
	if answered < c.opts.Quorum {
		if ctx.Err() != nil {
			return res, fmt.Errorf("council: stage 1: %w", context.Cause(ctx))
		}
		return res, &QuorumError{Quorum: c.opts.Quorum, Members: len(c.members), Answered: answered, Skipped: slices.Clone(res.Skipped)}
	}
	answers := res.anonymous(c.redact)

	// Stage 2.
	var reviews []prompts.CouncilReview
	var ranking []prompts.CouncilRank
	if c.opts.PeerReview && answered > 1 {
		reviews, ranking, err = c.review(ctx, in, evidence, answers, res, emit)
		if err != nil {
			return res, err
		}
	}

	// Stage 3.
	emit(Event{Type: Stage3Start, Data: StageStart{Members: []string{c.chairman.Name}}})
	prompt, err := prompts.CouncilStage3(in.Query, evidence, answers, reviews, ranking)
	if err != nil {
		return res, fmt.Errorf("council: %w", err)
	}
	t = time.Now()
	sent := false // some of the chairman's text went out in stage3_delta
	chair := c.fanOut(ctx, 3, []Member{c.chairman}, func(int) []provider.Message {
		return append(slices.Clone(in.History), provider.Message{Role: "user", Content: prompt})
	}, watch{text: func(_ int, piece string) {
		sent = true
		emit(Event{Type: Stage3Delta, Data: Delta{Text: piece}})
	}})[0]
	res.Usage.Stage3 = stageUsage(time.Since(t), []call{chair})
	syn := Synthesis{Model: c.chairman.Name, ModelID: c.chairman.ModelID, Response: chair.text, Usage: chair.usage}
	if chair.reason == "" {
		res.Final, res.AnsweredBy = chair.text, AnsweredByCouncil
	} else {
		// The chairman failed: answer with the best-ranked member (stage-1 order without rankings),
		// flagged, and with the chairman's error — never a bare "unable to generate".
		best := res.best()
		res.ChairmanError, res.AnsweredBy = chair.reason, AnsweredByFallback
		res.Final, syn.Response = best.Response, best.Response
		syn.Error, syn.FallbackFrom = chair.reason, best.Model
		res.skip(c.chairman.Name, 3, chair.reason)
		c.log.Warn("council chairman failed; answering with the best-ranked member",
			"chairman", c.chairman.Name, "reason", chair.reason, "fallback", best.Model)
		// Words of the chairman's may be out already: they are not taken back, but the
		// fallback never follows them silently.
		if sent {
			emit(Event{Type: Stage3Delta, Data: Delta{Text: fallbackMarker(chair.reason, best.Label, len(res.AggregateRankings) > 0), Fallback: true}})
		}
		emit(Event{Type: Stage3Delta, Data: Delta{Text: best.Response, Fallback: true}})
	}
	syn.AnsweredBy = res.AnsweredBy
	res.Stage3 = &syn
	emit(Event{Type: Stage3Complete, Data: syn})
	return res, nil
}

// review runs stage 2 and aggregates the rankings into res.
func (c *Council) review(ctx context.Context, in Input, evidence []prompts.CouncilEvidence, answers []prompts.CouncilAnswer, res *Result, emit func(Event)) ([]prompts.CouncilReview, []prompts.CouncilRank, error) {
	var reviewers []Member
	var own []string // each reviewer's own label
	for i, a := range res.Stage1 {
		if a.Error == "" {
			reviewers = append(reviewers, c.members[i])
			own = append(own, a.Label)
		}
	}
	emit(Event{Type: Stage2Start, Data: StageStart{Members: names(reviewers)}})
	prompt, err := prompts.CouncilStage2(in.Query, evidence, answers)
	if err != nil {
		return nil, nil, fmt.Errorf("council: %w", err)
	}
	msgs := append(slices.Clone(in.History), provider.Message{Role: "user", Content: prompt})
	labels := make([]string, len(answers))
	for i, a := range answers {
		labels[i] = a.Label
	}
	t := time.Now()
	calls := c.fanOut(ctx, 2, reviewers, func(int) []provider.Message { return msgs }, watch{})
	res.Usage.Stage2 = stageUsage(time.Since(t), calls)
	var reviews []prompts.CouncilReview
	for i, call := range calls {
		r := Review{Model: reviewers[i].Name, ModelID: reviewers[i].ModelID, Label: own[i], Ranking: call.text, Error: call.reason, Usage: call.usage}
		if call.reason != "" {
			res.skip(reviewers[i].Name, 2, call.reason)
		} else {
			p := ParseRanking(call.text, labels)
			r.ParsedRanking, r.ParseOK, r.ParseProblems = p.Labels, p.complete(labels, own[i]), p.Problems
			reviews = append(reviews, prompts.CouncilReview{Reviewer: fmt.Sprintf("Reviewer %d", len(reviews)+1), Text: c.redact(call.text)})
		}
		res.Stage2 = append(res.Stage2, r)
	}
	res.AggregateRankings = aggregate(res.Stage2, res.LabelToModel, labels)
	ranking := make([]prompts.CouncilRank, len(res.AggregateRankings))
	for i, a := range res.AggregateRankings {
		ranking[i] = prompts.CouncilRank{Position: i + 1, Label: a.Label, Average: a.AverageRank, Votes: a.RankingsCount}
	}
	emit(Event{Type: Stage2Complete, Data: res.Stage2, Metadata: Stage2Metadata{LabelToModel: res.LabelToModel, AggregateRankings: res.AggregateRankings}})
	return reviews, ranking, nil
}

// call is the outcome of one member's call in one stage.
type call struct {
	text   string
	reason string // why the member is skipped; empty when it answered
	usage  CallUsage
}

// watch is what a stage is told of its calls as they go; a nil field is not told.
type watch struct {
	// text receives each piece of member i's answer text as it arrives (on the call's goroutine);
	// a model that does not stream sends its whole answer as one piece once it has it.
	text func(i int, piece string)
	// done receives member i's outcome as soon as its call ends.
	done func(i int, c call)
}

// fanOut calls every member of a stage concurrently, each with its own timeout inside the stage's,
// and returns their outcomes in the members' order; w is told of each call as it goes.
//
// Policy for a failing member: skip and record. A member that errors, times out or answers with
// nothing gets a reason and the others carry on; no member's failure cancels another's call
// (every goroutine returns nil, so errgroup never cancels the group). Whether enough members
// answered is the caller's decision (the quorum after stage 1).
func (c *Council) fanOut(ctx context.Context, stage int, members []Member, msgs func(i int) []provider.Message, w watch) []call {
	if c.opts.StageTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, c.opts.StageTimeout, &timeoutError{what: fmt.Sprintf("stage %d", stage), d: c.opts.StageTimeout})
		defer cancel()
	}
	out := make([]call, len(members))
	g, gctx := errgroup.WithContext(ctx)
	limit := c.opts.MaxParallel
	if limit <= 0 {
		limit = len(members)
	}
	g.SetLimit(max(limit, 1))
	for i, m := range members {
		g.Go(func() error {
			var onText func(string)
			if w.text != nil {
				onText = func(piece string) { w.text(i, piece) }
			}
			out[i] = c.call(gctx, stage, m, msgs(i), onText)
			if w.done != nil {
				w.done(i, out[i])
			}
			return nil
		})
	}
	_ = g.Wait() // never an error: see the policy above
	return out
}

// call makes one member's call. onText, when not nil, receives the answer's text as it comes: a
// StreamingModel's pieces as they arrive, any other model's whole answer once it is in (and
// not when it failed).
func (c *Council) call(ctx context.Context, stage int, m Member, msgs []provider.Message, onText func(string)) call {
	if m.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, m.Timeout, &timeoutError{what: "member " + m.Name, d: m.Timeout})
		defer cancel()
	}
	start := time.Now()
	var (
		comp provider.Answer
		err  error
	)
	if m.Model == nil {
		err = errors.New("no model configured")
	} else if err = ctx.Err(); err == nil {
		if sm, ok := m.Model.(StreamingModel); ok && onText != nil {
			comp, err = sm.CompleteStream(ctx, msgs, onText)
		} else {
			comp, err = m.Model.Complete(ctx, msgs)
			if err == nil && onText != nil && comp.Text != "" {
				onText(comp.Text)
			}
		}
	}
	st := comp.Stats
	out := call{text: comp.Text, usage: CallUsage{PromptTokens: st.PromptTokens, CompletionTokens: st.DecodeTokens, DurationMS: ms(time.Since(start)), Breakdown: st.Breakdown}}
	if !m.Price.IsZero() {
		cost := roundCost(m.Price.Cost(st.PromptTokens, st.DecodeTokens))
		out.usage.CostUSD = &cost
	}
	switch {
	case err != nil && ctx.Err() != nil:
		out.reason = context.Cause(ctx).Error() // "member x: timed out after 5s", not the transport's words
	case err != nil:
		out.reason = errtext.OneLine(err.Error()) // reasons are JSON fields and log values: one line
	case strings.TrimSpace(comp.Text) == "":
		out.reason = "empty answer"
	}
	if out.reason != "" {
		out.text = ""
		c.log.Warn("council call failed; member skipped", "stage", stage, "member", m.Name, "reason", out.reason)
	}
	return out
}

// serialised returns emit (a no-op when nil) made safe to call from several goroutines: the calls
// are one at a time, in the order they take the lock.
func serialised(emit func(Event)) func(Event) {
	if emit == nil {
		return func(Event) {}
	}
	var mu sync.Mutex // guards calls of emit: one event at a time
	return func(ev Event) {
		mu.Lock()
		defer mu.Unlock()
		emit(ev)
	}
}

// fallbackMarker is the text sent between a chairman's words and the fallback answer after it
// failed: what happened, why, and whose answer follows.
func fallbackMarker(reason, label string, ranked bool) string {
	whose := "the first member's answer"
	if ranked {
		whose = "the best-ranked member's answer"
	}
	return fmt.Sprintf("\n\n[The chairman stopped before finishing (%s). What follows is %s, %s, in its place.]\n\n", reason, whose, label)
}

// timeoutError is the cause of a member's or a stage's deadline.
type timeoutError struct {
	what string
	d    time.Duration
}

func (e *timeoutError) Error() string { return fmt.Sprintf("%s: timed out after %s", e.what, e.d) }
func (e *timeoutError) Unwrap() error { return context.DeadlineExceeded }

func names(ms []Member) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// best returns the answer to fall back on: the best-ranked one, or the first in stage-1 order.
func (r *Result) best() Answer {
	byName := map[string]Answer{}
	for _, a := range r.Stage1 {
		if a.Error == "" {
			byName[a.Model] = a
		}
	}
	for _, agg := range r.AggregateRankings {
		if a, ok := byName[agg.Model]; ok {
			return a
		}
	}
	for _, a := range r.Stage1 {
		if a.Error == "" {
			return a
		}
	}
	return Answer{}
}

func (r *Result) skip(member string, stage int, reason string) {
	r.Skipped = append(r.Skipped, Skip{Member: member, Stage: stage, Reason: reason})
}

// sortAggregate orders by average position, then by more votes, then by label.
func sortAggregate(a []Aggregate) {
	slices.SortStableFunc(a, func(x, y Aggregate) int {
		if c := cmp.Compare(x.AverageRank, y.AverageRank); c != 0 {
			return c
		}
		if c := cmp.Compare(y.RankingsCount, x.RankingsCount); c != 0 {
			return c
		}
		return compareLabels(x.Label, y.Label)
	})
}
