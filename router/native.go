package router

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/inventory"
	"toolrouter/prompts"
	"toolrouter/trajectory"
)

// nativeSystem is the system message of native mode; the tools travel in the request's tools field.
const nativeSystem = "You can call the tools provided to answer the user's query. Call a tool only " +
	"when the query needs what it does; if the query can be answered from general knowledge, answer " +
	"without calling any. Independent calls may be made together. When you have what you need, answer. " +
	prompts.DataRule

// native plans with Ollama's own tool calling: the tools travel in the request's tools field and
// the model answers with tool_calls, arguments included. Invalid arguments are not repaired in a
// separate loop: the validator's findings go back as the call's tool message, and the model may
// call again in the next round. The loop runs until the model calls no tool.
type native struct {
	r      *Router
	j      *journal
	t      *transcript
	defs   api.Tools
	byName map[string]*inventory.Tool
	// defsText is the tool definitions as JSON: the template renders them into the prompt, so
	// they count against the window.
	defsText string
}

func newNative(r *Router, j *journal, t *transcript, tools []*inventory.Tool) *native {
	defs, byName := nativeTools(tools)
	return &native{r: r, j: j, t: t, defs: defs, byName: byName, defsText: string(marshal(defs))}
}

func (n *native) plan(ctx context.Context, round, _ int) (plan, error) {
	const stage = "native tool call"
	w := n.r.window()
	msgs, est, err := w.fit(n.j, round, "native prompt", n.r.est.Text(w.model, n.defsText),
		func() ([]api.Message, error) { return n.t.nativeMessages(), nil }, shortenPriors(n.t.allPriors()), n.t.dropHistory)
	if err != nil {
		return plan{}, &stageError{stage: stage, err: err}
	}
	t0 := time.Now()
	rep, err := n.r.complete(ctx, msgs, nil, n.defs, est, 0)
	step := n.j.modelCall(timingSelect, StepNative, round, t0, rep)
	if err != nil {
		step.Error = err.Error()
		n.j.step(step)
		n.j.record("native", step, msgs, nil, rep.Text, nil, nil, trajectory.Outcome{Error: err.Error()})
		return plan{}, &stageError{stage: stage, err: err}
	}
	sel := Selection{Reasoning: strings.TrimSpace(rep.Text), UseTool: len(rep.ToolCalls) > 0, Tools: []string{}}
	p := plan{answer: rep.Text, toolCalls: rep.ToolCalls, reasoning: sel.Reasoning, needsMore: true}
	for _, tc := range rep.ToolCalls {
		sel.Tools = append(sel.Tools, tc.Function.Name)
		raw, _ := json.Marshal(tc.Function.Arguments)
		p.calls = append(p.calls, planned{tool: n.byName[tc.Function.Name], name: tc.Function.Name, raw: string(raw)})
	}
	step.Detail = strings.Join(sel.Tools, ", ")
	step = n.j.step(step)
	n.j.record("native", step, msgs, nil, rep.Text, rep.ToolCalls, nil, trajectory.Outcome{})
	n.j.event(Event{Type: EventSelectComplete, Round: round, Step: &step, Selection: &sel})
	return p, nil
}

// arguments validates the arguments the model wrote with its tool call.
func (n *native) arguments(_ context.Context, c *Call, p planned, finished []Call, _ []prompts.Prior) error {
	args, err := validArguments(p.tool, p.raw, finished)
	if err != nil {
		c.Attempts = []Attempt{{Output: p.raw, Feedback: err.Error()}}
		c.Error = &Error{Code: CodeInvalidArguments, Message: err.Error()}
		return nil
	}
	c.Arguments = args
	return nil
}

// offered is nil: native mode offers every tool the identity may use in every round.
func (n *native) offered() map[string]bool { return nil }

// nativeName is a tool's name in the tools field: some chat templates mishandle dots.
func nativeName(t *inventory.Tool) string { return t.Server + "__" + t.Name }

// nativeTools converts the inventory for Ollama's tools field. Parameters come from the derived
// format schema (what Ollama's types can hold); validation still uses the full original schema.
func nativeTools(tools []*inventory.Tool) (api.Tools, map[string]*inventory.Tool) {
	defs := make(api.Tools, 0, len(tools))
	byName := make(map[string]*inventory.Tool, len(tools))
	for _, t := range tools {
		var params api.ToolFunctionParameters
		if err := json.Unmarshal(t.Format, &params); err != nil || params.Type == "" {
			params = api.ToolFunctionParameters{Type: "object"}
		}
		name := nativeName(t)
		byName[name] = t
		defs = append(defs, api.Tool{Type: "function", Function: api.ToolFunction{Name: name, Description: t.Description, Parameters: params}})
	}
	return defs, byName
}
