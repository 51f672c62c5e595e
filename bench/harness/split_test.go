package harness

import (
	"math"
	"strings"
	"testing"
	"time"

	"toolrouter/bench/report"
	"toolrouter/provider"
	"toolrouter/router"
)

// modelStep is a model call's trace step from start to end ms with the server's load, prefill and
// decode.
func modelStep(start, end, load, prefill, decode float64) router.Step {
	return router.Step{Kind: router.StepSelect, StartMS: start, DurationMS: end - start,
		Breakdown: &provider.Breakdown{LoadMS: load, PrefillMS: prefill, DecodeMS: decode}}
}

func toolStep(start, end float64) router.Step {
	return router.Step{Kind: router.StepExecute, StartMS: start, DurationMS: end - start}
}

// TestSplitTime: a case's wall time splits into the model's server parts and the rest of its
// calls, the tools outside model calls and the sidecar, overlapping calls counted once.
func TestSplitTime(t *testing.T) {
	tests := []struct {
		name  string
		trace []router.Step
		wall  float64
		want  report.TimeSplit
	}{
		{"one call each, in turn", []router.Step{modelStep(1, 11, 1, 2, 5), toolStep(12, 15), modelStep(16, 20, 0, 1, 2)}, 22,
			report.TimeSplit{LoadMS: 1, PrefillMS: 3, DecodeMS: 7, RestMS: 3, ToolsMS: 3, SidecarMS: 5}},
		{"parallel model calls: the server's figures scaled to the wall they cover", []router.Step{modelStep(0, 10, 0, 4, 6), modelStep(0, 10, 0, 4, 6)}, 10,
			report.TimeSplit{PrefillMS: 4, DecodeMS: 6}},
		{"parallel tools, one overlapping a model call", []router.Step{toolStep(0, 4), toolStep(2, 6), modelStep(5, 8, 0, 1, 1)}, 10,
			report.TimeSplit{PrefillMS: 1, DecodeMS: 1, RestMS: 1, ToolsMS: 5, SidecarMS: 2}},
		{"notes are the sidecar's", []router.Step{{Kind: router.StepTrim, StartMS: 1}, {Kind: router.StepShortlist, StartMS: 2}}, 3,
			report.TimeSplit{SidecarMS: 3}},
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := splitTime(&router.Outcome{Trace: tc.trace}, time.Duration(tc.wall*float64(time.Millisecond)))
			w := tc.want
			if !near(got.LoadMS, w.LoadMS) || !near(got.PrefillMS, w.PrefillMS) || !near(got.DecodeMS, w.DecodeMS) || !near(got.RestMS, w.RestMS) ||
				!near(got.ToolsMS, w.ToolsMS) || !near(got.SidecarMS, w.SidecarMS) {
				t.Errorf("got %+v, want %+v", got, w)
			}
			if !near(got.TotalMS(), tc.wall) {
				t.Errorf("the parts add up to %v ms, want the wall time %v", got.TotalMS(), tc.wall)
			}
		})
	}
}

// TestCheckModelFields: -check wants a model router's line to carry its tokens and a time split
// that adds up.
func TestCheckModelFields(t *testing.T) {
	all := map[string]bool{}
	for _, k := range modelFields {
		all[k] = true
	}
	good := CaseRecord{LatencyMS: 100, ModelCalls: 2, PromptTokens: 50, DecodeTokens: 8, UncachedPromptTokens: 20,
		TimeSplit: report.TimeSplit{PrefillMS: 20, DecodeMS: 60, RestMS: 5, ToolsMS: 10, SidecarMS: 5}}
	tests := []struct {
		name string
		keys map[string]bool
		edit func(r *CaseRecord)
		want string // part of the one problem; "" for none
	}{
		{"complete", all, nil, ""},
		{"fields missing", map[string]bool{"decode_tokens": true}, nil, "no uncached_prompt_tokens, load_ms"},
		{"negative", all, func(r *CaseRecord) { r.RestMS, r.SidecarMS = -1, 11 }, "negative"},
		{"more uncached than prompt tokens", all, func(r *CaseRecord) { r.UncachedPromptTokens = 51 }, "51 uncached prompt tokens of 50"},
		{"model calls in no time", all, func(r *CaseRecord) { r.TimeSplit = report.TimeSplit{SidecarMS: 100} }, "2 model calls in no model time"},
		{"not adding up", all, func(r *CaseRecord) { r.SidecarMS = 50 }, "adds up to 145.000 ms, the latency is 100.000 ms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := good
			if tc.edit != nil {
				tc.edit(&r)
			}
			got := checkModelFields(tc.keys, r)
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("got problems %q, want none", got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Errorf("got problems %q, want one naming %q", got, tc.want)
			}
		})
	}
}
