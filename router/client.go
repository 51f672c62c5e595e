package router

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"toolrouter/access"
	"toolrouter/inventory"
	"toolrouter/prompts"
)

// Plan runs the two phases over tools a caller brings with its request (a chat completion's own
// tools, built with inventory.ClientTool) and executes nothing: phase 1 chooses among them under
// an enum of their names ("no tool" included unless the choice requires a call), phase 2 writes
// each chosen call's arguments under the function's schema, validated and repaired as an
// inventory call's are. The caller runs the calls and may come back with their results
// (ClientRequest.Rounds), which phase 1 then reads before it chooses again.

// ToolChoice is how a caller constrains phase 1 over its own tools; the zero value lets the model
// choose, "no tool" included (OpenAI's tool_choice "auto").
type ToolChoice struct {
	// Required leaves "no tool" out: at least one call is chosen.
	Required bool
	// Name, when set, is the one function called: phase 1 is skipped.
	Name string
}

// ClientCall is a call of an earlier round of the conversation and the caller's result for it.
type ClientCall struct {
	Name      string
	Arguments map[string]any
	Result    string
}

// ClientRequest is one Plan: the model to plan with, the caller's tools, the conversation and
// the caller's choice.
type ClientRequest struct {
	// Chat and Model are the model the phases run on; a nil Chat is the router's own model.
	// Key names them among requests (the model's name as the caller gave it): the router keeps
	// what it learns of each (its template, its window) under it. Renders says Chat renders a
	// conversation through the model's template (an Ollama server: see Settings.Renders).
	Chat    Chatter
	Model   string
	Key     string
	Renders bool
	// Tools are the caller's functions (inventory.ClientTool), named as the caller names them.
	Tools   []*inventory.Tool
	History []Message
	Query   string
	// Rounds are the calls made since Query, round by round, with the caller's results.
	Rounds [][]ClientCall
	Choice ToolChoice
	// MaxCalls bounds the calls chosen (0: the router's max_tool_calls; 1: parallel calls off).
	MaxCalls int
	Identity access.Identity
	// Deadline lowers the configured request deadline (0: the configured one).
	Deadline time.Duration
}

// NoToolName is phase 1's name for choosing no tool: a caller's function cannot have it.
const NoToolName = noneTool

// maxClientModels bounds the models Plan keeps a router for; past it they are all forgotten.
const maxClientModels = 32

// clientRouters are the routers Plan runs, by ClientRequest.Key.
type clientRouters struct {
	mu sync.Mutex // guards m
	m  map[string]*Router
}

// forClient is the router that plans for req's model: the router's settings on that model, with
// nothing to run (no inventory, tool caller, access, approvals, learner or ranker) and no
// confidence floor (a caller's tool_choice decides whether a call is made, not the router).
func (r *Router) forClient(req ClientRequest) *Router {
	chat, model, renders, key := req.Chat, req.Model, req.Renders, req.Key
	if chat == nil {
		chat, model, renders, key = r.chat, r.set.Model, r.set.Renders, "\x00router"
	}
	r.clients.mu.Lock()
	defer r.clients.mu.Unlock()
	if cr, ok := r.clients.m[key]; ok {
		return cr
	}
	if len(r.clients.m) >= maxClientModels || r.clients.m == nil {
		r.clients.m = map[string]*Router{}
	}
	set := r.set
	set.Model, set.Renders, set.MinConfidence = model, renders, 0
	set.Access, set.Approvals, set.Learner, set.Ranker, set.Pinned, set.OnHeld = nil, nil, nil, nil, nil, nil
	set.Estimator = r.est
	cr := New(chat, nil, nil, set, r.log)
	r.clients.m[key] = cr
	return cr
}

// Plan chooses calls among req.Tools and writes their arguments; it runs none. The outcome's
// calls hold the arguments (each validated against its function's schema) or, for a call whose
// arguments stayed invalid after the repairs, its Error; Stopped is StopNoTool when no call was
// chosen. A model failure is an error only under OnModelFailure Fail, as Route's is; else the
// outcome is degraded. A Choice.Name not among the tools wraps ErrUnknownTool.
func (r *Router) Plan(ctx context.Context, req ClientRequest) (*Outcome, error) {
	cr := r.forClient(req)
	return cr.plan(ctx, req)
}

func (r *Router) plan(ctx context.Context, req ClientRequest) (*Outcome, error) {
	deadline := r.set.Deadline
	if req.Deadline > 0 && req.Deadline < deadline {
		deadline = req.Deadline
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < deadline {
		deadline = time.Until(dl)
	}
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	budget := r.set.MaxToolCalls
	if req.MaxCalls > 0 {
		budget = req.MaxCalls
	}
	ps := clientSet(req.Tools)
	var named *inventory.Tool
	if req.Choice.Name != "" {
		if named = ps.byName[req.Choice.Name]; named == nil {
			return nil, fmt.Errorf("%w %q", ErrUnknownTool, req.Choice.Name)
		}
	}
	x := &run{r: r, j: newJournal(r.set.Model, req.Identity.String(), r.set.Recorder, r.set.Redactor, nil), budget: budget,
		deadline: deadline.Round(time.Millisecond), id: req.Identity}
	x.j.query = req.Query
	r.learnContextLength(ctx)
	least := 0
	if req.Choice.Required {
		least = 1
	}
	v := r.clientView(ps, least == 0)
	x.t = &transcript{}
	x.t.start(v.text, req.History, req.Query)
	var finished []Call
	for _, round := range req.Rounds {
		calls := make([]Call, len(round))
		names := make([]string, len(round))
		for i, c := range round {
			calls[i] = Call{Step: len(finished) + i + 1, Tool: c.Name, Arguments: c.Arguments, Result: &Result{Text: c.Result}}
			names[i] = c.Name
		}
		x.t.answered(earlierSelection(names), nil)
		x.t.results(calls, budget)
		finished = append(finished, calls...)
	}
	tp := &twoPhase{r: r, j: x.j, t: x.t, ps: ps, query: req.Query, named: named, least: least, view: v}
	x.p = tp
	round := len(req.Rounds) + 1
	var p plan
	var err error
	if named != nil {
		p = tp.namedPlan()
	} else {
		p, err = tp.plan(ctx, round, budget)
	}
	if err != nil {
		if expired(ctx) {
			x.deadlineHit(round)
		} else if err = x.modelFailure(round, err); err != nil {
			return x.j.finish(), err
		}
		return x.j.finish(), nil
	}
	x.j.update(func(o *Outcome) {
		o.Rounds, o.Reasoning, o.Confidence = 1, p.reasoning, p.confidence
		if len(p.calls) == 0 && len(p.unknown) > 0 {
			o.Degraded = fmt.Sprintf("model selected %q, which is not one of the request's tools", p.unknown[0])
			o.DegradedReason = DegradedUnknownTool
		}
	})
	if len(p.calls) == 0 {
		x.stop(StopNoTool)
		return x.j.finish(), nil
	}
	if len(p.calls) > budget {
		x.j.note(StepCapped, round, fmt.Sprintf("%d calls selected, %d allowed", len(p.calls), budget))
		p.calls = p.calls[:budget]
	}
	calls := make([]Call, len(p.calls))
	for i, pc := range p.calls {
		calls[i] = Call{Step: len(finished) + 1 + i, Round: round, Task: pc.task, Tool: pc.name}
	}
	priors := x.t.allPriors()
	errs := make([]error, len(calls))
	x.each(len(calls), func(i int) { errs[i] = tp.arguments(ctx, &calls[i], p.calls[i], finished, priors) })
	for i := range calls {
		x.j.addCall(calls[i])
	}
	for _, e := range errs {
		if e == nil {
			continue
		}
		if expired(ctx) {
			x.deadlineHit(round)
			return x.j.finish(), nil
		}
		if err := x.modelFailure(round, &stageError{stage: "writing arguments", err: e}); err != nil {
			return x.j.finish(), err
		}
		return x.j.finish(), nil
	}
	x.stop(StopDone)
	return x.j.finish(), nil
}

// clientSet is the prompt set of a caller's tools: the request's own, never cached.
func clientSet(tools []*inventory.Tool) *promptSet {
	byName := make(map[string]*inventory.Tool, len(tools))
	for _, t := range tools {
		byName[t.Qualified] = t
	}
	return &promptSet{tools: tools, byName: byName, all: true, args: map[string]knownPrefix{}}
}

// clientView is phase 1's view of a caller's tools: one group, in the caller's order, and the
// enum of their names with "no tool" when withNone.
func (r *Router) clientView(ps *promptSet, withNone bool) *view {
	v := &view{tools: ps.byName, client: true}
	heading, _ := prompts.SelectServerText(prompts.Server{Name: "request", Purpose: "the functions offered with this request"})
	g := prompts.SelectGroup{Heading: heading}
	for _, t := range ps.tools {
		text, _ := prompts.SelectToolText(prompts.ToolOf(t))
		g.Tools = append(g.Tools, text)
		v.names = append(v.names, t.Qualified)
	}
	v.text = prompts.SelectFrom(prompts.SelectStyle{Reasoning: string(r.set.Reasoning)}, []prompts.SelectGroup{g})
	if withNone {
		v.names = append(v.names, noneTool)
	}
	v.enum, _ = json.Marshal(v.names)
	return v
}

// earlierSelection is the selection phase 1 would have written for calls the caller reports: the
// transcript shows it before their results.
func earlierSelection(names []string) string {
	b, _ := json.Marshal(struct {
		UseTool   bool     `json:"use_tool"`
		Calls     []string `json:"calls"`
		NeedsMore bool     `json:"needs_more"`
		Direct    bool     `json:"direct"`
	}{UseTool: true, Calls: names})
	return string(b)
}
