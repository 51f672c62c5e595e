// Package metrics exposes toolrouter's Prometheus metrics: it counts what each served request did
// (an observe.Observer of the request's report), reads the inventory's server states at scrape
// time, takes the rate limiter's and the usage recorder's counts through plain method calls, and
// serves them all, with the Go runtime's and the process's, from its own registry. It does not
// decide what a request does and never labels a metric with anything a request sent: every
// label value is a configured name or a closed set.
package metrics

import (
	"context"
	"net/http"
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"toolrouter/council"
	"toolrouter/inventory"
	"toolrouter/observe"
	"toolrouter/provider"
	"toolrouter/router"
)

// Label values standing for names outside the configuration.
const (
	// Other stands for a model the configuration does not name, or a tool the inventory does not
	// hold at that moment.
	Other = "other"
	// Unknown stands for the server and tool of a call whose tool the model made up (a Call with
	// no Server and Tool).
	Unknown = "unknown"
)

// Inventory gives the current tools; *inventory.Manager satisfies it.
type Inventory interface {
	Snapshot() *inventory.Snapshot
}

// Options configure the metrics. The zero value works: no inventory (no server gauges; every
// tool is "other") and no configured model (every model is "other").
type Options struct {
	// Inventory is read at each scrape for toolrouter_server_up and toolrouter_inventory_tools,
	// and at each request to bound the server and tool labels to the tools it holds.
	Inventory Inventory
	// Models are the configured model names (the router's, the council members' and the
	// chairman's); any other model is labelled "other".
	Models []string
	// Notices, if set, is read at each scrape for the approval webhooks' counts.
	Notices Notices
}

// Metrics holds toolrouter's metrics in its own registry (never the global one).
type Metrics struct {
	reg    *prometheus.Registry
	inv    Inventory
	models map[string]bool

	requests        *prometheus.CounterVec
	requestDuration *prometheus.HistogramVec
	decisions       *prometheus.CounterVec
	modelCalls      *prometheus.CounterVec
	modelDuration   *prometheus.HistogramVec
	modelTokens     *prometheus.CounterVec
	modelParts      *prometheus.HistogramVec
	modelCallTokens *prometheus.HistogramVec
	confidence      *prometheus.HistogramVec
	toolCalls       *prometheus.CounterVec
	toolDuration    *prometheus.HistogramVec
	rateLimited     *prometheus.CounterVec
	heldCalls       *prometheus.CounterVec
	redisUp         prometheus.Gauge
	usageDropped    prometheus.Counter
	usageFileLost   prometheus.Counter
}

// durationBuckets span a cache hit (5 ms) to a slow council (2 min), in seconds.
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}

// partBuckets span the parts of a model call, from loading a model already loaded (under 1 ms) to
// a slow council call (2 min), in seconds.
var partBuckets = append([]float64{0.0005, 0.001, 0.0025}, durationBuckets...)

// tokenBuckets span one token to a long prompt: 1, 4, 16, … 65536.
var tokenBuckets = prometheus.ExponentialBuckets(1, 4, 9)

// confidenceBuckets span a probability in steps of 0.1, finer above 0.9 where a confident small
// model's choices gather.
var confidenceBuckets = []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.999}

// New returns the metrics, registered with the Go runtime and process collectors.
func New(o Options) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), inv: o.Inventory, models: map[string]bool{}}
	for _, name := range o.Models {
		if name != "" {
			m.models[name] = true
		}
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	histogramOf := func(buckets []float64, name, help string, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	}
	histogram := func(name, help string, labels ...string) *prometheus.HistogramVec {
		return histogramOf(durationBuckets, name, help, labels...)
	}
	m.requests = counter("toolrouter_http_requests_total",
		"Requests served, by route pattern (or mcp:TOOL) and HTTP status.", "route", "status")
	m.requestDuration = histogram("toolrouter_http_request_duration_seconds",
		"Time to answer a request, by route pattern (a stream: until its last event).", "route")
	m.decisions = counter("toolrouter_route_decisions_total",
		"Routings, by decision (tool or no_tool) and why the answer was degraded (none when it was not).", "decision", "degraded")
	m.modelCalls = counter("toolrouter_model_calls_total",
		"Model calls, by phase (select, arguments, native, stage1, stage2, stage3, completion), model and outcome (ok or error).",
		"phase", "model", "outcome")
	m.modelDuration = histogram("toolrouter_model_call_duration_seconds",
		"Model call wall time, by phase and model.", "phase", "model")
	m.modelTokens = counter("toolrouter_model_tokens_total",
		"Tokens the model servers reported, by phase, model and kind (prompt or completion).", "phase", "model", "kind")
	m.modelParts = histogramOf(partBuckets, "toolrouter_model_call_part_seconds",
		"Model server time per call, by phase, model and part (load, prefill, decode, rest), as the server reported it; "+
			"calls whose server reports no durations are not observed.", "phase", "model", "part")
	m.modelCallTokens = histogramOf(tokenBuckets, "toolrouter_model_call_tokens",
		"Tokens per model call, by phase, model and kind (uncached_prompt: prompt tokens not served from the cache; "+
			"decode: tokens generated).", "phase", "model", "kind")
	m.confidence = histogramOf(confidenceBuckets, "toolrouter_selection_confidence",
		"Phase 1's confidence in each selection, from the model server's logprobs, by kind (tool: its choice of tools, "+
			"the lowest over the calls; use_tool: its decision to use a tool); selections without logprobs are not observed.", "kind")
	m.toolCalls = counter("toolrouter_tool_calls_total",
		"Tool calls, by server, tool and outcome (ok, tool_error, reused, or the call's error code).", "server", "tool", "outcome")
	m.toolDuration = histogram("toolrouter_tool_call_duration_seconds",
		"Tool call execution time, by server.", "server")
	m.rateLimited = counter("toolrouter_rate_limited_total",
		"Requests refused by a rate limit, by level and limit.", "level", "limit")
	m.heldCalls = counter("toolrouter_held_calls_total",
		"Calls held for a person's approval (held) and their outcomes: approved, declined, withdrawn (the waiting "+
			"route's client left), expired (a decision came after the call expired).", "outcome")
	for _, o := range HeldOutcomes {
		m.heldCalls.WithLabelValues(o).Add(0)
	}
	m.redisUp = prometheus.NewGauge(prometheus.GaugeOpts{Name: "toolrouter_rate_limit_redis_up",
		Help: "1 when the rate limiter's Redis answered its last command, 0 when it did not."})
	m.usageDropped = prometheus.NewCounter(prometheus.CounterOpts{Name: "toolrouter_usage_dropped_total",
		Help: "Usage records dropped because the recorder's queue was full."})
	m.reg.MustRegister(m.requests, m.requestDuration, m.decisions, m.modelCalls, m.modelDuration, m.modelTokens, m.modelParts, m.modelCallTokens,
		m.confidence, m.toolCalls, m.toolDuration, m.rateLimited, m.heldCalls, m.redisUp, m.usageDropped,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.usageFileLost = prometheus.NewCounter(prometheus.CounterOpts{Name: "toolrouter_usage_file_lost_total",
		Help: "Times the usage SQLite file was found deleted or replaced while in use, and created again at usage.path."})
	m.reg.MustRegister(m.usageFileLost)
	if o.Inventory != nil {
		m.reg.MustRegister(inventoryCollector{o.Inventory})
	}
	if o.Notices != nil {
		m.reg.MustRegister(noticesCollector{o.Notices})
	}
	return m
}

// Handler serves the metrics in the Prometheus text (or negotiated) format. A collector that
// fails is reported in the response, and the others are still served.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, Registry: m.reg})
}

// RateLimited counts one request refused by a rate limit. level and limit must come from the
// limiter's closed sets (the level of the hierarchy, the kind of limit), never from a request.
func (m *Metrics) RateLimited(level, limit string) {
	m.rateLimited.WithLabelValues(level, limit).Inc()
}

// HeldOutcomes are the outcome labels of toolrouter_held_calls_total, a closed set.
var HeldOutcomes = []string{"held", "approved", "declined", "withdrawn", "expired"}

// HeldCall counts a call held for approval (outcome "held") or one of its outcomes; an outcome
// outside HeldOutcomes is not counted.
func (m *Metrics) HeldCall(outcome string) {
	if slices.Contains(HeldOutcomes, outcome) {
		m.heldCalls.WithLabelValues(outcome).Inc()
	}
}

// RedisUp sets whether the rate limiter's Redis is reachable.
func (m *Metrics) RedisUp(up bool) {
	v := 0.0
	if up {
		v = 1
	}
	m.redisUp.Set(v)
}

// UsageDropped counts one usage record the recorder dropped.
func (m *Metrics) UsageDropped() {
	m.usageDropped.Inc()
}

// UsageFileLost counts one time the usage recorder found its SQLite file deleted or replaced.
func (m *Metrics) UsageFileLost() {
	m.usageFileLost.Inc()
}

// Observe counts one served request: its route and status, its routing decision, every model
// call (the router's steps, the council's calls and the other calls of the report) and every tool
// call. It never blocks.
func (m *Metrics) Observe(_ context.Context, r *observe.Report) {
	route := r.Endpoint
	if route == "" {
		route = Other
	}
	m.requests.WithLabelValues(route, strconv.Itoa(r.Status)).Inc()
	m.requestDuration.WithLabelValues(route).Observe(r.Duration.Seconds())
	if out := r.Outcome; out != nil {
		m.routing(out)
	}
	if c := r.Council; c != nil {
		stage := func(phase, id, name, err string, u council.CallUsage) {
			m.modelCall(modelCall{phase: phase, model: modelID(id, name), failed: err != "", durationMS: u.DurationMS,
				prompt: u.PromptTokens, completion: u.CompletionTokens, breakdown: &u.Breakdown})
		}
		for _, a := range c.Stage1 {
			stage("stage1", a.ModelID, a.Model, a.Error, a.Usage)
		}
		for _, rv := range c.Stage2 {
			stage("stage2", rv.ModelID, rv.Model, rv.Error, rv.Usage)
		}
		if s := c.Stage3; s != nil {
			stage("stage3", s.ModelID, s.Model, s.Error, s.Usage)
		}
	}
	for _, mc := range r.ModelCalls {
		phase := mc.Phase
		if phase != "completion" {
			phase = Other
		}
		m.modelCall(modelCall{phase: phase, model: mc.Model, failed: mc.Err != "", durationMS: float64(mc.Duration.Microseconds()) / 1000,
			prompt: mc.PromptTokens, completion: mc.CompletionTokens, breakdown: &mc.Breakdown})
	}
}

// routing counts a routing's decision, model calls, selections' confidence and tool calls.
func (m *Metrics) routing(out *router.Outcome) {
	decision := "no_tool"
	if out.UseTool {
		decision = "tool"
	}
	m.decisions.WithLabelValues(decision, degraded(out.DegradedReason)).Inc()
	for _, s := range out.Trace {
		switch s.Kind {
		case router.StepSelect, router.StepArguments, router.StepNative:
			m.modelCall(modelCall{phase: string(s.Kind), model: s.Model, failed: s.Error != "", durationMS: s.DurationMS,
				prompt: s.PromptTokens, completion: s.CompletionTokens, breakdown: s.Breakdown})
		}
		if c := s.Confidence; s.Kind == router.StepSelect && c != nil {
			if c.Tool != nil {
				m.confidence.WithLabelValues("tool").Observe(*c.Tool)
			}
			if c.UseTool != nil {
				m.confidence.WithLabelValues("use_tool").Observe(*c.UseTool)
			}
		}
	}
	if len(out.Calls) == 0 {
		return
	}
	var snap *inventory.Snapshot
	if m.inv != nil {
		snap = m.inv.Snapshot()
	}
	for i := range out.Calls {
		c := &out.Calls[i]
		server, tool := toolLabels(snap, c.Server, c.Tool)
		m.toolCalls.WithLabelValues(server, tool, callOutcome(c)).Inc()
		if c.ReusedFrom == 0 && c.ExecuteMS > 0 {
			m.toolDuration.WithLabelValues(server).Observe(c.ExecuteMS / 1000)
		}
	}
}

// modelCall is one model call of a report, wherever the report holds it.
type modelCall struct {
	phase, model       string
	failed             bool
	durationMS         float64
	prompt, completion int
	// breakdown is the call's split of the server's time and its uncached prompt tokens; nil
	// when the report has none.
	breakdown *provider.Breakdown
}

// modelCall counts one model call: its outcome, wall time and tokens and, when the server
// reported the call's costs (a call cut short has none), its tokens per call and the parts of the
// server's time (when the server reports durations).
func (m *Metrics) modelCall(c modelCall) {
	phase, model := c.phase, c.model
	if !m.models[model] {
		model = Other
	}
	outcome := "ok"
	if c.failed {
		outcome = "error"
	}
	m.modelCalls.WithLabelValues(phase, model, outcome).Inc()
	m.modelDuration.WithLabelValues(phase, model).Observe(c.durationMS / 1000)
	if c.prompt > 0 {
		m.modelTokens.WithLabelValues(phase, model, "prompt").Add(float64(c.prompt))
	}
	if c.completion > 0 {
		m.modelTokens.WithLabelValues(phase, model, "completion").Add(float64(c.completion))
	}
	b := c.breakdown
	if b == nil {
		return
	}
	timed := b.LoadMS+b.PrefillMS+b.DecodeMS+b.RestMS > 0
	if c.prompt == 0 && c.completion == 0 && !timed {
		return // nothing reported: the call never finished
	}
	m.modelCallTokens.WithLabelValues(phase, model, "uncached_prompt").Observe(float64(b.UncachedTokens))
	m.modelCallTokens.WithLabelValues(phase, model, "decode").Observe(float64(c.completion))
	if !timed {
		return // a server that reports no durations (OpenAI-compatible): nothing to split
	}
	for _, p := range []struct {
		part string
		ms   float64
	}{{"load", b.LoadMS}, {"prefill", b.PrefillMS}, {"decode", b.DecodeMS}, {"rest", b.RestMS}} {
		m.modelParts.WithLabelValues(phase, model, p.part).Observe(p.ms / 1000)
	}
}

// modelID is a council call's model: the configured model, else the member's name.
func modelID(id, name string) string {
	if id != "" {
		return id
	}
	return name
}

// degraded is the label of a degraded reason: one of the router's, "none", or "other".
func degraded(r router.DegradedReason) string {
	switch r {
	case "":
		return "none"
	case router.DegradedModelFailure, router.DegradedUnknownTool, router.DegradedDeadline, router.DegradedPromptOverSize,
		router.DegradedLowConfidence:
		return string(r)
	}
	return Other
}

// toolLabels bounds a call's server and tool to the tools the inventory holds: a made-up tool
// (no server; its tool is the name the model made up) is "unknown", any other tool not in snap
// "other".
func toolLabels(snap *inventory.Snapshot, server, tool string) (string, string) {
	if server == "" {
		return Unknown, Unknown
	}
	if snap != nil {
		if t, ok := snap.Tool(inventory.Qualify(server, tool)); ok && t.Server == server && t.Name == tool {
			return server, tool
		}
	}
	return Other, Other
}

// callOutcome is the label of a call's outcome: ok, tool_error (the tool answered isError),
// reused (an identical earlier call answered it), or the call's error code.
func callOutcome(c *router.Call) string {
	switch {
	case c.Error != nil:
		switch c.Error.Code {
		case router.CodeInvalidArguments, router.CodeToolTimeout, router.CodeToolUnavailable, router.CodeToolFailed, router.CodeInvalidResult,
			router.CodeUnknownTool, router.CodeModelFailed, router.CodeDeadline:
			return c.Error.Code
		}
		return "error"
	case c.ReusedFrom > 0:
		return "reused"
	case c.Result == nil:
		return "not_run"
	case c.Result.IsError:
		return "tool_error"
	}
	return "ok"
}

// inventoryCollector reports each configured server's state and tool count at scrape time.
type inventoryCollector struct{ inv Inventory }

var (
	serverUpDesc = prometheus.NewDesc("toolrouter_server_up",
		"1 when the MCP server is connected and listed its tools, 0 when it is starting or down.", []string{"server"}, nil)
	inventoryToolsDesc = prometheus.NewDesc("toolrouter_inventory_tools",
		"Tools the MCP server lists in the inventory (those whose schema did not compile included).", []string{"server"}, nil)
	quarantinedDesc = prometheus.NewDesc("toolrouter_tools_quarantined",
		"Tools of the MCP server held back by safety.pin or safety.scan until an admin approves them.", []string{"server"}, nil)
	quarantinesDesc = prometheus.NewDesc("toolrouter_tool_quarantines_total",
		"Times a tool of the MCP server entered quarantine, by reason (pin_changed, pin_unverified, findings).", []string{"server", "reason"}, nil)
	pinChangedDesc = prometheus.NewDesc("toolrouter_tools_pin_changed",
		"Tools of the MCP server whose definitions differ from their pins (safety.pin), quarantined or not.", []string{"server"}, nil)
	findingsDesc = prometheus.NewDesc("toolrouter_tool_findings",
		"What safety.scan found in the MCP server's tool definitions at its last listing.", []string{"server"}, nil)
)

func (inventoryCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- serverUpDesc
	ch <- inventoryToolsDesc
	ch <- quarantinedDesc
	ch <- quarantinesDesc
	ch <- pinChangedDesc
	ch <- findingsDesc
}

func (c inventoryCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.inv.Snapshot().Servers {
		up := 0.0
		if s.Status == inventory.StateUp {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(serverUpDesc, prometheus.GaugeValue, up, s.Name)
		ch <- prometheus.MustNewConstMetric(inventoryToolsDesc, prometheus.GaugeValue, float64(len(s.Tools)), s.Name)
		ch <- prometheus.MustNewConstMetric(quarantinedDesc, prometheus.GaugeValue, float64(len(s.Quarantined)), s.Name)
		for _, r := range inventory.Reasons() {
			ch <- prometheus.MustNewConstMetric(quarantinesDesc, prometheus.CounterValue, float64(s.Quarantines.ByReason(r)), s.Name, string(r))
		}
		ch <- prometheus.MustNewConstMetric(pinChangedDesc, prometheus.GaugeValue, float64(len(s.PinChanged)), s.Name)
		ch <- prometheus.MustNewConstMetric(findingsDesc, prometheus.GaugeValue, float64(len(s.Findings)), s.Name)
	}
}
