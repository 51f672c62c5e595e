// Package cost measures what a route costs on a real model server, from the router's own outcome:
// every phase-1 call's trace step carries the server's counters (decode and prompt tokens, load,
// prefill, decode and the rest of its time, the prompt tokens not served from its cache), and the
// trajectory record of the same call its answer text and format. It routes queries with
// router.New over in-process MCP servers (the built-in calculator and clock; BFCL functions by
// the hundred) and turns the outcomes into per-round and per-size figures and their markdown.
//
// It judges no answer: it measures the server, so a random-weight model's figures are allowed,
// labelled as such. It owns no document: the bench command writes the section.
package cost

import (
	"time"

	"toolrouter/bench/report"
	"toolrouter/router"
)

// Results is one run of the cost benchmark.
type Results struct {
	Command string         `json:"command"`
	Started time.Time      `json:"started"`
	Seconds float64        `json:"seconds"`
	Machine report.Machine `json:"machine"`
	// LoadStart and LoadEnd are the machine's one-minute load average at the start and the end
	// (-1: unknown).
	LoadStart float64      `json:"load_start"`
	LoadEnd   float64      `json:"load_end"`
	Model     report.Model `json:"model"`
	// ServerVersion is the version the server reports (/api/version).
	ServerVersion string `json:"server_version"`
	// TokenizerModel is the model whose tokenizer counted the answers' text.
	TokenizerModel string `json:"tokenizer_model"`
	// RandomWeights says the model's weights are random: the figures measure the server only.
	RandomWeights bool     `json:"random_weights"`
	Queries       []string `json:"queries"`
	// RoundsReps is the routes per reasoning setting, Reps the routes per inventory size (each
	// after one warm-up route that is not counted).
	RoundsReps int       `json:"rounds_reps"`
	Reps       int       `json:"reps"`
	Settings   []Setting `json:"settings"`
	Sizes      []Size    `json:"sizes"`
	// OneTool are routes with a budget of one tool call, prefill on then off (empty: not measured).
	OneTool []Setting `json:"one_tool,omitempty"`
	// Arguments is phase 2 on BFCL's schemas, prefill on then off (empty: not measured).
	Arguments []Arguments `json:"arguments,omitempty"`
	// Generated is the cost of writing example queries per tool (nil: not measured).
	Generated *Generated `json:"generated,omitempty"`
}

// Route is one measured route: the router's outcome, the wall time around Router.Route, and what
// the trajectory says of each phase-1 call, in the order of the trace's select steps.
type Route struct {
	Outcome *router.Outcome
	Wall    time.Duration
	Answers []Answer
}

// Answer is one phase-1 call as its trajectory record holds it.
type Answer struct {
	// Text is the model's raw answer.
	Text string
	// TextTokens are Text's tokens by the model's tokenizer, counted on the server.
	TextTokens int
	// FormatBytes is the size of the format schema sent.
	FormatBytes int
}

// Setting is the cost of routes under one router.reasoning setting.
type Setting struct {
	Reasoning router.Reasoning `json:"reasoning"`
	// Prefill is router.prefill: the router writes what the format fixes, the model the values.
	Prefill bool `json:"prefill"`
	Routes  int  `json:"routes"`
	// SameSelections of Pairs routes (the same query with prefill on and off, one after the other)
	// made the same first selection; SameArguments of those also wrote the same round-1 arguments.
	SameSelections int `json:"same_selections"`
	SameArguments  int `json:"same_arguments"`
	Pairs          int `json:"pairs"`
	// First is round 1's phase-1 answer (every model call it took): mean decode tokens and ms
	// (the select step's time: its calls' wall times added).
	FirstCalls     int     `json:"first_calls"`
	FirstDecode    float64 `json:"first_decode_tokens"`
	FirstMS        float64 `json:"first_ms"`
	FirstModelCall float64 `json:"first_model_calls"`
	// Arguments are phase 2's answers (repairs included), means per answer.
	Arguments       int     `json:"arguments"`
	ArgumentsDecode float64 `json:"arguments_decode_tokens"`
	ArgumentsMS     float64 `json:"arguments_ms"`
	ArgumentsCalls  float64 `json:"arguments_model_calls"`
	// Degraded counts the routes the router reported degraded; FirstDegraded says why the first was.
	Degraded      int    `json:"degraded"`
	FirstDegraded string `json:"first_degraded,omitempty"`
	// Rounds are phase 1's figures by selection round, in round order.
	Rounds []Round `json:"rounds"`
	// SelectRounds, ModelCalls, RouteMS (the outcome's Timings.Total) and WallMS are means per route.
	SelectRounds float64 `json:"select_rounds"`
	ModelCalls   float64 `json:"model_calls"`
	RouteMS      float64 `json:"route_ms"`
	WallMS       float64 `json:"wall_ms"`
	// Parts split the routes' model calls by kind (SummariseParts), means per route.
	Parts []Part `json:"parts,omitempty"`
}

// Round is phase 1's cost in one selection round, over every route of a setting. The sums are
// kept beside the means so any figure can be recomputed.
type Round struct {
	Round int `json:"round"`
	// Calls counts the round's phase-1 calls that the server answered with its counters.
	Calls          int     `json:"calls"`
	DecodeTokens   int     `json:"decode_tokens"`
	TextTokens     int     `json:"text_tokens"`
	PromptTokens   int     `json:"prompt_tokens"`
	UncachedTokens int     `json:"uncached_prompt_tokens"`
	RestMSSum      float64 `json:"rest_ms_sum"`
	// MeanDecode, MeanText and MeanRestMS are per call; UncachedPct is 100 × uncached / prompt tokens.
	MeanDecode  float64 `json:"mean_decode_tokens"`
	MeanText    float64 `json:"mean_text_tokens"`
	MeanRestMS  float64 `json:"mean_rest_ms"`
	UncachedPct float64 `json:"uncached_pct"`
}

// Size is phase 1's cost over an inventory of Tools tools.
type Size struct {
	Tools int `json:"tools"`
	// Prefill is router.prefill.
	Prefill       bool   `json:"prefill"`
	Routes        int    `json:"routes"`
	Degraded      int    `json:"degraded"`
	FirstDegraded string `json:"first_degraded,omitempty"`
	// Calls counts the phase-1 calls the server answered with its counters.
	Calls        int     `json:"calls"`
	PromptTokens int     `json:"prompt_tokens"`
	DecodeTokens int     `json:"decode_tokens"`
	FormatBytes  int     `json:"format_bytes"`
	RestMSSum    float64 `json:"rest_ms_sum"`
	DecodeMSSum  float64 `json:"decode_ms_sum"`
	// Means per call, and DecodeMSPerToken = decode ms over decode tokens.
	MeanPrompt       float64 `json:"mean_prompt_tokens"`
	MeanDecode       float64 `json:"mean_decode_tokens"`
	MeanFormatBytes  float64 `json:"mean_format_bytes"`
	MeanRestMS       float64 `json:"mean_rest_ms"`
	DecodeMSPerToken float64 `json:"decode_ms_per_token"`
}

// Arguments is phase 2's cost on BFCL's schemas: each function's question routed naming the
// function (phase 1 skipped), with router.prefill on or off.
type Arguments struct {
	Tools   int  `json:"tools"`
	Prefill bool `json:"prefill"`
	Routes  int  `json:"routes"`
	// Answers are phase 2's answers (repairs included); Continued those written value by value
	// (a format fixed but for its values); Invalid the calls whose arguments stayed invalid.
	Answers   int `json:"answers"`
	Continued int `json:"continued"`
	Invalid   int `json:"invalid"`
	// Means per answer: decode tokens, model calls and ms (the calls' times added).
	MeanDecode float64 `json:"mean_decode_tokens"`
	MeanCalls  float64 `json:"mean_model_calls"`
	MeanMS     float64 `json:"mean_ms"`
}

// SummariseArguments aggregates the routes of the phase-2 part.
func SummariseArguments(n int, routes []Route) Arguments {
	a := Arguments{Tools: n, Routes: len(routes)}
	for _, r := range routes {
		for _, c := range r.Outcome.Calls {
			if c.Error != nil && c.Error.Code == router.CodeInvalidArguments {
				a.Invalid++
			}
		}
		for _, st := range r.Outcome.Trace {
			if st.Kind != router.StepArguments || st.Breakdown == nil {
				continue
			}
			a.Answers++
			if st.ModelCalls > 1 {
				a.Continued++
			}
			a.MeanDecode += float64(st.CompletionTokens)
			a.MeanCalls += float64(max(st.ModelCalls, 1))
			a.MeanMS += st.DurationMS
		}
	}
	if a.Answers > 0 {
		n := float64(a.Answers)
		a.MeanDecode, a.MeanCalls, a.MeanMS = a.MeanDecode/n, a.MeanCalls/n, a.MeanMS/n
	}
	return a
}

// phase1 pairs a route's select steps that carry the server's counters with their answers.
type phase1 struct {
	step   router.Step
	answer Answer
}

// phase1Calls lists a route's phase-1 calls the server answered with its counters, in trace
// order, each with the answer of the same index (a zero Answer where the trajectory had none).
func phase1Calls(r Route) []phase1 {
	var out []phase1
	i := 0
	for _, s := range r.Outcome.Trace {
		if s.Kind != router.StepSelect {
			continue
		}
		var a Answer
		if i < len(r.Answers) {
			a = r.Answers[i]
		}
		i++
		if s.Breakdown != nil {
			out = append(out, phase1{step: s, answer: a})
		}
	}
	return out
}

// SummariseSetting aggregates the routes of one reasoning setting: per selection round the mean
// decode tokens, tokenizer tokens and rest of its phase-1 calls and their uncached share, and per
// route the mean rounds, model calls and times.
func SummariseSetting(reasoning router.Reasoning, routes []Route) Setting {
	s := Setting{Reasoning: reasoning, Routes: len(routes)}
	byRound := map[int]*Round{}
	last := 0
	for _, r := range routes {
		o := r.Outcome
		countDegraded(o, &s.Degraded, &s.FirstDegraded)
		s.SelectRounds += float64(o.Rounds)
		s.ModelCalls += float64(o.Usage.LLMCalls)
		s.RouteMS += o.Timings.Total
		s.WallMS += ms(r.Wall)
		for _, st := range o.Trace {
			switch {
			case st.Kind == router.StepSelect && st.Round == 1 && st.Breakdown != nil:
				s.FirstCalls++
				s.FirstDecode += float64(st.CompletionTokens)
				s.FirstMS += st.DurationMS
				s.FirstModelCall += float64(max(st.ModelCalls, 1))
			case st.Kind == router.StepArguments && st.Breakdown != nil:
				s.Arguments++
				s.ArgumentsDecode += float64(st.CompletionTokens)
				s.ArgumentsMS += st.DurationMS
				s.ArgumentsCalls += float64(max(st.ModelCalls, 1))
			}
		}
		for _, c := range phase1Calls(r) {
			rd := byRound[c.step.Round]
			if rd == nil {
				rd = &Round{Round: c.step.Round}
				byRound[c.step.Round] = rd
				last = max(last, c.step.Round)
			}
			rd.Calls++
			rd.DecodeTokens += c.step.CompletionTokens
			rd.TextTokens += c.answer.TextTokens
			rd.PromptTokens += c.step.PromptTokens
			rd.UncachedTokens += c.step.UncachedTokens
			rd.RestMSSum += c.step.RestMS
		}
	}
	for n := 1; n <= last; n++ {
		rd := byRound[n]
		if rd == nil {
			continue
		}
		calls := float64(rd.Calls)
		rd.MeanDecode, rd.MeanText, rd.MeanRestMS = float64(rd.DecodeTokens)/calls, float64(rd.TextTokens)/calls, rd.RestMSSum/calls
		rd.UncachedPct = percent(rd.UncachedTokens, rd.PromptTokens)
		s.Rounds = append(s.Rounds, *rd)
	}
	if n := float64(s.FirstCalls); n > 0 {
		s.FirstDecode, s.FirstMS, s.FirstModelCall = s.FirstDecode/n, s.FirstMS/n, s.FirstModelCall/n
	}
	if n := float64(s.Arguments); n > 0 {
		s.ArgumentsDecode, s.ArgumentsMS, s.ArgumentsCalls = s.ArgumentsDecode/n, s.ArgumentsMS/n, s.ArgumentsCalls/n
	}
	if n := float64(len(routes)); n > 0 {
		s.SelectRounds, s.ModelCalls, s.RouteMS, s.WallMS = s.SelectRounds/n, s.ModelCalls/n, s.RouteMS/n, s.WallMS/n
	}
	return s
}

// SummariseSize aggregates the routes over an inventory of n tools: per phase-1 call the mean
// prompt tokens, format size, rest and decode tokens, and the decode time per decoded token.
func SummariseSize(n int, routes []Route) Size {
	z := Size{Tools: n, Routes: len(routes)}
	for _, r := range routes {
		countDegraded(r.Outcome, &z.Degraded, &z.FirstDegraded)
		for _, c := range phase1Calls(r) {
			z.Calls++
			z.PromptTokens += c.step.PromptTokens
			z.DecodeTokens += c.step.CompletionTokens
			z.FormatBytes += c.answer.FormatBytes
			z.RestMSSum += c.step.RestMS
			z.DecodeMSSum += c.step.DecodeMS
		}
	}
	if z.Calls > 0 {
		calls := float64(z.Calls)
		z.MeanPrompt, z.MeanDecode, z.MeanFormatBytes = float64(z.PromptTokens)/calls, float64(z.DecodeTokens)/calls, float64(z.FormatBytes)/calls
		z.MeanRestMS = z.RestMSSum / calls
	}
	if z.DecodeTokens > 0 {
		z.DecodeMSPerToken = z.DecodeMSSum / float64(z.DecodeTokens)
	}
	return z
}

// countDegraded counts a degraded outcome in n and keeps the first reason in first.
func countDegraded(o *router.Outcome, n *int, first *string) {
	if o.Degraded == "" {
		return
	}
	*n++
	if *first == "" {
		*first = o.Degraded
	}
}

func percent(part, whole int) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * float64(part) / float64(whole)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Part is where a setting's routes spent their model calls' time: one kind of answer (round 1's
// selection, later rounds' selections, phase 2's first answers, its repairs), means per route.
type Part struct {
	Name string `json:"name"`
	// Answers are the trace steps of the part, ModelCalls the calls they took (a continued answer
	// takes one per value).
	Answers      float64 `json:"answers"`
	ModelCalls   float64 `json:"model_calls"`
	DecodeTokens float64 `json:"decode_tokens"`
	// PromptTokens and UncachedTokens are summed over the calls: each call's whole prompt, and the
	// part of it not served from the server's cache.
	PromptTokens   float64 `json:"prompt_tokens"`
	UncachedTokens float64 `json:"uncached_prompt_tokens"`
	// The server's split of its time, and MS the steps' own durations (the calls' wall times).
	LoadMS    float64 `json:"load_ms"`
	PrefillMS float64 `json:"prefill_ms"`
	DecodeMS  float64 `json:"decode_ms"`
	RestMS    float64 `json:"rest_ms"`
	MS        float64 `json:"ms"`
}

// The parts of a route, in the order SummariseParts lists them.
const (
	PartFirstSelect = "round-1 phase 1"
	PartLaterSelect = "later phase 1"
	PartArguments   = "phase 2"
	PartRepairs     = "phase 2 repairs"
)

// SummariseParts splits routes' model calls into their parts (see Part): means per route. An
// arguments step for a call that already had one is a repair. Steps without the server's counters
// (failed calls) are left out.
func SummariseParts(routes []Route) []Part {
	names := []string{PartFirstSelect, PartLaterSelect, PartArguments, PartRepairs}
	parts := make([]Part, len(names))
	for i, n := range names {
		parts[i].Name = n
	}
	for _, r := range routes {
		seen := map[int]bool{}
		for _, st := range r.Outcome.Trace {
			if st.Breakdown == nil {
				continue
			}
			var p *Part
			switch {
			case st.Kind == router.StepSelect && st.Round == 1:
				p = &parts[0]
			case st.Kind == router.StepSelect:
				p = &parts[1]
			case st.Kind == router.StepArguments && seen[st.Call]:
				p = &parts[3]
			case st.Kind == router.StepArguments:
				seen[st.Call] = true
				p = &parts[2]
			default:
				continue
			}
			p.Answers++
			p.ModelCalls += float64(max(st.ModelCalls, 1))
			p.DecodeTokens += float64(st.CompletionTokens)
			p.PromptTokens += float64(st.PromptTokens)
			p.UncachedTokens += float64(st.UncachedTokens)
			p.LoadMS += st.LoadMS
			p.PrefillMS += st.PrefillMS
			p.DecodeMS += st.DecodeMS
			p.RestMS += st.RestMS
			p.MS += st.DurationMS
		}
	}
	if n := float64(len(routes)); n > 0 {
		for i := range parts {
			p := &parts[i]
			p.Answers, p.ModelCalls, p.DecodeTokens = p.Answers/n, p.ModelCalls/n, p.DecodeTokens/n
			p.PromptTokens, p.UncachedTokens = p.PromptTokens/n, p.UncachedTokens/n
			p.LoadMS, p.PrefillMS, p.DecodeMS, p.RestMS, p.MS = p.LoadMS/n, p.PrefillMS/n, p.DecodeMS/n, p.RestMS/n, p.MS/n
		}
	}
	return parts
}
