// Package report holds the benchmark's results and writes them: results.json (everything, counts
// included so any figure can be recomputed), a markdown table per dataset, and an SVG chart of
// accuracy against median latency drawn by hand. It computes no metric itself beyond turning
// counts into ratios.
package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"toolrouter/bench/metrics"
)

// Status says what a row is.
type Status string

// Row statuses.
const (
	// Measured rows are real measurements.
	Measured Status = "measured"
	// Plumbing rows ran against the fake model: they check the harness, they measure no model.
	Plumbing Status = "plumbing"
	// RandomWeights rows ran against a model with random weights: like plumbing rows they check the
	// harness and the model server, they measure no model.
	RandomWeights Status = "random weights"
	// Skipped rows needed a model server that was not there.
	Skipped Status = "skipped"
	// Unavailable rows are routers the project does not have yet.
	Unavailable Status = "not yet available"
)

// RandomWeightsLabel marks every row, line and report of a random-weight model.
const RandomWeightsLabel = "random weights: not an accuracy figure"

// Results is one run of the benchmark.
type Results struct {
	Command string    `json:"command"`
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	Machine Machine   `json:"machine"`
	Seed    uint64    `json:"seed"`
	Limit   int       `json:"limit"`
	Model   Model     `json:"model"`
	// CaseTimeout bounds one router's work on one case ("" for none).
	CaseTimeout string `json:"case_timeout,omitempty"`
	// Resumed counts the answers taken from an earlier, interrupted run's per-case file.
	Resumed  int       `json:"resumed,omitempty"`
	Datasets []Dataset `json:"datasets"`
	Rows     []Row     `json:"rows"`
	// Tuning describes in one line how the thresholds were tuned ("" when no thresholded router ran).
	Tuning     string      `json:"tuning,omitempty"`
	Thresholds []Threshold `json:"thresholds"`
}

// Machine describes where the run happened.
type Machine struct {
	GoVersion string `json:"go"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	CPUs      int    `json:"cpus"`
}

// Model is the model server the model rows used, or why they did not run.
type Model struct {
	URL    string `json:"url"`
	Name   string `json:"name"`
	Status string `json:"status"`
}

// Dataset describes one dataset as run.
type Dataset struct {
	Name     string   `json:"name"`
	Family   string   `json:"family"`
	Source   string   `json:"source"`
	Cases    int      `json:"cases"`
	NeedTool int      `json:"need_tool"`
	NoTool   int      `json:"no_tool"`
	Notes    []string `json:"notes,omitempty"`
}

// Threshold is one "no tool" score threshold of a source (a dataset family: "bfcl", "metatool",
// "scenarios"), chosen on the source's other folds and applied to this fold.
type Threshold struct {
	Source string  `json:"source"`
	Router string  `json:"router"`
	Fold   int     `json:"fold"`
	Value  float64 `json:"value"`
	// TunedOn is the number of cases of the other folds it was chosen on; AppliedTo the cases of
	// this fold it decided.
	TunedOn   int `json:"tuned_on"`
	AppliedTo int `json:"applied_to"`
	// OneLabel says the other folds held one tool-use label only: no threshold was learned, Value
	// is 0 and any match uses a tool.
	OneLabel bool `json:"one_label,omitempty"`
}

// Row is one router on one dataset. Counts are always filled for measured, plumbing and
// random-weight rows;
// ratios are nil where undefined (no case to divide by, or a router that writes no arguments).
type Row struct {
	Dataset string `json:"dataset"`
	// Router names the run: the router, with its router.reasoning setting when that is not the
	// shipped one ("two-phase (reasoning brief)").
	Router string `json:"router"`
	// Reasoning is the run's router.reasoning, for the routers that select with phase 1.
	Reasoning string `json:"reasoning,omitempty"`
	Status    Status `json:"status"`
	// Reason explains a skipped, unavailable or plumbing row.
	Reason string `json:"reason,omitempty"`
	Cases  int    `json:"cases"`

	Decision  metrics.Confusion `json:"decision"`
	Precision *float64          `json:"precision"`
	Recall    *float64          `json:"recall"`
	F1        *float64          `json:"f1"`

	// Selection: tool-needing cases with a labeled tool where exactly the right tools were called.
	Selection         metrics.Ratio `json:"selection"`
	SelectionAccuracy *float64      `json:"selection_accuracy"`
	// Arguments: cases with the right tools and labeled arguments where the arguments pass BFCL's
	// checker; nil for routers that write no arguments.
	Arguments        *metrics.Ratio `json:"arguments"`
	ArgumentAccuracy *float64       `json:"argument_accuracy"`
	// Routing: every case, right when no tool was used for a no-tool case, or exactly the right
	// tools for a tool case (a tool case without a tool label: any tool).
	Routing         metrics.Ratio `json:"routing"`
	RoutingAccuracy *float64      `json:"routing_accuracy"`
	// EndToEnd: Routing, every call executed and returned without error, and the arguments right
	// where they are labeled; nil for routers that execute no calls (the model-free ones).
	EndToEnd         *metrics.Ratio `json:"end_to_end"`
	EndToEndAccuracy *float64       `json:"end_to_end_accuracy"`

	// Ranking (thresholded routers): tool cases with a labeled tool whose top-ranked tool is right,
	// whatever the threshold; it separates retrieval from the "no tool" decision.
	Ranking         *metrics.Ratio `json:"ranking,omitempty"`
	RankingAccuracy *float64       `json:"ranking_accuracy,omitempty"`

	Latency Latency `json:"latency_ms"`
	// ModelCalls and PromptTokens are totals; the per-query figures are nil for model-free routers.
	ModelCalls           int      `json:"model_calls"`
	PromptTokens         int      `json:"prompt_tokens"`
	ModelCallsPerQuery   *float64 `json:"model_calls_per_query"`
	PromptTokensPerQuery *float64 `json:"prompt_tokens_per_query"`
	// QPS is queries per second of one goroutine (model-free routers): cases / summed latency.
	QPS *float64 `json:"queries_per_second"`
	// DecodeTokens and UncachedPromptTokens are totals: the tokens the model generated, and the
	// prompt tokens it evaluated (not served from its prompt cache; all of them where the server
	// does not say). Their per-query figures, like Time, are nil for model-free routers.
	DecodeTokens                 int      `json:"decode_tokens"`
	UncachedPromptTokens         int      `json:"uncached_prompt_tokens"`
	DecodeTokensPerQuery         *float64 `json:"decode_tokens_per_query"`
	UncachedPromptTokensPerQuery *float64 `json:"uncached_prompt_tokens_per_query"`
	// Time is where a query's wall time went, the mean over the cases (model routers).
	Time *TimeSplit `json:"time_per_query_ms,omitempty"`
	// Confidence is phase 1's mean confidence (routers that select with phase 1, against a model
	// server that sends logprobs); nil when no answer carries it.
	Confidence *Confidence `json:"confidence,omitempty"`

	// Degraded counts answers where the model failed and the router fell back (fewer tool results
	// than asked for, usually none). They are right by no measure.
	Degraded int `json:"degraded"`
	// DegradedBy counts the degraded answers by the router's reason ("model_failure",
	// "prompt_over_window", "unknown_tool", "deadline").
	DegradedBy map[string]int `json:"degraded_by,omitempty"`
	// TimedOut counts answers cancelled at the case timeout. They are right by no measure, and the
	// decision counts them with the degraded ones (no decision).
	TimedOut int `json:"timed_out"`
	// Calls counts calls in the outcomes, Failed those that did not run or returned an error,
	// Executed those that reached the tool, Recorded those the benchmark's own MCP handlers saw;
	// Mismatches counts calls whose arguments differ between the outcome and the handler.
	Calls      int `json:"calls"`
	Failed     int `json:"failed"`
	Executed   int `json:"executed"`
	Recorded   int `json:"recorded"`
	Mismatches int `json:"mismatches"`
}

// Confidence is phase 1's mean confidence in its first selection over a row's answers, each
// figure over the answers that carry it: UseTool for the decision to use a tool, Tool for the
// choice of tools (an answer without a tool has none).
type Confidence struct {
	UseTool        *float64 `json:"use_tool"`
	UseToolAnswers int      `json:"use_tool_answers"`
	Tool           *float64 `json:"tool"`
	ToolAnswers    int      `json:"tool_answers"`
}

// TimeSplit is where wall time went, in milliseconds: the model calls' load, prefill and decode
// (as the model server reported them), the rest of the model calls' wall time (the server's other
// work, waiting for a slot, the transport), the tool calls' outside any model call, and the
// sidecar's own time, when neither a model call nor a tool call ran. The six add up to the wall
// time. Model calls that overlap count once: their server figures are scaled down to the wall time
// the calls cover.
type TimeSplit struct {
	LoadMS    float64 `json:"load_ms"`
	PrefillMS float64 `json:"prefill_ms"`
	DecodeMS  float64 `json:"decode_ms"`
	RestMS    float64 `json:"rest_ms"`
	ToolsMS   float64 `json:"tools_ms"`
	SidecarMS float64 `json:"sidecar_ms"`
}

// Add adds o to t.
func (t *TimeSplit) Add(o TimeSplit) {
	t.LoadMS += o.LoadMS
	t.PrefillMS += o.PrefillMS
	t.DecodeMS += o.DecodeMS
	t.RestMS += o.RestMS
	t.ToolsMS += o.ToolsMS
	t.SidecarMS += o.SidecarMS
}

// Scaled returns t with every part multiplied by f.
func (t TimeSplit) Scaled(f float64) TimeSplit {
	return TimeSplit{LoadMS: t.LoadMS * f, PrefillMS: t.PrefillMS * f, DecodeMS: t.DecodeMS * f, RestMS: t.RestMS * f,
		ToolsMS: t.ToolsMS * f, SidecarMS: t.SidecarMS * f}
}

// ModelMS is the model calls' part: load, prefill, decode and rest.
func (t TimeSplit) ModelMS() float64 { return t.LoadMS + t.PrefillMS + t.DecodeMS + t.RestMS }

// TotalMS is the wall time the parts add up to.
func (t TimeSplit) TotalMS() float64 { return t.ModelMS() + t.ToolsMS + t.SidecarMS }

// Latency holds per-query latency in milliseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Mean float64 `json:"mean"`
	Max  float64 `json:"max"`
}

// LatencyOf converts a summary to milliseconds.
func LatencyOf(l metrics.Latency) Latency {
	ms := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
	return Latency{P50: ms(l.P50), P95: ms(l.P95), P99: ms(l.P99), Mean: ms(l.Mean), Max: ms(l.Max)}
}

// Fill computes the ratios from the counts.
func (r *Row) Fill() {
	r.Precision = ptr(r.Decision.Precision())
	r.Recall = ptr(r.Decision.Recall())
	r.F1 = ptr(r.Decision.F1())
	r.SelectionAccuracy = ptr(r.Selection.Value())
	r.RoutingAccuracy = ptr(r.Routing.Value())
	r.ArgumentAccuracy, r.EndToEndAccuracy = nil, nil
	if r.Arguments != nil {
		r.ArgumentAccuracy = ptr(r.Arguments.Value())
	}
	if r.EndToEnd != nil {
		r.EndToEndAccuracy = ptr(r.EndToEnd.Value())
	}
	r.RankingAccuracy = nil
	if r.Ranking != nil {
		r.RankingAccuracy = ptr(r.Ranking.Value())
	}
}

func ptr(v float64, ok bool) *float64 {
	if !ok {
		return nil
	}
	return &v
}

// Float returns a pointer to v, for the optional figures.
func Float(v float64) *float64 { return &v }

// Write writes results.json, results.md and chart.svg into dir and returns the markdown.
func Write(dir string, res *Results) (markdown string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating output folder: %w", err)
	}
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encoding results: %w", err)
	}
	markdown = Markdown(res)
	files := map[string][]byte{
		"results.json": append(js, '\n'),
		"results.md":   []byte(markdown),
		"chart.svg":    []byte(SVG(res)),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return "", fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return markdown, nil
}
