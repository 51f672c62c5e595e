package router

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"toolrouter/inventory"
	"toolrouter/prompts"
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
	query string
}

// plan runs one phase-1 call. A model error or an unparseable answer is an error.
func (tp *twoPhase) plan(ctx context.Context, round, remaining int) (plan, error) {
	const stage = "selecting tool"
	if tp.r.set.SelectTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, tp.r.set.SelectTimeout)
		defer cancel()
	}
	msgs, est, err := tp.r.window().fit(tp.j, round, "phase-1 prompt", 0, tp.t.selectMessages,
		shortenPriors(tp.t.priors), tp.t.dropHistory)
	if err != nil {
		return plan{}, &stageError{stage: stage, err: err}
	}
	format := selectionFormat(tp.ps.enum, remaining)
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
		return plan{}, &stageError{stage: stage, err: err}
	}
	sel.check(tp.ps.tools)
	step.Detail = sel.summary()
	step = tp.j.step(step)
	tp.j.record("select", step, msgs, format, rep.Text, sel, nil, trajectory.Outcome{SchemaValid: boolPtr(true)})
	tp.j.event(Event{Type: EventSelectComplete, Round: round, Step: &step, Selection: sel.public()})

	p := plan{answer: rep.Text, reasoning: sel.Reasoning, needsMore: sel.NeedsMore, direct: sel.Direct, unknown: sel.Unknown}
	for _, c := range sel.Calls {
		p.calls = append(p.calls, planned{tool: tp.ps.tools[c.Tool], name: c.Tool, task: c.Task})
	}
	return p, nil
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

// promptSet returns the prompts of the snapshot's inventory version for an access policy,
// rendering the phase-1 prompt and the selection enum once per version and policy.
func (r *Router) promptSet(snap *inventory.Snapshot, policy string, tools []*inventory.Tool) (*promptSet, error) {
	r.promptMu.Lock()
	defer r.promptMu.Unlock()
	if ps, ok := r.prompts[policy]; ok && ps.version == snap.Version {
		return ps, nil
	}
	for k, ps := range r.prompts {
		if ps.version != snap.Version {
			delete(r.prompts, k)
		}
	}
	text, err := prompts.Select(promptServers(snap, tools), false)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]*inventory.Tool, len(tools))
	enum := make([]string, 0, len(tools)+1)
	for _, t := range tools {
		byName[t.Qualified] = t
		enum = append(enum, t.Qualified)
	}
	enum = append(enum, noneTool)
	b, _ := json.Marshal(enum)
	ps := &promptSet{version: snap.Version, text: text, enum: b, tools: byName, args: map[string]string{}}
	if r.prompts == nil {
		r.prompts = map[string]*promptSet{}
	}
	r.prompts[policy] = ps
	return ps, nil
}

// selectionFormat is the phase-1 `format` schema: at most `remaining` calls, each an enum of the
// qualified tool names. Its keys are written in generation order (reasoning first, so the decision
// follows it): Ollama's grammar keeps the order of the schema text, which encoding/json would sort.
func selectionFormat(enum []byte, remaining int) []byte {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	b.WriteString(`"reasoning":{"type":"string"},`)
	b.WriteString(`"use_tool":{"type":"boolean"},`)
	b.WriteString(`"calls":{"type":"array","maxItems":`)
	b.WriteString(strconv.Itoa(remaining))
	b.WriteString(`,"items":{"type":"object","properties":{"tool":{"type":"string","enum":`)
	b.Write(enum)
	b.WriteString(`},"task":{"type":"string"}},"required":["tool","task"]}},`)
	b.WriteString(`"needs_more":{"type":"boolean"},"direct":{"type":"boolean"}},`)
	b.WriteString(`"required":["reasoning","use_tool","calls","needs_more","direct"]}`)
	return []byte(b.String())
}

// promptServers groups the available tools by server for the prompt.
func promptServers(snap *inventory.Snapshot, tools []*inventory.Tool) []prompts.Server {
	var out []prompts.Server
	for _, s := range snap.Servers {
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
