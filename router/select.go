package router

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"toolrouter/inventory"
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
		return json.Unmarshal(b, &c.Tool)
	}
	type plain selectCall
	return json.Unmarshal(b, (*plain)(c))
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
	for {
		canSearch := tp.view.shortlist != nil && tp.searches < tp.r.set.MaxSearches && remaining-searched >= 2
		sel, text, err := tp.selectOnce(ctx, round, remaining-searched, canSearch)
		if err != nil {
			return plan{searched: searched}, err
		}
		if words := strings.TrimSpace(sel.Search); canSearch && !sel.UseTool && words != "" {
			searched++
			tp.searches++
			v, err := tp.r.shortlist(ctx, tp.snap, tp.ps, words, tp.view.shortlist.Budget)
			if err != nil {
				return plan{searched: searched}, &stageError{stage: "searching tools", err: err}
			}
			tp.j.note(StepSearch, round, fmt.Sprintf("the model searched for %q", words))
			tp.show(v)
			continue
		}
		p := plan{answer: text, reasoning: sel.Reasoning, needsMore: sel.NeedsMore, direct: sel.Direct, unknown: sel.Unknown,
			searched: searched, confidence: sel.Confidence}
		if low, ok := sel.Confidence.lowest(); ok && sel.UseTool && low < tp.r.set.MinConfidence {
			p.lowConfidence = true
			tp.j.note(StepLowConfidence, round, fmt.Sprintf("confidence %.2f is below router.min_confidence %.2f: no call made", low, tp.r.set.MinConfidence))
			return p, nil
		}
		for _, c := range sel.Calls {
			p.calls = append(p.calls, planned{tool: tp.ps.byName[c.Tool], name: c.Tool, task: c.Task})
		}
		tasks(p.calls)
		return p, nil
	}
}

// selectOnce makes one phase-1 call under the format schema of the current view.
func (tp *twoPhase) selectOnce(ctx context.Context, round, remaining int, canSearch bool) (selection, string, error) {
	const stage = "selecting tool"
	msgs, est, err := tp.r.window().fit(tp.j, round, "phase-1 prompt", tokens.Estimate{}, tp.t.selectMessages,
		shortenPriors(tp.t.priors), tp.t.dropHistory, tp.halve)
	if err != nil {
		return selection{}, "", &stageError{stage: stage, err: err}
	}
	format := selectionFormat(tp.view.enum, remaining, canSearch, tp.r.set.Reasoning)
	t0 := time.Now()
	rep, err := tp.r.complete(ctx, msgs, format, nil, est, topLogprobs)
	step := tp.j.modelCall(timingSelect, StepSelect, round, t0, rep)
	var sel selection
	if err == nil {
		if perr := decodeObject(rep.Text, &sel); perr != nil {
			err = fmt.Errorf("model answer is not the selection JSON: %w", perr)
		}
	}
	if err != nil {
		step.Error = err.Error()
		tp.j.step(step)
		tp.j.record("select", step, msgs, format, rep.Text, nil, nil, trajectory.Outcome{SchemaValid: boolPtr(false), Error: err.Error()})
		return selection{}, "", &stageError{stage: stage, err: err}
	}
	sel.check(tp.ps.byName)
	sel.Confidence = confidenceOf(rep.Text, rep.Logprobs, sel, tp.view.names)
	step.Confidence = sel.Confidence
	step.Detail = sel.summary()
	step = tp.j.step(step)
	tp.j.record("select", step, msgs, format, rep.Text, sel, nil, trajectory.Outcome{SchemaValid: boolPtr(true)})
	tp.j.event(Event{Type: EventSelectComplete, Round: round, Step: &step, Selection: sel.public()})
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
// shortlist's escape).
func selectionFormat(enum []byte, remaining int, search bool, reasoning Reasoning) []byte {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	switch reasoning {
	case ReasoningBrief:
		fmt.Fprintf(&b, `"reasoning":{"type":"string","maxLength":%d},`, maxBriefReasoning)
	case ReasoningFull:
		fmt.Fprintf(&b, `"reasoning":{"type":"string","maxLength":%d},`, maxFullReasoning)
	}
	b.WriteString(`"use_tool":{"type":"boolean"},`)
	b.WriteString(`"calls":{"type":"array","maxItems":`)
	b.WriteString(strconv.Itoa(remaining))
	if reasoning == ReasoningFull {
		b.WriteString(`,"items":{"type":"object","properties":{"tool":{"type":"string","enum":`)
		b.Write(enum)
		fmt.Fprintf(&b, `},"task":{"type":"string","maxLength":%d}},"required":["tool","task"]}},`, maxTask)
	} else {
		b.WriteString(`,"items":{"type":"string","enum":`)
		b.Write(enum)
		b.WriteString(`}},`)
	}
	b.WriteString(`"needs_more":{"type":"boolean"},"direct":{"type":"boolean"}`)
	if search {
		// Optional, so llama.cpp's grammar puts it after the required keys whatever its place.
		fmt.Fprintf(&b, `,"search":{"type":"string","maxLength":%d}`, maxSearch)
	}
	b.WriteString(`},`)
	if reasoning == ReasoningNone {
		b.WriteString(`"required":["use_tool","calls","needs_more","direct"]}`)
	} else {
		b.WriteString(`"required":["reasoning","use_tool","calls","needs_more","direct"]}`)
	}
	return []byte(b.String())
}

// decodeObject decodes the one JSON object in a model answer, tolerating surrounding whitespace or a
// markdown code fence (models sometimes add one even under a format constraint).
func decodeObject(text string, v any) error {
	s := strings.TrimSpace(text)
	s = strings.TrimPrefix(s, "```json")
	s = strings.TrimPrefix(s, "```")
	s = strings.TrimSuffix(s, "```")
	dec := json.NewDecoder(strings.NewReader(strings.TrimSpace(s)))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("unexpected data after the JSON object")
	}
	return nil
}
