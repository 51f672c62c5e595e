// Package router decides, for one query, whether a tool is needed and which one (phase 1), writes
// and validates its arguments (phase 2), and runs the call. It talks to the model through a Chatter
// and to tools through a ToolCaller; it does not own MCP sessions, HTTP or configuration loading.
package router

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/ollama/ollama/api"

	"toolrouter/inventory"
	"toolrouter/prompts"
)

// Chatter is the one model call the router makes; *api.Client satisfies it.
type Chatter interface {
	Chat(ctx context.Context, req *api.ChatRequest, fn api.ChatResponseFunc) error
}

// Inventory gives the current tools.
type Inventory interface {
	Snapshot() *inventory.Snapshot
}

// ToolCaller runs one tool call.
type ToolCaller interface {
	CallTool(ctx context.Context, server, tool string, args map[string]any) (*mcp.CallToolResult, error)
}

// FailureMode says what a model failure does to a request.
type FailureMode string

// Failure modes.
const (
	// NoTool answers use_tool:false with a degraded reason, so the caller goes on without tools.
	NoTool FailureMode = "no_tool"
	// Fail returns the model error to the caller.
	Fail FailureMode = "fail"
)

// Settings tune a Router; zero durations mean "no extra bound" only where noted.
type Settings struct {
	Model     string
	KeepAlive time.Duration
	// Options are Ollama's model options (temperature, num_ctx, seed, …).
	Options map[string]any
	// CallTimeout bounds each model call.
	CallTimeout time.Duration
	// SelectTimeout and ArgumentsTimeout bound phases 1 and 2 (all repair attempts included).
	SelectTimeout    time.Duration
	ArgumentsTimeout time.Duration
	// ExecuteTimeout bounds the tool call.
	ExecuteTimeout time.Duration
	// RepairAttempts is how many times invalid arguments are sent back to the model.
	RepairAttempts int
	OnModelFailure FailureMode
}

// Router runs the two phases and the call. It is safe for concurrent use.
type Router struct {
	chat  Chatter
	inv   Inventory
	tools ToolCaller
	set   Settings
	log   *slog.Logger

	promptMu sync.Mutex // guards prompts
	prompts  *promptSet
}

// promptSet holds what is rendered once per inventory version: the phase-1 system prompt, its
// format schema and the static part of each tool's phase-2 prompt.
type promptSet struct {
	version uint64
	text    string
	format  []byte
	names   map[string]bool

	mu   sync.Mutex // guards args
	args map[string]string
}

// argumentsHead returns the static phase-2 prompt of a tool, rendering it on first use.
func (p *promptSet) argumentsHead(t *inventory.Tool) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.args[t.Qualified]; ok {
		return s, nil
	}
	s, err := prompts.ArgumentsTool(promptTool(t))
	if err != nil {
		return "", err
	}
	p.args[t.Qualified] = s
	return s, nil
}

// New returns a Router.
func New(chat Chatter, inv Inventory, tools ToolCaller, set Settings, log *slog.Logger) *Router {
	if log == nil {
		log = slog.Default()
	}
	if set.OnModelFailure == "" {
		set.OnModelFailure = NoTool
	}
	return &Router{chat: chat, inv: inv, tools: tools, set: set, log: log}
}

// Message is one earlier turn of the conversation.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is one routing request.
type Request struct {
	Query   string
	History []Message
	Caller  string
}

// ErrModel wraps model failures returned when OnModelFailure is Fail.
var ErrModel = errors.New("model failed")

// Route runs phase 1, phase 2 and the call for one query. It returns an error only when the model
// fails and the failure mode is Fail (wrapping ErrModel) or when ctx ends before an outcome exists;
// tool errors, invalid arguments and degraded answers are reported in the Outcome.
func (r *Router) Route(ctx context.Context, req Request) (*Outcome, error) {
	start := time.Now()
	out := &Outcome{Calls: []Call{}}
	defer func() {
		out.Timings.Total = ms(time.Since(start))
		if out.Server != "" {
			out.Calls = append(out.Calls, Call{
				Step: 1, Server: out.Server, Tool: out.Tool, Arguments: out.Arguments, Result: out.Result,
				Error: out.Error, Attempts: out.Attempts, ArgumentsMS: out.Timings.Arguments, ExecuteMS: out.Timings.Execute,
			})
		}
	}()

	snap := r.inv.Snapshot()
	tools := snap.Available()
	if len(tools) == 0 {
		out.Reasoning = "no tools are available"
		return out, nil
	}

	ps, err := r.promptSet(snap, tools)
	if err != nil {
		return nil, err
	}

	// Phase 1: selection.
	t0 := time.Now()
	sel, err := r.selectTool(ctx, ps, req, &out.Usage)
	out.Timings.Select = ms(time.Since(t0))
	if err != nil {
		return r.modelFailure(out, "selecting tool", err)
	}
	out.Reasoning, out.Direct = sel.Reasoning, sel.Direct
	if !sel.UseTool {
		out.Direct = false
		if sel.Note != "" {
			out.Degraded = sel.Note
		}
		return out, nil
	}
	tool, _ := snap.Tool(sel.Tool)
	out.UseTool, out.Server, out.Tool = true, tool.Server, tool.Name

	// Phase 2: arguments.
	t1 := time.Now()
	args, err := r.arguments(ctx, ps, tool, req, &out.Usage, out)
	out.Timings.Arguments = ms(time.Since(t1))
	var invalid *invalidArgsError
	switch {
	case errors.As(err, &invalid):
		out.Direct = false
		out.Error = &Error{Code: CodeInvalidArguments, Message: invalid.Error()}
		return out, nil
	case err != nil:
		out.UseTool = false
		return r.modelFailure(out, "writing arguments", err)
	}
	out.Arguments = args

	// Execution.
	t2 := time.Now()
	r.execute(ctx, tool, args, out)
	out.Timings.Execute = ms(time.Since(t2))
	return out, nil
}

// modelFailure applies the failure mode to a model error.
func (r *Router) modelFailure(out *Outcome, phase string, err error) (*Outcome, error) {
	r.log.Warn("model failure", "phase", phase, "err", err)
	if r.set.OnModelFailure == Fail {
		return out, errors.Join(ErrModel, &PhaseError{Phase: phase, Err: err})
	}
	out.UseTool = false
	out.Direct = false
	out.Degraded = phase + ": " + err.Error()
	return out, nil
}

// PhaseError names the phase in which the model failed.
type PhaseError struct {
	Phase string
	Err   error
}

func (e *PhaseError) Error() string { return e.Phase + ": " + e.Err.Error() }
func (e *PhaseError) Unwrap() error { return e.Err }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
