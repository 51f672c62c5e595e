package telemetry

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"toolrouter/council"
	"toolrouter/inventory"
	"toolrouter/observe"
	"toolrouter/router"
)

// GenAI semantic-convention attributes of a model call's span.
const (
	attrOperation    = attribute.Key("gen_ai.operation.name")
	attrSystem       = attribute.Key("gen_ai.system")
	attrModel        = attribute.Key("gen_ai.request.model")
	attrInputTokens  = attribute.Key("gen_ai.usage.input_tokens")
	attrOutputTokens = attribute.Key("gen_ai.usage.output_tokens")
	attrToolName     = attribute.Key("gen_ai.tool.name")
)

// toolrouter's own attributes.
const (
	attrPhase    = attribute.Key("toolrouter.phase")
	attrRound    = attribute.Key("toolrouter.round")
	attrServer   = attribute.Key("toolrouter.server")
	attrTool     = attribute.Key("toolrouter.tool")
	attrOutcome  = attribute.Key("toolrouter.outcome")
	attrMember   = attribute.Key("toolrouter.council.member")
	attrIdentity = attribute.Key("toolrouter.identity")
	attrUseTool  = attribute.Key("toolrouter.use_tool")
	attrDegraded = attribute.Key("toolrouter.degraded_reason")
	attrDetail   = attribute.Key("toolrouter.detail")
	attrAnswered = attribute.Key("toolrouter.council.answered_by")
)

// Observe records one request's spans: the request's (a server span continuing the request's
// traceparent), and under it one per step of its routing (retrieval, each selection, each
// arguments attempt, each tool call), the council and its stages with one span per model call,
// and one per other model call. The other routing steps (dedup, trim, deadline, capped) are
// events of the request's span. Spans are ended at once with the report's times: nothing waits.
// Probes (/healthz, /readyz) and metrics scrapes are not traced.
func (t *Tracer) Observe(ctx context.Context, r *observe.Report) {
	if untraced[r.Endpoint] {
		return
	}
	if r.Header != nil {
		ctx = t.prop.Extract(ctx, headerCarrier(r.Header))
	}
	b := &builder{t: t, start: r.Start, end: r.Start.Add(r.Duration)}
	attrs := []attribute.KeyValue{semconv.HTTPRoute(r.Endpoint), semconv.HTTPResponseStatusCode(r.Status)}
	if r.Method != "" {
		attrs = append(attrs, semconv.HTTPRequestMethodKey.String(r.Method))
	}
	if r.ErrorCode != "" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(r.ErrorCode))
	}
	if r.Authenticated {
		attrs = append(attrs, attrIdentity.String(r.Identity.String()))
	}
	if out := r.Outcome; out != nil {
		attrs = append(attrs, attrUseTool.Bool(out.UseTool))
		if out.DegradedReason != "" {
			attrs = append(attrs, attrDegraded.String(string(out.DegradedReason)))
		}
	}
	ctx, root := t.tracer.Start(ctx, spanName(r), trace.WithTimestamp(b.start), trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attrs...))
	if !root.IsRecording() { // sampled out: so would its children be
		root.End()
		return
	}
	if r.Status >= 500 {
		root.SetStatus(codes.Error, r.ErrorCode)
	}
	b.ctx, b.root = ctx, root
	councilStart := b.start
	if out := r.Outcome; out != nil {
		b.routing(out)
		councilStart = b.at(out.Timings.Total)
	}
	if c := r.Council; c != nil {
		b.council(c, councilStart)
	}
	for _, mc := range r.ModelCalls {
		b.chat(b.ctx, mc.Phase, mc.Model, "", b.clamp(mc.Start), b.clamp(mc.Start.Add(mc.Duration)), mc.PromptTokens, mc.CompletionTokens, mc.Err)
	}
	root.End(trace.WithTimestamp(b.end))
}

// untraced are the routes of probes and scrapes, which would bury the requests' traces.
var untraced = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// spanName is the request span's name: "METHOD ROUTE", or "mcp TOOL" for a call of the MCP
// server mode's tool.
func spanName(r *observe.Report) string {
	if tool, ok := strings.CutPrefix(r.Endpoint, "mcp:"); ok {
		return "mcp " + tool
	}
	if r.Method == "" {
		return r.Endpoint
	}
	return r.Method + " " + r.Endpoint
}

// builder makes the child spans of one request's span.
type builder struct {
	t          *Tracer
	ctx        context.Context // the request span's
	root       trace.Span
	start, end time.Time
}

// at is the time ms milliseconds after the request started, within the request. A routing's
// step times count from the routing's start, which is the request's but for the decoding of its
// body: close enough to place a step, and clamped so that no child outlives its parent.
func (b *builder) at(ms float64) time.Time {
	return b.clamp(b.start.Add(dur(ms)))
}

// clamp keeps t within the request.
func (b *builder) clamp(t time.Time) time.Time {
	switch {
	case t.Before(b.start):
		return b.start
	case t.After(b.end):
		return b.end
	}
	return t
}

// span records one span under parent from from to to, failed when errMsg is not "", and returns
// its context for children.
func (b *builder) span(parent context.Context, name string, from, to time.Time, errMsg string, attrs ...attribute.KeyValue) context.Context {
	ctx, s := b.t.tracer.Start(parent, name, trace.WithTimestamp(from), trace.WithAttributes(attrs...))
	if errMsg != "" {
		s.SetStatus(codes.Error, errMsg)
	}
	s.End(trace.WithTimestamp(to))
	return ctx
}

// chat records one model call with the GenAI attributes; member is the council member's name,
// "" outside the council.
func (b *builder) chat(parent context.Context, phase, model, member string, from, to time.Time, prompt, completion int, errMsg string) {
	b.span(parent, "chat "+model, from, to, errMsg, b.genAI(phase, model, member, prompt, completion)...)
}

// genAI are a model call's attributes.
func (b *builder) genAI(phase, model, member string, prompt, completion int) []attribute.KeyValue {
	system := b.t.systems[model]
	if system == "" {
		system = "ollama"
	}
	attrs := []attribute.KeyValue{attrOperation.String("chat"), attrSystem.String(system), attrModel.String(model),
		attrInputTokens.Int(prompt), attrOutputTokens.Int(completion), attrPhase.String(phase)}
	if member != "" {
		attrs = append(attrs, attrMember.String(member))
	}
	return attrs
}

// routing records a routing's steps.
func (b *builder) routing(out *router.Outcome) {
	calls := map[int]*router.Call{}
	for i := range out.Calls {
		calls[out.Calls[i].Step] = &out.Calls[i]
	}
	last := 0.0 // when the latest step so far ended, in ms since the start
	for _, s := range out.Trace {
		from, to := b.at(s.StartMS), b.at(s.StartMS+s.DurationMS)
		round := attrRound.Int(s.Round)
		switch s.Kind {
		case router.StepShortlist, router.StepSearch:
			// The step is noted once its tools are shown, without a duration: the ranking ran
			// since the step before it ended (the routing's start, for the first shortlist; the
			// selection that asked for a search, for a search).
			name := "retrieval"
			if s.Kind == router.StepSearch {
				name = "search"
			}
			b.span(b.ctx, name, b.at(min(last, s.StartMS)), to, s.Error, round)
		case router.StepSelect, router.StepArguments, router.StepNative:
			attrs := append(b.genAI(string(s.Kind), s.Model, "", s.PromptTokens, s.CompletionTokens), round)
			b.span(b.ctx, string(s.Kind), from, to, s.Error, attrs...)
		case router.StepExecute:
			b.toolCall(calls[s.Call], s, from, to)
		default:
			attrs := []attribute.KeyValue{round}
			if s.Detail != "" {
				attrs = append(attrs, attrDetail.String(s.Detail))
			}
			b.root.AddEvent(string(s.Kind), trace.WithTimestamp(from), trace.WithAttributes(attrs...))
		}
		last = max(last, s.StartMS+s.DurationMS)
	}
}

// toolCall records one tool call's execution; c is nil when the trace names a call the outcome
// does not list.
func (b *builder) toolCall(c *router.Call, s router.Step, from, to time.Time) {
	server, tool, outcome, errMsg := "unknown", "unknown", "unknown", s.Error
	if c != nil {
		if c.Server != "" { // else the model made the tool up
			server, tool = c.Server, c.Tool
		}
		outcome = callOutcome(c)
		if errMsg == "" && outcome != "ok" {
			errMsg = outcome
		}
	}
	qualified := inventory.Qualify(server, tool)
	b.span(b.ctx, "execute "+qualified, from, to, errMsg,
		attrServer.String(server), attrTool.String(tool), attrOutcome.String(outcome), attrRound.Int(s.Round),
		attrOperation.String("execute_tool"), attrToolName.String(qualified))
}

// callOutcome is ok, tool_error (the tool answered isError), or the call's error code.
func callOutcome(c *router.Call) string {
	switch {
	case c.Error != nil:
		return c.Error.Code
	case c.Result != nil && c.Result.IsError:
		return "tool_error"
	}
	return "ok"
}

// council records a council run from start: its span, one per stage, one per model call. The
// result has no start times, only durations: the stages run one after the other, so each starts
// when the previous one ends, and the calls of a stage run in parallel, so each starts with its
// stage.
func (b *builder) council(c *council.Result, start time.Time) {
	end := b.clamp(start.Add(dur(c.Usage.Total.DurationMS)))
	attrs := []attribute.KeyValue{}
	if c.AnsweredBy != "" {
		attrs = append(attrs, attrAnswered.String(string(c.AnsweredBy)))
	}
	ctx := b.span(b.ctx, "council", start, end, "", attrs...)
	stage := func(name string, u council.StageUsage) (context.Context, time.Time) {
		from := start
		start = b.clamp(start.Add(dur(u.DurationMS)))
		return b.span(ctx, "council "+name, from, start, ""), from
	}
	type call struct {
		model, id, errMsg string
		usage             council.CallUsage
	}
	calls := func(phase string, sctx context.Context, from time.Time, cs []call) {
		for _, c := range cs {
			model := c.id
			if model == "" {
				model = c.model
			}
			b.chat(sctx, phase, model, c.model, from, b.clamp(from.Add(dur(c.usage.DurationMS))), c.usage.PromptTokens, c.usage.CompletionTokens, c.errMsg)
		}
	}
	if len(c.Stage1) > 0 {
		sctx, from := stage("stage1", c.Usage.Stage1)
		var cs []call
		for _, a := range c.Stage1 {
			cs = append(cs, call{a.Model, a.ModelID, a.Error, a.Usage})
		}
		calls("stage1", sctx, from, cs)
	}
	if len(c.Stage2) > 0 {
		sctx, from := stage("stage2", c.Usage.Stage2)
		var cs []call
		for _, r := range c.Stage2 {
			cs = append(cs, call{r.Model, r.ModelID, r.Error, r.Usage})
		}
		calls("stage2", sctx, from, cs)
	}
	if s := c.Stage3; s != nil {
		sctx, from := stage("stage3", c.Usage.Stage3)
		calls("stage3", sctx, from, []call{{s.Model, s.ModelID, s.Error, s.Usage}})
	}
}

// dur is a duration of ms milliseconds.
func dur(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
