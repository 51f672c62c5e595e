package router

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/inventory"
	"toolrouter/trajectory"
)

// nativeSystem is the system message of native mode; the tools travel in the request's tools field.
const nativeSystem = "You can call the tools provided to answer the user's query. Call a tool only " +
	"when the query needs what it does; if the query can be answered from general knowledge, answer " +
	"without calling any. Independent calls may be made together. When you have what you need, answer."

// native runs Ollama's own tool-calling loop (seed 000) under the same guardrails as two-phase
// mode: the call budget, dedup, the deadline, failure feedback and trimming. Invalid arguments are
// not repaired in a separate loop: the validator's findings go back as the call's tool message,
// and the model may call again in the next round.
func (x *run) native(ctx context.Context, snap *inventory.Snapshot, tools []*inventory.Tool) error {
	defs, byName := nativeTools(tools)
	x.begin(nativeSystem)

	for round := 1; ; round++ {
		remaining := x.budget - len(x.out.Calls)
		if remaining <= 0 {
			x.out.Stopped = StopMaxToolCalls
			break
		}
		x.emit(Event{Type: EventSelectStart, Round: round})
		msgs, err := x.fit(round, x.priors, func() ([]api.Message, error) { return x.nativeMessages(), nil })
		if err != nil {
			return err
		}
		ts := time.Now()
		rep, err := x.r.complete(ctx, msgs, nil, defs)
		step := x.modelStep(StepNative, round, ts, rep)
		x.addUsage(rep, &x.out.Timings.Select, rep.Duration)
		if err != nil {
			step.Error = err.Error()
			x.addStep(step)
			x.record("native", step, msgs, nil, rep.Text, nil, nil, trajectory.Outcome{Error: err.Error()})
			if expired(ctx) {
				x.deadlineHit(round)
				break
			}
			return x.modelFailure(phase("native tool call", round), err)
		}
		x.out.Rounds = round
		sel := Selection{Reasoning: strings.TrimSpace(rep.Text), UseTool: len(rep.ToolCalls) > 0, Tools: []string{}}
		for _, tc := range rep.ToolCalls {
			sel.Tools = append(sel.Tools, tc.Function.Name)
		}
		step.Detail = strings.Join(sel.Tools, ", ")
		step = x.addStep(step)
		x.record("native", step, msgs, nil, rep.Text, rep.ToolCalls, nil, trajectory.Outcome{})
		x.emit(Event{Type: EventSelectComplete, Round: round, Step: &step, Selection: &sel})
		if round == 1 {
			x.out.Reasoning = sel.Reasoning
		}
		if len(rep.ToolCalls) == 0 {
			x.out.Stopped = StopDone
			if round == 1 {
				x.out.Stopped = StopNoTool
			}
			break
		}
		toolCalls := rep.ToolCalls
		if len(toolCalls) > remaining {
			x.addStep(Step{Kind: StepCapped, Round: round, StartMS: x.since(time.Now()),
				Detail: fmt.Sprintf("%d calls requested, %d left in the budget of %d", len(toolCalls), remaining, x.budget)})
			toolCalls = toolCalls[:remaining]
		}
		x.rounds = append(x.rounds, roundLog{answer: rep.Text, toolCalls: toolCalls})
		calls, callTools := x.nativeCalls(round, toolCalls, byName)
		x.executeRound(ctx, round, calls, callTools)
		if expired(ctx) {
			x.deadlineHit(round)
			break
		}
	}
	return nil
}

// nativeCalls turns the model's tool calls into calls with validated arguments (or errors).
func (x *run) nativeCalls(round int, tcs []api.ToolCall, byName map[string]*inventory.Tool) ([]*Call, []*inventory.Tool) {
	first := len(x.out.Calls) + 1
	calls := make([]*Call, len(tcs))
	tools := make([]*inventory.Tool, len(tcs))
	for i, tc := range tcs {
		c := &Call{Step: first + i, Round: round}
		calls[i] = c
		tool, ok := byName[tc.Function.Name]
		if !ok {
			c.Tool = tc.Function.Name
			c.Error = &Error{Code: CodeUnknownTool, Message: fmt.Sprintf("%q is not an available tool", tc.Function.Name)}
			x.emit(Event{Type: EventToolCallStart, Round: round, Call: copyCall(c)})
			continue
		}
		tools[i], c.Server, c.Tool = tool, tool.Server, tool.Name
		x.emit(Event{Type: EventToolCallStart, Round: round, Call: copyCall(c)})
		raw, _ := json.Marshal(tc.Function.Arguments)
		args, err := x.validArguments(tool, string(raw))
		if err != nil {
			c.Attempts = []Attempt{{Output: string(raw), Feedback: err.Error()}}
			c.Error = &Error{Code: CodeInvalidArguments, Message: err.Error()}
			continue
		}
		c.Arguments = args
	}
	return calls, tools
}

// nativeMessages is the native transcript: base, then per round the model's tool calls and one
// tool message per call with its (possibly trimmed) result.
func (x *run) nativeMessages() []api.Message {
	msgs := append([]api.Message(nil), x.base...)
	for _, rl := range x.rounds {
		if rl.steps == nil {
			continue
		}
		msgs = append(msgs, api.Message{Role: "assistant", Content: rl.answer, ToolCalls: rl.toolCalls})
		for i, s := range rl.steps {
			p := x.priors[s-1]
			text := p.Text
			if p.Failed {
				text = "Error: " + text
			}
			msgs = append(msgs, api.Message{Role: "tool", Content: text, ToolName: rl.toolCalls[i].Function.Name})
		}
	}
	return msgs
}

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
