// Package fakemodel is the benchmark's stand-in for a model: a deterministic answer function for
// internal/fakeollama that chooses the first tool it is offered and writes the smallest arguments
// the format schema allows. It reads no label, so the rows it produces check plumbing (queries,
// tools, MCP calls, handlers) and measure no model; the load test uses it as a zero-latency model.
package fakemodel

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ollama/ollama/api"

	"toolrouter/internal/fakeollama"
)

// Reply is the plumbing model. A continuation (router.prefill: the conversation ends with the
// answer so far) gets the value of its last key as the whole answer would have it. A selection request (its format has "use_tool") is answered
// with the first tool of the format's enum when the conversation has no assistant turn yet, and
// with no tool after that, in the shape of the format (every router.reasoning: calls as tool
// names, or as objects naming the tool); a native request (tools offered) likewise with a tool
// call or none; any other request gets the smallest instance of its format schema. It never
// reads a label. It reports a token per 4 bytes (at least 1) of the messages and format sent and
// of its answer, no prompt cache and no durations, so usage is counted as a real server's would
// be. Asked for logprobs, it sends its answer as one token it is certain of (probability 1, the
// only alternative).
func Reply(req api.ChatRequest) fakeollama.Reply {
	r := reply(req)
	prompt := len(req.Format)
	for _, m := range req.Messages {
		prompt += len(m.Content)
	}
	answer := len(r.Content)
	if len(r.ToolCalls) > 0 {
		b, _ := json.Marshal(r.ToolCalls)
		answer += len(b)
	}
	r.PromptTokens, r.CompletionTokens = max(1, prompt/4), max(1, answer/4)
	if req.Logprobs && r.Content != "" {
		tok := api.TokenLogprob{Token: r.Content, Logprob: 0}
		r.Logprobs = []api.Logprob{{TokenLogprob: tok, TopLogprobs: []api.TokenLogprob{tok}}}
	}
	return r
}

func reply(req api.ChatRequest) fakeollama.Reply {
	if len(req.Tools) > 0 {
		return native(req)
	}
	var schema map[string]any
	if err := json.Unmarshal(req.Format, &schema); err != nil {
		return fakeollama.Reply{Content: `{}`}
	}
	if key, ok := continued(req.Messages); ok {
		return fakeollama.Reply{Content: value(key, schema, firstRound(req.Messages[:len(req.Messages)-1]))}
	}
	props, _ := schema["properties"].(map[string]any)
	if _, ok := props["use_tool"]; !ok {
		b, _ := json.Marshal(minimal(schema))
		return fakeollama.Reply{Content: string(b)}
	}
	first := firstRound(req.Messages)
	out := map[string]any{}
	for name, p := range props {
		switch name {
		case "use_tool":
			out[name] = first
		case "reasoning":
			out[name] = "plumbing"
		case "needs_more", "direct":
			out[name] = false
		case "tool":
			out[name] = "none"
			if first {
				out[name] = firstTool(p)
			}
		case "calls":
			out[name] = []any{}
			if first {
				item := minimal(p.(map[string]any)["items"])
				switch obj := item.(type) {
				case map[string]any: // reasoning "full": {"tool", "task"}
					obj["tool"] = firstTool(p)
				default: // reasoning "none" and "brief": the tool's name
					item = firstTool(p)
				}
				out[name] = []any{item}
			}
		default:
			out[name] = minimal(p)
		}
	}
	b, _ := json.Marshal(out)
	return fakeollama.Reply{Content: string(b)}
}

// continued is the key whose value a continuation asks for: the conversation ends with the
// assistant's answer so far (router.prefill), which ends with `"key":`.
func continued(msgs []api.Message) (string, bool) {
	if len(msgs) == 0 || msgs[len(msgs)-1].Role != "assistant" {
		return "", false
	}
	text := strings.TrimSuffix(msgs[len(msgs)-1].Content, ":")
	if !strings.HasSuffix(text, `"`) {
		return "", false
	}
	text = text[:len(text)-1]
	return text[strings.LastIndex(text, `"`)+1:], true
}

// value is a continued answer's value for key under schema, as reply writes the whole answer: a
// phase-1 key's value as the selection has it, any other the smallest the schema allows.
func value(key string, schema map[string]any, first bool) string {
	var v any
	switch key {
	case "use_tool":
		v = first
	case "reasoning":
		v = "plumbing"
	case "needs_more", "direct":
		v = false
	case "search":
		v = ""
	case "calls":
		item := minimal(schema["items"])
		switch obj := item.(type) {
		case map[string]any:
			obj["tool"] = firstTool(schema)
		default:
			item = firstTool(schema)
		}
		v = []any{item}
	default:
		v = minimal(schema)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// native answers a native-mode request (tools offered, no format): on the first round a call of the
// first tool with the smallest arguments its parameters allow, after that no call.
func native(req api.ChatRequest) fakeollama.Reply {
	if !firstRound(req.Messages) {
		return fakeollama.Reply{Content: "plumbing: done"}
	}
	fn := req.Tools[0].Function
	raw, _ := json.Marshal(fn.Parameters)
	var params map[string]any
	_ = json.Unmarshal(raw, &params)
	args := api.NewToolCallFunctionArguments()
	if m, ok := minimal(params).(map[string]any); ok {
		for k, v := range m {
			args.Set(k, v)
		}
	}
	return fakeollama.Reply{ToolCalls: []api.ToolCall{{Function: api.ToolCallFunction{Name: fn.Name, Arguments: args}}}}
}

// firstRound reports whether the conversation has no assistant or tool turn yet.
func firstRound(msgs []api.Message) bool {
	for _, m := range msgs {
		if m.Role == "assistant" || m.Role == "tool" {
			return false
		}
	}
	return true
}

// firstTool finds the first enum in a schema and returns its first value other than "none".
func firstTool(s any) string {
	switch v := s.(type) {
	case map[string]any:
		if e, ok := v["enum"].([]any); ok {
			for _, x := range e {
				if t, ok := x.(string); ok && t != "none" {
					return t
				}
			}
		}
		for _, k := range []string{"items", "properties", "tool"} {
			if t := firstTool(v[k]); t != "none" {
				return t
			}
		}
		if props, ok := v["properties"].(map[string]any); ok {
			for _, p := range props {
				if t := firstTool(p); t != "none" {
					return t
				}
			}
		}
	}
	return "none"
}

// minimal is the smallest value a schema admits, roughly: the first enum value, required
// properties only, minItems copies, the minimum of a number.
func minimal(s any) any {
	m, ok := s.(map[string]any)
	if !ok {
		return "x"
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	if c, ok := m["const"]; ok {
		return c
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := m[k].([]any); ok && len(alts) > 0 {
			return minimal(alts[0])
		}
	}
	typ, _ := m["type"].(string)
	if list, ok := m["type"].([]any); ok {
		for _, t := range list {
			if s, _ := t.(string); s != "null" {
				typ = s
				break
			}
		}
	}
	switch typ {
	case "object":
		out := map[string]any{}
		props, _ := m["properties"].(map[string]any)
		req, _ := m["required"].([]any)
		for _, r := range req {
			name, _ := r.(string)
			out[name] = minimal(props[name])
		}
		return out
	case "array":
		n, _ := m["minItems"].(float64)
		out := []any{}
		for range int(n) {
			out = append(out, minimal(m["items"]))
		}
		return out
	case "number", "integer":
		if v, ok := m["minimum"].(float64); ok {
			return v
		}
		return 0
	case "boolean":
		return false
	case "null":
		return nil
	}
	if strings.Contains(fmt.Sprint(m["format"]), "date") {
		return "2025-01-01"
	}
	return "x"
}
