package harness

import (
	"cmp"
	"slices"
	"time"

	"toolrouter/bench/report"
	"toolrouter/router"
)

// span is a stretch of a request's wall time, in milliseconds since the request started.
type span struct{ from, to float64 }

// splitTime splits a routed case's wall time (see report.TimeSplit) by the outcome's trace: model
// calls are the steps with a server breakdown, tool calls the execute steps. Where calls overlap
// (a round's calls run in parallel) the time is counted once: the model's part is the wall time
// covered by at least one model call, the tools' the time covered by a tool call and no model
// call, the sidecar's the rest. The server's load, prefill and decode are summed over the calls
// and, when the sum exceeds the model's part (overlapping calls), scaled down to fit it.
func splitTime(out *router.Outcome, wall time.Duration) report.TimeSplit {
	var model, tools []span
	var load, prefill, decode float64
	for _, s := range out.Trace {
		sp := span{s.StartMS, s.StartMS + s.DurationMS}
		switch {
		case s.Breakdown != nil:
			model = append(model, sp)
			load, prefill, decode = load+s.LoadMS, prefill+s.PrefillMS, decode+s.DecodeMS
		case s.Kind == router.StepExecute:
			tools = append(tools, sp)
		}
	}
	model = union(model)
	modelMS := length(model)
	toolsMS := length(union(tools)) - overlap(union(tools), model)
	wallMS := float64(wall.Nanoseconds()) / 1e6
	if server := load + prefill + decode; server > modelMS {
		f := modelMS / server
		load, prefill, decode = load*f, prefill*f, decode*f
	}
	return report.TimeSplit{LoadMS: load, PrefillMS: prefill, DecodeMS: decode, RestMS: max(modelMS-load-prefill-decode, 0),
		ToolsMS: toolsMS, SidecarMS: max(wallMS-modelMS-toolsMS, 0)}
}

// union merges overlapping spans and returns them in order.
func union(spans []span) []span {
	s := slices.Clone(spans)
	slices.SortFunc(s, func(a, b span) int { return cmp.Compare(a.from, b.from) })
	var out []span
	for _, sp := range s {
		if n := len(out); n > 0 && sp.from <= out[n-1].to {
			out[n-1].to = max(out[n-1].to, sp.to)
			continue
		}
		out = append(out, sp)
	}
	return out
}

// length is the time the disjoint spans cover.
func length(spans []span) float64 {
	var n float64
	for _, sp := range spans {
		n += sp.to - sp.from
	}
	return n
}

// overlap is the time both sets of disjoint spans cover.
func overlap(a, b []span) float64 {
	var n float64
	for _, x := range a {
		for _, y := range b {
			n += max(min(x.to, y.to)-max(x.from, y.from), 0)
		}
	}
	return n
}
