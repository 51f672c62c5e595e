// Package usage keeps one record per served request (who asked, on which endpoint, with what
// status and routing decision, the tools and models it called, their outcomes, tokens and
// durations) and answers totals over a time window grouped by org, team, agent, tool or model.
//
// Records are stored in three tables (requests, tool_calls, model_calls) of an embedded SQLite
// database (Open with a path) or of a PostgreSQL database that many replicas share (Open with a
// URL); the schema is created and migrated when the store opens. The Recorder is an
// observe.Observer: it turns each observe.Report into a record and queues it without blocking,
// and one goroutine writes the queue in batches, each one transaction. A full queue drops the
// record and counts it. The package reads only the Report; it owns no metric, trace or limit.
package usage

import (
	"time"

	"toolrouter/council"
	"toolrouter/observe"
	"toolrouter/router"
)

// Record is one served request's usage.
type Record struct {
	Start time.Time
	// Org, Team and Agent are the identity the request acted for; KeyName is its credential's
	// name (the API key's name or the token's subject). All are "" for a request whose
	// credential was missing or refused.
	Org, Team, Agent, KeyName string
	Endpoint                  string
	Status                    int
	ErrorCode                 string
	// UseTool, DegradedReason and Stopped are the routing decision (none when nothing was routed).
	UseTool        bool
	DegradedReason string
	Stopped        string
	Duration       time.Duration
	Tools          []ToolCall
	Models         []ModelCall
}

// ToolCall is one tool call the router made or tried (one refused for invalid arguments has that
// error code as its outcome).
type ToolCall struct {
	Server, Tool string
	// Outcome is OutcomeOK, OutcomeIsError (the tool answered with isError) or the call's error
	// code (router.CodeToolTimeout, ...).
	Outcome    string
	DurationMS float64
}

// Outcomes of a tool call besides an error code.
const (
	OutcomeOK      = "ok"
	OutcomeIsError = "is_error"
)

// ModelCall is one model call: routing's ("select", "arguments", "native"), the council's
// ("stage1", "stage2", "stage3") or another ("completion").
type ModelCall struct {
	Phase, Model     string
	PromptTokens     int
	CompletionTokens int
	DurationMS       float64
	Failed           bool
}

// Phases of the council's model calls.
const (
	PhaseStage1 = "stage1"
	PhaseStage2 = "stage2"
	PhaseStage3 = "stage3"
)

// recordOf builds the record of a served request.
func recordOf(r *observe.Report) Record {
	rec := Record{
		Start: r.Start, Endpoint: r.Endpoint, Status: r.Status, ErrorCode: r.ErrorCode, Duration: r.Duration,
	}
	if r.Authenticated {
		rec.Org, rec.Team, rec.Agent, rec.KeyName = r.Identity.Org, r.Identity.Team, r.Identity.Agent, r.Identity.Name
	}
	if o := r.Outcome; o != nil {
		rec.UseTool, rec.DegradedReason, rec.Stopped = o.UseTool, string(o.DegradedReason), string(o.Stopped)
		rec.Tools = toolCalls(o.Calls)
		for _, s := range o.Trace {
			if s.Model != "" {
				rec.Models = append(rec.Models, ModelCall{Phase: string(s.Kind), Model: s.Model, PromptTokens: s.PromptTokens,
					CompletionTokens: s.CompletionTokens, DurationMS: s.DurationMS, Failed: s.Error != ""})
			}
		}
	}
	if c := r.Council; c != nil {
		rec.Models = append(rec.Models, councilCalls(c)...)
	}
	for _, m := range r.ModelCalls {
		rec.Models = append(rec.Models, ModelCall{Phase: m.Phase, Model: m.Model, PromptTokens: m.PromptTokens,
			CompletionTokens: m.CompletionTokens, DurationMS: ms(m.Duration), Failed: m.Err != ""})
	}
	return rec
}

// toolCalls are the tool calls of a routing: a call answered from an earlier identical one, or
// one naming a tool that does not exist, is none.
func toolCalls(calls []router.Call) []ToolCall {
	var out []ToolCall
	for _, c := range calls {
		if c.ReusedFrom != 0 || c.Tool == "" {
			continue
		}
		outcome := OutcomeOK
		switch {
		case c.Error != nil:
			outcome = c.Error.Code
		case c.Result == nil:
			continue // neither ran nor failed: nothing to count
		case c.Result.IsError:
			outcome = OutcomeIsError
		}
		out = append(out, ToolCall{Server: c.Server, Tool: c.Tool, Outcome: outcome, DurationMS: c.ExecuteMS})
	}
	return out
}

// councilCalls are a council run's member and chairman calls, by stage. A call's model is the
// provider's model id when known, else the member's name.
func councilCalls(c *council.Result) []ModelCall {
	var out []ModelCall
	add := func(phase, name, id string, u council.CallUsage, failed bool) {
		model := id
		if model == "" {
			model = name
		}
		out = append(out, ModelCall{Phase: phase, Model: model, PromptTokens: u.PromptTokens,
			CompletionTokens: u.CompletionTokens, DurationMS: u.DurationMS, Failed: failed})
	}
	for _, a := range c.Stage1 {
		add(PhaseStage1, a.Model, a.ModelID, a.Usage, a.Error != "")
	}
	for _, r := range c.Stage2 {
		add(PhaseStage2, r.Model, r.ModelID, r.Usage, r.Error != "")
	}
	if s := c.Stage3; s != nil {
		add(PhaseStage3, s.Model, s.ModelID, s.Usage, s.Error != "")
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
