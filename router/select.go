package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"toolrouter/inventory"
	"toolrouter/prefill"
	"toolrouter/tokens"
	"toolrouter/trajectory"
)

// noneTool is the selection enum's "no tool" value.
const noneTool = "none"

// selection is the parsed phase-1 answer.
type selection struct {
	Reasoning string       `json:"reasoning"`
	UseTool   bool         `json:"use_tool"`
	Calls     []selectCall `json:"calls"`
	// Tool is the single-call form ({"tool": "…"}) a model may answer with despite the schema.
	Tool      string `json:"tool"`
	NeedsMore bool   `json:"needs_more"`
	Direct    bool   `json:"direct"`
	// Search asks for other tools than a shortlist shows.
	Search string `json:"search,omitempty"`
	// Unknown lists tool names the model chose that are not available; those calls are dropped.
	Unknown []string `json:"-"`
	// Confidence is read from the answer's logprobs (nil without them).
	Confidence *Confidence `json:"-"`
}

type selectCall struct {
	Tool string `json:"tool"`
	Task string `json:"task"`
}

// UnmarshalJSON takes a call as the tool's name ("none" and "brief" reasoning) or as an object
// with tool and task ("full").
func (c *selectCall) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		*c = selectCall{}
		if s, ok := unescapedString(b); ok {
			c.Tool = s
			return nil
		}
		return json.Unmarshal(b, &c.Tool)
	}
	type plain selectCall
	return json.Unmarshal(b, (*plain)(c))
}

// unescapedString is the text of a JSON string literal that needs no decoding: quoted, with no
// escape, quote or control character inside and valid UTF-8, it is its own text, as json.Unmarshal
// decodes it. ok is false for any other input.
func unescapedString(b []byte) (string, bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", false
	}
	inner := b[1 : len(b)-1]
	for _, c := range inner {
		if c < 0x20 || c == '"' || c == '\\' {
			return "", false
		}
	}
	if !utf8.Valid(inner) {
		return "", false
	}
	return string(inner), true
}

// twoPhase plans a round with a phase-1 selection under a format schema listing the tools, and
// writes each call's arguments in phase 2 (arguments.go).
type twoPhase struct {
	r     *Router
	j     *journal
	t     *transcript
	ps    *promptSet
	snap  *inventory.Snapshot
	query string
	// view is what phase 1 shows: the whole inventory, or a shortlist for the query.
	view     *view
	searches int // searches made so far in the request
	// firstOffered are the tools round 1 was offered: every shortlist it was shown (nil while a
	// whole-inventory view is shown).
	firstOffered map[string]bool
	allOffered   bool // round 1 showed the whole inventory
	// planned is room for a round's calls: a round's plan is done with before the next.
	planned [4]planned
	// named is the tool the request named (Request.Tool): round 1 calls it without phase 1.
	named *inventory.Tool
	// least is the fewest calls phase 1 may choose: 1 makes "no tool" no answer (a caller's
	// tool_choice "required").
	least int
}

// show makes v the phase-1 view: the transcript's system prompt and, for a shortlist, a trace step
// and an entry in the outcome.
func (tp *twoPhase) show(v *view) {
	tp.view = v
	tp.t.base[0].Content = v.text
	if v.shortlist == nil {
		return
	}
	sl := *v.shortlist
	tp.j.update(func(o *Outcome) { o.Shortlists = append(o.Shortlists, sl) })
	tp.j.note(StepShortlist, 0, sl.describe())
}

// plan runs phase 1: one selection call, and when the model asks to search a shortlist, one more
// retrieval with its words and a selection again. Each search takes one unit of the call budget.
// A model error or an unparseable answer is an error.
func (tp *twoPhase) plan(ctx context.Context, round, remaining int) (plan, error) {
	if tp.r.set.SelectTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, tp.r.set.SelectTimeout)
		defer cancel()
	}
	searched := 0
	if round == 1 {
		tp.offer(tp.view)
	}
	if round == 1 && tp.named != nil {
		return tp.namedPlan(), nil
	}
	for {
		search := tp.searchRule(round, remaining-searched)
		sel, text, err := tp.selectOnce(ctx, round, remaining-searched, search)
		if err != nil {
			return plan{searched: searched}, err
		}
		if words := strings.TrimSpace(sel.Search); search != searchNone && !sel.UseTool && words != "" {
			searched++
			tp.searches++
			v, err := tp.r.shortlist(ctx, tp.snap, tp.ps, words, tp.view.shortlist.Budget)
			if err != nil {
				return plan{searched: searched}, &stageError{stage: "searching tools", err: err}
			}
			tp.j.note(StepSearch, round, fmt.Sprintf("the model searched for %q", words))
			tp.show(v)
			if round == 1 {
				tp.offer(v)
			}
			continue
		}
		p := plan{answer: text, reasoning: sel.Reasoning, needsMore: sel.NeedsMore, direct: sel.Direct, unknown: sel.Unknown,
			searched: searched, confidence: sel.Confidence}
		if low, ok := sel.Confidence.lowest(); ok && sel.UseTool && low < tp.r.set.MinConfidence {
			p.lowConfidence = true
			tp.j.note(StepLowConfidence, round, fmt.Sprintf("confidence %.2f is below router.min_confidence %.2f: no call made", low, tp.r.set.MinConfidence))
			return p, nil
		}
		p.calls = tp.planned[:0]
		for _, c := range sel.Calls {
			p.calls = append(p.calls, planned{tool: tp.ps.byName[c.Tool], name: c.Tool, task: c.Task})
		}
		tasks(p.calls)
		return p, nil
	}
}

// searchRule is what phase 1's answer may say of a search beyond the shortlist.
type searchRule uint8

const (
	searchNone searchRule = iota // no search: the whole inventory is shown, or no search is left
	searchMay                    // "search" words instead of calls, or none
	// searchMust: no calls only with search words. Round 1's first selection over a weak
	// shortlist (router.Settings.SearchWhenWeak) must search before it answers "no tool".
	searchMust
)

// searchRule is the search rule of the next selection of round, with remaining calls left.
func (tp *twoPhase) searchRule(round, remaining int) searchRule {
	sl := tp.view.shortlist
	if sl == nil || tp.searches >= tp.r.set.MaxSearches || remaining < 2 || round > 1 && !tp.r.set.ResultsMayWiden {
		return searchNone
	}
	if round == 1 && tp.searches == 0 && sl.Weak && tp.r.set.SearchWhenWeak && tp.least == 0 {
		return searchMust
	}
	return searchMay
}

// namedPlan is round 1's plan for a request that named its tool: that call, and as the answer the
// transcript keeps, the selection phase 1 would have written for it under router.reasoning.
func (tp *twoPhase) namedPlan() plan {
	const why = "the request named the tool"
	name := tp.named.Qualified
	var call any = name
	if tp.r.set.Reasoning == ReasoningFull {
		call = selectCall{Tool: name, Task: why}
	}
	sel := struct {
		Reasoning string `json:"reasoning,omitempty"`
		UseTool   bool   `json:"use_tool"`
		Calls     []any  `json:"calls"`
		NeedsMore bool   `json:"needs_more"`
		Direct    bool   `json:"direct"`
	}{UseTool: true, Calls: []any{call}}
	if tp.r.set.Reasoning != ReasoningNone {
		sel.Reasoning = why
	}
	answer, _ := json.Marshal(sel)
	return plan{answer: string(answer), reasoning: why, calls: append(tp.planned[:0], planned{tool: tp.named, name: name})}
}

// offer adds what v shows to the tools round 1 was offered.
func (tp *twoPhase) offer(v *view) {
	if v.shortlist == nil {
		tp.allOffered = true
		return
	}
	if tp.firstOffered == nil {
		tp.firstOffered = make(map[string]bool, len(v.names))
	}
	for _, n := range v.names {
		tp.firstOffered[n] = true
	}
}

// offered is what round 1 offered: nil when it showed the whole inventory.
func (tp *twoPhase) offered() map[string]bool {
	if tp.allOffered {
		return nil
	}
	return tp.firstOffered
}

// selectOnce makes one phase-1 call under the format schema of the current view.
func (tp *twoPhase) selectOnce(ctx context.Context, round, remaining int, search searchRule) (selection, string, error) {
	const stage = "selecting tool"
	msgs, est, err := tp.window().fit(tp.j, round, "phase-1 prompt", tokens.Estimate{}, tp.t.selectMessages,
		shortenPriors(tp.t.allPriors()), tp.t.dropHistory, tp.halve)
	if err != nil {
		return selection{}, "", &stageError{stage: stage, err: err}
	}
	if search == searchMust {
		tp.j.note(StepWeakShortlist, round, fmt.Sprintf("the shortlist for %q is weak (few of its words are in any tool's text, and few are English): phase 1 searches before it may answer no tool", tp.view.shortlist.Query))
	}
	format := tp.format(remaining, search)
	t0 := time.Now()
	var (
		rep       reply
		conf      *Confidence
		continued bool
	)
	if lead, ok := tp.r.continuing(ctx); ok {
		rep, conf, err = tp.selectContinued(ctx, msgs, est, lead, remaining, search)
		continued = err == nil
		if errors.Is(err, prefill.ErrNotContinued) {
			tp.r.stopPrefill(err)
		}
		if errors.Is(err, prefill.ErrNotContinued) && ctx.Err() == nil {
			var whole reply
			whole, err = tp.r.complete(ctx, msgs, format, nil, est, topLogprobs)
			rep = afterContinuation(rep, whole)
		}
	} else {
		rep, err = tp.r.complete(ctx, msgs, format, nil, est, topLogprobs)
	}
	step := tp.j.modelCall(timingSelect, StepSelect, round, t0, rep)
	var sel selection
	if err == nil {
		if perr := decodeSelection(rep.Text, &sel); perr != nil {
			err = fmt.Errorf("model answer is not the selection JSON: %w", perr)
		}
	}
	if err != nil {
		step.Error = err.Error()
		tp.j.step(step)
		if tp.j.recording() {
			tp.j.record("select", step, msgs, format, rep.Text, nil, nil, trajectory.Outcome{SchemaValid: boolPtr(false), Error: err.Error()})
		}
		return selection{}, "", &stageError{stage: stage, err: err}
	}
	sel.check(tp.ps.byName)
	if continued {
		sel.Confidence = conf
	} else {
		sel.Confidence = confidenceOf(rep.Text, rep.Logprobs, sel, tp.view.names)
	}
	step.Confidence = sel.Confidence
	step.Detail = sel.summary()
	step = tp.j.step(step)
	if tp.j.recording() {
		tp.j.record("select", step, msgs, format, rep.Text, sel, nil, trajectory.Outcome{SchemaValid: boolPtr(true)})
	}
	if tp.j.listening() {
		ev := step
		tp.j.event(Event{Type: EventSelectComplete, Round: round, Step: &ev, Selection: sel.public()})
	}
	return sel, rep.Text, nil
}

// tasks tells apart the calls of a round that name the same tool without a task (reasoning "none"
// and "brief" write none): phase 2 sees the query either way, and a note of which call it writes
// keeps two calls of one tool from getting the same arguments.
func tasks(calls []planned) {
	count := map[string]int{}
	for _, c := range calls {
		count[c.name]++
	}
	seen := map[string]int{}
	for i := range calls {
		c := &calls[i]
		if n := count[c.name]; n > 1 && c.task == "" {
			seen[c.name]++
			c.task = fmt.Sprintf("call %d of %d to %s in this step; the other calls cover the other parts of the query", seen[c.name], n, c.name)
		}
	}
}

// check drops calls of unknown tools (recording them) and normalises "no tool" answers.
func (s *selection) check(tools map[string]*inventory.Tool) {
	if len(s.Calls) == 0 && s.Tool != "" {
		s.Calls = []selectCall{{Tool: s.Tool}}
	}
	calls := s.Calls[:0]
	for _, c := range s.Calls {
		c.Tool = strings.TrimSpace(c.Tool)
		switch {
		case c.Tool == "" || c.Tool == noneTool:
		case tools[c.Tool] == nil:
			s.Unknown = append(s.Unknown, c.Tool)
		default:
			calls = append(calls, c)
		}
	}
	s.Calls = calls
	if !s.UseTool {
		s.Calls = nil
	}
	s.UseTool = len(s.Calls) > 0
}

func (s selection) summary() string {
	if !s.UseTool && s.Search != "" {
		return "search: " + s.Search
	}
	if !s.UseTool {
		return "no tool"
	}
	names := make([]string, len(s.Calls))
	for i, c := range s.Calls {
		names[i] = c.Tool
	}
	d := strings.Join(names, ", ")
	if s.NeedsMore {
		d += "; needs more"
	}
	if len(s.Unknown) > 0 {
		d += "; unknown: " + strings.Join(s.Unknown, ", ")
	}
	return d
}

func (s selection) public() *Selection {
	p := &Selection{Reasoning: s.Reasoning, UseTool: s.UseTool, NeedsMore: s.NeedsMore, Direct: s.Direct, Tools: []string{},
		Confidence: s.Confidence}
	for _, c := range s.Calls {
		p.Tools = append(p.Tools, c.Tool)
	}
	return p
}

// Bounds of the strings phase 1 may write, in characters: every string of a format schema is
// bounded, so no answer runs on to num_predict.
const (
	maxBriefReasoning = 160 // router.reasoning "brief": one short sentence
	maxFullReasoning  = 600 // router.reasoning "full"
	maxTask           = 200 // a call's task ("full" only)
	maxSearch         = 100 // the words of a search beyond the shortlist
)

// selectionFormat is the phase-1 `format` schema: at most `remaining` calls, each naming a tool of
// the enum of qualified names. Its keys are written in generation order: Ollama's grammar keeps
// the order of the schema text, which encoding/json would sort. With reasoning "none" the decision
// comes first and each call is just the tool's name, the fewest tokens that carry the decision;
// "brief" adds one bounded sentence before it; "full" adds a longer reasoning and each call's task
// (today's shape). With search, the answer may carry "search" words instead of calls (a
// shortlist's escape); when it must (searchMust), "search" is required and not empty, and it is
// the only way to answer "no tool".
func selectionFormat(enum []byte, least, remaining int, search searchRule, reasoning Reasoning) []byte {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	switch reasoning {
	case ReasoningBrief:
		fmt.Fprintf(&b, `"reasoning":{"type":"string","maxLength":%d},`, maxBriefReasoning)
	case ReasoningFull:
		fmt.Fprintf(&b, `"reasoning":{"type":"string","maxLength":%d},`, maxFullReasoning)
	}
	if least > 0 {
		b.WriteString(`"use_tool":{"type":"boolean","enum":[true]},`)
	} else {
		b.WriteString(`"use_tool":{"type":"boolean"},`)
	}
	b.WriteString(`"calls":`)
	callsFormat(&b, enum, least, remaining, reasoning)
	b.WriteString(`,`)
	b.WriteString(`"needs_more":{"type":"boolean"},"direct":{"type":"boolean"}`)
	if search != searchNone {
		// Optional, so llama.cpp's grammar puts it after the required keys whatever its place;
		// required (and last in the list) when the model must search.
		b.WriteString(`,"search":`)
		b.Write(searchFormat(search))
	}
	b.WriteString(`},`)
	if reasoning == ReasoningNone {
		b.WriteString(`"required":["use_tool","calls","needs_more","direct"`)
	} else {
		b.WriteString(`"required":["reasoning","use_tool","calls","needs_more","direct"`)
	}
	if search == searchMust {
		b.WriteString(`,"search"`)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// callsFormat writes the schema of phase 1's list of calls: from least to most of them, each
// naming a tool of the enum (reasoning "full": an object with the tool and its task).
func callsFormat(b *strings.Builder, enum []byte, least, most int, reasoning Reasoning) {
	b.WriteString(`{"type":"array",`)
	if least > 0 {
		fmt.Fprintf(b, `"minItems":%d,`, least)
	}
	fmt.Fprintf(b, `"maxItems":%d`, most)
	if reasoning == ReasoningFull {
		b.WriteString(`,"items":{"type":"object","properties":{"tool":{"type":"string","enum":`)
		b.Write(enum)
		fmt.Fprintf(b, `},"task":{"type":"string","maxLength":%d}},"required":["tool","task"]}}`, maxTask)
	} else {
		b.WriteString(`,"items":{"type":"string","enum":`)
		b.Write(enum)
		b.WriteString(`}}`)
	}
}

// format is the phase-1 format schema of the current view. A whole-inventory view is shared by
// every request of its inventory version and access policy, and so are its schemas.
func (tp *twoPhase) format(remaining int, search searchRule) []byte {
	build := func() []byte {
		return selectionFormat(tp.view.enum, tp.least, remaining, search, tp.r.set.Reasoning)
	}
	if tp.view.own() {
		return build() // a shortlist or a caller's tools are the request's own
	}
	return tp.r.views.format(tp.ps.version, tp.view, formatKey{remaining: remaining, search: search}, build)
}

// window is the model's window for a prompt of the current view: the view's text, which each
// phase-1 prompt (and, with a shared prefix, each phase-2 prompt) opens with, is measured once per
// whole-inventory view.
func (tp *twoPhase) window() window {
	w := tp.r.window()
	if v := tp.view; !v.own() {
		w.known = knownText{text: v.text, raw: tp.r.views.raw(tp.ps.version, v)}
	}
	return w
}

// viewCache keeps what is derived from the whole-inventory views of one inventory version (one
// view per access policy): each view's format schemas and the raw token estimate of its text.
type viewCache struct {
	mu      sync.Mutex // guards version and views
	version uint64
	views   map[*view]*viewDerived
}

type viewDerived struct {
	raw     float64 // tokens.Raw of the view's text
	formats map[formatKey][]byte
}

// formatKey tells a view's format schemas apart: the number of calls left and whether the model
// may search, or (calls) the schema of a continued answer's list of calls alone.
type formatKey struct {
	remaining int
	search    searchRule
	calls     bool
}

// of returns what is derived from v, a view of an inventory version, dropping the views of an
// earlier version. The caller holds c.mu.
func (c *viewCache) of(version uint64, v *view) *viewDerived {
	if c.views == nil || c.version != version {
		c.version, c.views = version, map[*view]*viewDerived{}
	}
	d, ok := c.views[v]
	if !ok {
		d = &viewDerived{raw: tokens.Raw(v.text), formats: map[formatKey][]byte{}}
		c.views[v] = d
	}
	return d
}

// raw returns the raw token estimate of v's text.
func (c *viewCache) raw(version uint64, v *view) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.of(version, v).raw
}

// format returns v's format schema of key, building it on first use. It is shared: it must not
// be changed.
func (c *viewCache) format(version uint64, v *view, key formatKey, build func() []byte) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.of(version, v)
	f, ok := d.formats[key]
	if !ok {
		f = build()
		d.formats[key] = f
	}
	return f
}

// decodeSelection decodes a phase-1 answer into sel as decodeObject does. A plain answer (see
// plainSelection) is read directly; another that is one JSON value and nothing else is decoded
// with json.Unmarshal, which allocates less than a Decoder and decodes it the same way (the
// selection holds no interface, so numbers decode alike); anything else goes to decodeObject, for
// its tolerance and its errors.
func decodeSelection(text string, sel *selection) error {
	if plainSelection(text, sel) {
		return nil
	}
	decoded := new(selection) // encoding/json needs it on the heap; sel may stay off it
	err := json.Unmarshal([]byte(trimAnswer(text)), decoded)
	if err != nil {
		*decoded = selection{}
		err = decodeObject(text, decoded)
	}
	*sel = *decoded
	return err
}

// trimAnswer is a model answer without surrounding whitespace or a markdown code fence.
func trimAnswer(text string) string {
	s := strings.TrimSpace(text)
	s = strings.TrimPrefix(s, "```json")
	s = strings.TrimPrefix(s, "```")
	s = strings.TrimSuffix(s, "```")
	return strings.TrimSpace(s)
}

// decodeObject decodes the one JSON object in a model answer, tolerating surrounding whitespace or a
// markdown code fence (models sometimes add one even under a format constraint).
func decodeObject(text string, v any) error {
	dec := json.NewDecoder(strings.NewReader(trimAnswer(text)))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("unexpected data after the JSON object")
	}
	return nil
}
