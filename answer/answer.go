// Package answer is the core behind every front door: it checks a request's fields (DecodeRoute,
// DecodeAnswer, DecodeTool), routes the query and decides who answers, the tools' output or the
// council with that output as evidence (Service), answers chat completions (Chat, over the
// configured providers with ProviderCompleter), and maps every error to the status, code and
// message a client is told (Classify). It knows no transport: the HTTP API (package server) and
// the MCP server (package mcpserver) only translate their requests into these calls and the
// results back.
package answer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"toolrouter/council"
	"toolrouter/provider"
	"toolrouter/router"
)

// Router routes one request; *router.Router satisfies it.
type Router interface {
	Route(ctx context.Context, req router.Request) (*router.Outcome, error)
}

// Councillor runs the council on a query and the tool evidence; *council.Council satisfies it.
type Councillor interface {
	Run(ctx context.Context, in council.Input, emit func(council.Event)) (*council.Result, error)
}

// Synthesize says when the council writes the answer.
type Synthesize string

// Values of Synthesize.
const (
	// Auto: direct tool results answer by themselves; everything else goes to the council.
	Auto Synthesize = "auto"
	// Always: the council answers, with the tool results as evidence.
	Always Synthesize = "always"
	// Never: the tool output is the answer.
	Never Synthesize = "never"
)

// Valid reports whether s is one of the values.
func (s Synthesize) Valid() bool { return s == Auto || s == Always || s == Never }

// ErrNoCouncil is Run's error for Always when no council is configured.
var ErrNoCouncil = errors.New(`synthesize is "always" but no council is configured (council.members in the configuration)`)

// AnsweredByTool is Response.AnsweredBy when the tools' output is the answer.
const AnsweredByTool = "tool"

// AnsweredByApproval is Response.AnsweredBy when a call awaits approval: the answer says which,
// and nothing was synthesised from a partial set of results.
const AnsweredByApproval = "approval_required"

// Response is an answer: what /v1/answer returns.
type Response struct {
	Final      string          `json:"final"`
	AnsweredBy string          `json:"answered_by"`
	Note       string          `json:"note,omitempty"`
	Routing    *router.Outcome `json:"routing"`
	Council    *council.Result `json:"council,omitempty"`
	Usage      Usage           `json:"usage"`
}

// Usage is the routing's model use and the total with the council's (whose own breakdown, per
// stage and member, is in council.usage).
type Usage struct {
	Routing router.Usage `json:"routing"`
	Total   Total        `json:"total"`
}

// Total is the model use of routing and council together.
type Total struct {
	LLMCalls         int      `json:"llm_calls"`
	PromptTokens     int      `json:"prompt_tokens"`
	CompletionTokens int      `json:"completion_tokens"`
	CostUSD          *float64 `json:"cost_usd,omitempty"`
	// Breakdown sums the calls' split of the server's time and their uncached prompt tokens.
	provider.Breakdown
}

// Service answers queries.
type Service struct {
	Router  Router
	Council Councillor // nil: no council; the tools' output answers
}

// Event is a routing or council event as Run reports it: its type and the event itself.
type Event struct {
	Type string
	Data any
}

// Check refuses a mode this service cannot answer in (Always without a council), before any work.
func (s *Service) Check(mode Synthesize) error {
	if mode == Always && s.Council == nil {
		return ErrNoCouncil
	}
	return nil
}

// Run routes the query and decides who answers: the tool (direct results, or Never), or the
// council. emit, if not nil, receives every routing and council event.
func (s *Service) Run(ctx context.Context, req router.Request, mode Synthesize, emit func(Event)) (*Response, error) {
	if err := s.Check(mode); err != nil {
		return nil, err
	}
	if emit != nil {
		req.OnEvent = func(ev router.Event) { emit(Event{Type: string(ev.Type), Data: ev}) }
	}
	out, err := s.Router.Route(ctx, req)
	if err != nil {
		return nil, err
	}
	resp := &Response{Routing: out, Usage: Usage{Routing: out.Usage}}
	switch {
	case len(out.Pending) > 0:
		resp.Final, resp.AnsweredBy = AwaitingApproval(out), AnsweredByApproval
	case mode == Never:
		resp.Final, resp.AnsweredBy = ToolText(out), AnsweredByTool
	case mode == Auto && out.Direct:
		resp.Final, resp.AnsweredBy = ToolText(out), AnsweredByTool
	case s.Council == nil:
		resp.Final, resp.AnsweredBy = ToolText(out), AnsweredByTool
		resp.Note = "no council is configured: the answer is the tool output"
	default:
		in := council.Input{Query: req.Query, Evidence: Evidence(out)}
		for _, m := range req.History {
			in.History = append(in.History, provider.Message{Role: m.Role, Content: m.Content})
		}
		cemit := func(council.Event) {}
		if emit != nil {
			cemit = func(ev council.Event) { emit(Event{Type: string(ev.Type), Data: ev}) }
		}
		res, err := s.Council.Run(ctx, in, cemit)
		if err != nil {
			return resp, fmt.Errorf("council: %w", err)
		}
		resp.Council, resp.Final, resp.AnsweredBy = res, res.Final, string(res.AnsweredBy)
	}
	resp.Usage.Total = total(resp)
	return resp, nil
}

// AwaitingApproval is the answer of a request whose calls await approval: each held call, why,
// and how to approve it (its token), for a person to read.
func AwaitingApproval(out *router.Outcome) string {
	var b strings.Builder
	b.WriteString("Approval is needed before these tool calls run:\n")
	for _, p := range out.Pending {
		args, _ := json.Marshal(p.Arguments)
		fmt.Fprintf(&b, "- %s.%s %s: %s. To run it, POST /v1/approve {\"token\": %q} before %s.\n",
			p.Server, p.Tool, args, p.Reason, p.Token, p.ExpiresAt.Format(time.RFC3339))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// ToolText is the answer made of the calls' outputs: each successful result's text, in order.
func ToolText(out *router.Outcome) string {
	var parts []string
	for _, c := range out.Calls {
		if c.Result != nil && !c.Result.IsError && c.Result.Text != "" {
			parts = append(parts, c.Result.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Evidence is what a model is told of the tool calls.
func Evidence(out *router.Outcome) []council.Evidence {
	var ev []council.Evidence
	for _, c := range out.Calls {
		e := council.Evidence{Server: c.Server, Tool: c.Tool, Arguments: c.Arguments}
		if c.Result != nil {
			e.Text, e.IsError = c.Result.Text, c.Result.IsError
		}
		if c.Error != nil {
			e.Error = c.Error.Code + ": " + c.Error.Message
		}
		ev = append(ev, e)
	}
	return ev
}

func total(r *Response) Total {
	u := r.Usage.Routing
	t := Total{LLMCalls: u.LLMCalls, PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, Breakdown: u.Breakdown}
	if r.Council != nil {
		c := r.Council.Usage.Total
		t.LLMCalls += c.Calls
		t.PromptTokens += c.PromptTokens
		t.CompletionTokens += c.CompletionTokens
		t.CostUSD = c.CostUSD
		t.Breakdown.Add(c.Breakdown)
	}
	return t
}
