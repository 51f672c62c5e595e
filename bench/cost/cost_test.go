package cost

import (
	"reflect"
	"testing"
	"time"

	"toolrouter/provider"
	"toolrouter/router"
)

// sel is a phase-1 trace step of round with the server's counters.
func sel(round, prompt, uncached, decode int, restMS, decodeMS float64) router.Step {
	return router.Step{Kind: router.StepSelect, Round: round, PromptTokens: prompt, CompletionTokens: decode,
		Breakdown: &provider.Breakdown{RestMS: restMS, DecodeMS: decodeMS, UncachedTokens: uncached, PrefillMS: 1, LoadMS: 2}}
}

// continued is s as a continued answer (router.prefill): it took calls model calls and ms.
func continued(s router.Step, ms float64, calls int) router.Step {
	s.DurationMS, s.ModelCalls = ms, calls
	return s
}

// args is a phase-2 step, which no figure of phase 1 may take in.
func args(round int) router.Step {
	return router.Step{Kind: router.StepArguments, Round: round, PromptTokens: 999, CompletionTokens: 999,
		Breakdown: &provider.Breakdown{RestMS: 999, UncachedTokens: 999}}
}

func outcome(rounds, calls int, totalMS float64, degraded string, steps ...router.Step) *router.Outcome {
	return &router.Outcome{Rounds: rounds, Usage: router.Usage{LLMCalls: calls}, Timings: router.Timings{Total: totalMS},
		Degraded: degraded, Trace: steps}
}

func TestSummariseSetting(t *testing.T) {
	tests := []struct {
		name   string
		routes []Route
		want   Setting
	}{
		{
			name: "two routes of two rounds",
			routes: []Route{
				{Outcome: outcome(2, 4, 100, "", sel(1, 100, 100, 10, 4, 0), args(1), sel(2, 150, 30, 6, 8, 0)),
					Wall: 150 * time.Millisecond, Answers: []Answer{{TextTokens: 6}, {TextTokens: 3}}},
				{Outcome: outcome(2, 2, 300, "", sel(1, 100, 20, 14, 6, 0), args(1), sel(2, 150, 0, 2, 10, 0)),
					Wall: 350 * time.Millisecond, Answers: []Answer{{TextTokens: 8}, {TextTokens: 1}}},
			},
			want: Setting{Reasoning: router.ReasoningBrief, Routes: 2, SelectRounds: 2, ModelCalls: 3, RouteMS: 200, WallMS: 250,
				FirstCalls: 2, FirstDecode: 12, FirstModelCall: 1, Arguments: 2, ArgumentsDecode: 999, ArgumentsCalls: 1,
				Rounds: []Round{
					{Round: 1, Calls: 2, DecodeTokens: 24, TextTokens: 14, PromptTokens: 200, UncachedTokens: 120, RestMSSum: 10,
						MeanDecode: 12, MeanText: 7, MeanRestMS: 5, UncachedPct: 60},
					{Round: 2, Calls: 2, DecodeTokens: 8, TextTokens: 4, PromptTokens: 300, UncachedTokens: 30, RestMSSum: 18,
						MeanDecode: 4, MeanText: 2, MeanRestMS: 9, UncachedPct: 10},
				}},
		},
		{
			name: "a round one route does not reach, a call without counters, a degraded route",
			routes: []Route{
				{Outcome: outcome(2, 3, 40, "", continued(sel(1, 50, 50, 5, 1, 0), 12, 4), sel(2, 80, 40, 3, 3, 0)),
					Wall: 40 * time.Millisecond, Answers: []Answer{{TextTokens: 2}, {TextTokens: 1}}},
				{Outcome: outcome(2, 2, 20, "model failed: unreachable", sel(1, 50, 0, 7, 3, 0),
					router.Step{Kind: router.StepSelect, Round: 2, Error: "unreachable"}),
					Wall: 20 * time.Millisecond, Answers: []Answer{{TextTokens: 4}, {}}},
				{Outcome: outcome(1, 1, 30, "model failed: garbage", sel(1, 50, 0, 9, 5, 0)),
					Wall: 30 * time.Millisecond, Answers: []Answer{{TextTokens: 6}}},
			},
			want: Setting{Reasoning: router.ReasoningBrief, Routes: 3, Degraded: 2, FirstDegraded: "model failed: unreachable",
				SelectRounds: 5.0 / 3, ModelCalls: 2, RouteMS: 30, WallMS: 30, FirstCalls: 3, FirstDecode: 7, FirstMS: 4, FirstModelCall: 2,
				Rounds: []Round{
					{Round: 1, Calls: 3, DecodeTokens: 21, TextTokens: 12, PromptTokens: 150, UncachedTokens: 50, RestMSSum: 9,
						MeanDecode: 7, MeanText: 4, MeanRestMS: 3, UncachedPct: 100.0 / 3},
					{Round: 2, Calls: 1, DecodeTokens: 3, TextTokens: 1, PromptTokens: 80, UncachedTokens: 40, RestMSSum: 3,
						MeanDecode: 3, MeanText: 1, MeanRestMS: 3, UncachedPct: 50},
				}},
		},
		{
			name: "no routes",
			want: Setting{Reasoning: router.ReasoningBrief},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := SummariseSetting(router.ReasoningBrief, tc.routes)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v,\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestSummariseSize(t *testing.T) {
	tests := []struct {
		name   string
		routes []Route
		want   Size
	}{
		{
			name: "two routes",
			routes: []Route{
				{Outcome: outcome(1, 2, 0, "", sel(1, 1000, 40, 10, 20, 300), args(1)), Answers: []Answer{{FormatBytes: 500}}},
				{Outcome: outcome(1, 2, 0, "", sel(1, 1200, 60, 30, 40, 600), args(1)), Answers: []Answer{{FormatBytes: 700}}},
			},
			want: Size{Tools: 30, Routes: 2, Calls: 2, PromptTokens: 2200, DecodeTokens: 40, FormatBytes: 1200, RestMSSum: 60, DecodeMSSum: 900,
				MeanPrompt: 1100, MeanDecode: 20, MeanFormatBytes: 600, MeanRestMS: 30, DecodeMSPerToken: 22.5},
		},
		{
			name: "nothing decoded",
			routes: []Route{
				{Outcome: outcome(1, 1, 0, "model failed: empty answer", sel(1, 900, 900, 0, 12, 0)), Answers: []Answer{{FormatBytes: 400}}},
			},
			want: Size{Tools: 30, Routes: 1, Degraded: 1, FirstDegraded: "model failed: empty answer", Calls: 1, PromptTokens: 900,
				FormatBytes: 400, RestMSSum: 12, MeanPrompt: 900, MeanFormatBytes: 400, MeanRestMS: 12},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := SummariseSize(30, tc.routes)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v,\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestSummariseGenerated: the calls' counters add up, the means are per call, decode ms per token
// is over the decoded tokens, and rest is what load, prefill and decode leave of the total.
func TestSummariseGenerated(t *testing.T) {
	call := func(prompt, decode int, decodeMS, totalMS, wallMS float64) metered {
		var m metered
		m.final.Metrics.PromptEvalCount, m.final.Metrics.EvalCount = prompt, decode
		m.final.Metrics.EvalDuration = time.Duration(decodeMS * float64(time.Millisecond))
		m.final.Metrics.PromptEvalDuration = 10 * time.Millisecond
		m.final.Metrics.TotalDuration = time.Duration(totalMS * float64(time.Millisecond))
		m.wall = time.Duration(wallMS * float64(time.Millisecond))
		return m
	}
	g := summariseGenerated(5, 3, 2, []metered{call(180, 10, 100, 150, 160), call(190, 30, 300, 350, 370)})
	want := Generated{PerTool: 5, Tools: 3, Written: 2, Calls: 2, PromptTokens: 370, DecodeTokens: 40, DecodeMSSum: 400,
		RestMSSum: 80, WallMSSum: 530, MeanPrompt: 185, MeanDecode: 20, MeanRestMS: 40, MeanWallMS: 265, DecodeMSPerToken: 10}
	if g != want {
		t.Errorf("got %+v\nwant %+v", g, want)
	}
}

// TestSummariseParts: a route's model calls split by kind, an arguments step for a call that
// already had one counted as a repair, steps without the server's counters left out, means per
// route.
func TestSummariseParts(t *testing.T) {
	argsOf := func(round, call, decode int, ms float64) router.Step {
		return router.Step{Kind: router.StepArguments, Round: round, Call: call, CompletionTokens: decode, DurationMS: ms, ModelCalls: 2,
			PromptTokens: 100, Breakdown: &provider.Breakdown{DecodeMS: ms / 2, RestMS: 1, UncachedTokens: 10}}
	}
	routes := []Route{
		{Outcome: outcome(2, 0, 0, "", continued(sel(1, 1000, 10, 9, 4, 200), 300, 4), argsOf(1, 1, 4, 100),
			continued(sel(2, 1200, 200, 9, 4, 200), 300, 4), argsOf(2, 2, 18, 200), argsOf(2, 2, 18, 200),
			router.Step{Kind: router.StepSelect, Round: 3, Error: "unreachable"})},
		{Outcome: outcome(1, 0, 0, "", continued(sel(1, 1000, 30, 9, 6, 100), 100, 4), argsOf(1, 1, 4, 300))},
	}
	got := SummariseParts(routes)
	want := []Part{
		{Name: PartFirstSelect, Answers: 1, ModelCalls: 4, DecodeTokens: 9, PromptTokens: 1000, UncachedTokens: 20, LoadMS: 2, PrefillMS: 1, DecodeMS: 150, RestMS: 5, MS: 200},
		{Name: PartLaterSelect, Answers: 0.5, ModelCalls: 2, DecodeTokens: 4.5, PromptTokens: 600, UncachedTokens: 100, LoadMS: 1, PrefillMS: 0.5, DecodeMS: 100, RestMS: 2, MS: 150},
		{Name: PartArguments, Answers: 1.5, ModelCalls: 3, DecodeTokens: 13, PromptTokens: 150, UncachedTokens: 15, DecodeMS: 150, RestMS: 1.5, MS: 300},
		{Name: PartRepairs, Answers: 0.5, ModelCalls: 1, DecodeTokens: 9, PromptTokens: 50, UncachedTokens: 5, DecodeMS: 50, RestMS: 0.5, MS: 100},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v,\nwant %+v", got, want)
	}
}
