package answer

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ollama/ollama/api"

	"toolrouter/access"
	"toolrouter/inventory"
	"toolrouter/provider"
	"toolrouter/router"
	"toolrouter/schema"
)

// This file answers a chat completion that brings its own tools: the router's two phases choose
// among them and write each call's arguments under the function's schema (router.Plan), and the
// answer is the calls, for the client to run; nothing runs here. With no call chosen (or
// tool_choice "none") the named model answers in text, the tool results of the conversation
// included.

// ModeClientTools: the client's own tools went through the routing's two phases; the answer is
// their calls, or the model's text when none was chosen.
const ModeClientTools = "client_tools"

// ClientPlanner runs the routing's phases over a client's tools; *router.Router satisfies it.
type ClientPlanner interface {
	Plan(ctx context.Context, req router.ClientRequest) (*router.Outcome, error)
}

// ModelResolver says which client and model a completion's model name stands for, and whether it
// speaks Ollama's protocol, so the phases run on the model the request names;
// *ProviderCompleter satisfies it.
type ModelResolver interface {
	Resolve(name string) (client provider.Chatter, model string, ollama bool, err error)
}

// ErrNoValidCall: tool_choice required a call, and the model wrote none whose arguments
// validate (after the repairs).
var ErrNoValidCall = errors.New("the model wrote no valid tool call")

// Resolve names the client and the model a completion's model name stands for (see resolve).
func (c *ProviderCompleter) Resolve(name string) (provider.Chatter, string, bool, error) {
	p, model := c.resolve(name)
	pr := c.o.Providers[p]
	if pr.Client == nil {
		return nil, "", false, fmt.Errorf("model %s: %w: no provider %q", name, ErrUnknownModel, p)
	}
	return pr.Client, model, pr.Ollama, nil
}

// schemaBounds bounds a client function's parameters: Chat.SchemaBounds, else the servers'
// defaults (servers.NAME.max_schema_bytes and max_schema_depth).
func (c *Chat) schemaBounds() schema.Bounds {
	if c.SchemaBounds != (schema.Bounds{}) {
		return c.SchemaBounds
	}
	d := inventory.DefaultServerConfig()
	return schema.Bounds{MaxBytes: d.MaxSchemaBytes, MaxDepth: d.MaxSchemaDepth}
}

// ClientTools compiles a request's tools, in order: a function whose parameters are out of
// bounds or do not compile is a 400 naming it; so is a name given twice, and a tool_choice naming
// a function the request does not have. schemas, when not nil, are the parameters as the client
// sent them (by index; nil: Tools' own, as Ollama's types keep them).
func (c *Chat) clientTools(in ChatRequest) ([]*inventory.Tool, error) {
	out := make([]*inventory.Tool, 0, len(in.Tools))
	seen := map[string]bool{}
	for i, t := range in.Tools {
		param := fmt.Sprintf("tools[%d].function.parameters", i)
		name := t.Function.Name
		switch {
		case seen[name]:
			return nil, ParamError("bad_tools", fmt.Sprintf("tools[%d].function.name", i), fmt.Sprintf("tools[%d]: the function %q is given twice", i, name))
		case name == router.NoToolName:
			return nil, ParamError("bad_tools", fmt.Sprintf("tools[%d].function.name", i),
				fmt.Sprintf("tools[%d]: a function named %q cannot be told from choosing no function; rename it", i, name))
		}
		seen[name] = true
		var raw json.RawMessage
		if in.Schemas != nil {
			raw = in.Schemas[i] // nil: none sent, an object with any properties
		} else {
			raw = ollamaParameters(t.Function.Parameters)
		}
		tool, err := inventory.ClientTool(name, t.Function.Description, raw, c.schemaBounds())
		if err != nil {
			return nil, ParamError("bad_tool_schema", param, fmt.Sprintf("tools[%d]: the parameters of function %q cannot be used: %v", i, name, err))
		}
		out = append(out, tool)
	}
	if in.ToolName != "" && !seen[in.ToolName] {
		return nil, ParamError("unknown_tool_choice", "tool_choice", fmt.Sprintf("tool_choice names the function %q, which is not among the request's tools", in.ToolName))
	}
	return out, nil
}

// ollamaParameters is a schema of Ollama's type as JSON, without the keys it writes empty (null,
// or a type of "" when none was given).
func ollamaParameters(p api.ToolFunctionParameters) json.RawMessage {
	b, err := json.Marshal(p)
	var m map[string]any
	if err != nil || json.Unmarshal(b, &m) != nil {
		return nil
	}
	for k, v := range m {
		if v == nil || v == "" {
			delete(m, k)
		}
	}
	b, _ = json.Marshal(m)
	return b
}

// runClientTools answers in, which has tools, into res.
func (c *Chat) runClientTools(ctx context.Context, res *ChatResult, in ChatRequest, id access.Identity, onDelta func(Delta)) error {
	res.Trace.Mode = ModeClientTools
	tools, err := c.clientTools(in)
	if err != nil {
		return err
	}
	text := CompletionRequest{Model: in.Model, Messages: in.Messages, Options: in.Options, Format: in.Format, Think: in.Think, KeepAlive: in.KeepAlive}
	if in.NoTools {
		return c.complete(ctx, res, text, onDelta)
	}
	planner, ok := c.Router.(ClientPlanner)
	if !ok {
		return fmt.Errorf("%w: the router cannot plan over the client's tools", ErrNoCompleter)
	}
	req := router.ClientRequest{Key: in.Model, Tools: tools, Identity: id,
		Choice: router.ToolChoice{Required: in.RequireTool, Name: in.ToolName}}
	if r, ok := c.Completer.(ModelResolver); ok {
		if req.Chat, req.Model, req.Renders, err = r.Resolve(in.Model); err != nil {
			return fmt.Errorf("completion: %w", err)
		}
	}
	if in.OneCall {
		req.MaxCalls = 1
	}
	req.History, req.Query, req.Rounds = clientConversation(in.Messages, in.Last)
	out, err := planner.Plan(ctx, req)
	res.Trace.Routing = out
	if err != nil {
		if errors.Is(err, router.ErrUnknownTool) {
			return ParamError("unknown_tool_choice", "tool_choice", err.Error())
		}
		return err
	}
	routed := tokens(out.Usage.PromptTokens, out.Usage.CompletionTokens)
	res.Usage = routed
	byName := map[string]*inventory.Tool{}
	for _, t := range tools {
		byName[t.Name] = t
	}
	var invalid []string
	for i := range out.Calls {
		call := &out.Calls[i]
		if call.Error != nil || call.Arguments == nil {
			if call.Error != nil {
				invalid = append(invalid, call.Tool+": "+call.Error.Message)
			}
			continue
		}
		res.ToolCalls = append(res.ToolCalls, api.ToolCall{ID: callID(),
			Function: api.ToolCallFunction{Index: len(res.ToolCalls), Name: call.Tool, Arguments: orderedArguments(byName[call.Tool], call.Arguments)}})
	}
	if len(res.ToolCalls) > 0 {
		res.Finish = "tool_calls"
		return nil
	}
	if in.RequireTool || in.ToolName != "" {
		why := out.Degraded
		if len(invalid) > 0 {
			why = strings.Join(invalid, "; ")
		}
		if why == "" {
			why = "no call was chosen"
		}
		return fmt.Errorf("%w, as tool_choice requires: %s", ErrNoValidCall, why)
	}
	if err := c.complete(ctx, res, text, onDelta); err != nil {
		return err
	}
	res.Usage = tokens(res.Usage.PromptTokens+routed.PromptTokens, res.Usage.CompletionTokens+routed.CompletionTokens)
	return nil
}

// clientConversation splits a conversation with tools for the phases: the user and assistant
// texts before the last user message, that message, and after it each assistant turn's tool calls
// with the results the tool messages gave them (by tool_call_id, else in order).
func clientConversation(msgs []api.Message, last int) ([]router.Message, string, [][]router.ClientCall) {
	var history []router.Message
	for _, m := range msgs[:last] {
		if (m.Role == "user" || m.Role == "assistant") && m.Content != "" {
			history = append(history, router.Message{Role: m.Role, Content: m.Content})
		}
	}
	var rounds [][]router.ClientCall
	var ids []string
	next := 0
	for _, m := range msgs[last+1:] {
		switch {
		case m.Role == "assistant" && len(m.ToolCalls) > 0:
			round := make([]router.ClientCall, len(m.ToolCalls))
			ids = ids[:0]
			for i, tc := range m.ToolCalls {
				round[i] = router.ClientCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments.ToMap()}
				ids = append(ids, tc.ID)
			}
			rounds, next = append(rounds, round), 0
		case m.Role == "tool" && len(rounds) > 0:
			round := rounds[len(rounds)-1]
			at := slices.Index(ids, m.ToolCallID)
			if at < 0 || m.ToolCallID == "" {
				at = next
			}
			if at < len(round) {
				round[at].Result = m.Content
			}
			next = at + 1
		}
	}
	return history, msgs[last].Content, rounds
}

// orderedArguments are a call's arguments in the order its schema lists the properties.
func orderedArguments(t *inventory.Tool, args map[string]any) api.ToolCallFunctionArguments {
	out := api.NewToolCallFunctionArguments()
	if t != nil {
		for _, p := range t.Parameters {
			if v, ok := args[p.Name]; ok {
				out.Set(p.Name, v)
			}
		}
	}
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if _, ok := out.Get(k); !ok {
			out.Set(k, args[k])
		}
	}
	return out
}

// callID is a new tool call id, as OpenAI writes them.
func callID() string { return "call_" + strings.ToLower(rand.Text()[:24]) }
