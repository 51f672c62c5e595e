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
}

type selectCall struct {
	Tool string `json:"tool"`
	Task string `json:"task"`
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
		p := plan{answer: text, reasoning: sel.Reasoning, needsMore: sel.NeedsMore, direct: sel.Direct, unknown: sel.Unknown, searched: searched}
		for _, c := range sel.Calls {
			p.calls = append(p.calls, planned{tool: tp.ps.byName[c.Tool], name: c.Tool, task: c.Task})
		}
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
	format := selectionFormat(tp.view.enum, remaining, canSearch)
	t0 := time.Now()
	rep, err := tp.r.complete(ctx, msgs, format, nil, est)
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
	step.Detail = sel.summary()
	step = tp.j.step(step)
	tp.j.record("select", step, msgs, format, rep.Text, sel, nil, trajectory.Outcome{SchemaValid: boolPtr(true)})
	tp.j.event(Event{Type: EventSelectComplete, Round: round, Step: &step, Selection: sel.public()})
	return sel, rep.Text, nil
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
	p := &Selection{Reasoning: s.Reasoning, UseTool: s.UseTool, NeedsMore: s.NeedsMore, Direct: s.Direct, Tools: []string{}}
	for _, c := range s.Calls {
		p.Tools = append(p.Tools, c.Tool)
	}
	return p
}

// selectionFormat is the phase-1 `format` schema: at most `remaining` calls, each an enum of the
// qualified tool names. Its keys are written in generation order (reasoning first, so the decision
// follows it): Ollama's grammar keeps the order of the schema text, which encoding/json would sort.
// With search, the answer may carry "search" words instead of calls (a shortlist's escape).
func selectionFormat(enum []byte, remaining int, search bool) []byte {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	b.WriteString(`"reasoning":{"type":"string"},`)
	b.WriteString(`"use_tool":{"type":"boolean"},`)
	b.WriteString(`"calls":{"type":"array","maxItems":`)
	b.WriteString(strconv.Itoa(remaining))
	b.WriteString(`,"items":{"type":"object","properties":{"tool":{"type":"string","enum":`)
	b.Write(enum)
	b.WriteString(`},"task":{"type":"string"}},"required":["tool","task"]}},`)
	if search {
		b.WriteString(`"search":{"type":"string"},`)
	}
	b.WriteString(`"needs_more":{"type":"boolean"},"direct":{"type":"boolean"}},`)
	b.WriteString(`"required":["reasoning","use_tool","calls","needs_more","direct"]}`)
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
