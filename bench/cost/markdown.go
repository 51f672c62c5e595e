package cost

import (
	"fmt"
	"strconv"
	"strings"

	"toolrouter/bench/report"
)

// Intro says what the cost benchmark measures and what its columns mean; its figures follow it.
var Intro = "What a route costs on a real Ollama server, read from the router's own outcome: each phase-1 call's " +
	"trace step (`select`) carries the server's counters, its trajectory record the answer's text and the format " +
	"sent, and the route's wall time is measured around `Router.Route`. The router is built as the benchmark " +
	"builds it (`harness.Settings`: the sidecar's defaults for the model, with each model call and phase allowed " +
	"2 minutes and a route 5, so that a slow CPU does not cut a route short) and talks to the server directly. " +
	"The figures of the Ollama before (0.17.4), and what changed, are in " +
	"[real-ollama.md](real-ollama.md#what-a-route-costs); none are repeated here.\n\n" +
	"**Rounds by reasoning** routes the queries in turn over the built-in calculator and clock with the default " +
	"budget of 4 calls, under each `router.reasoning`, after one warm-up route per setting that is not counted. " +
	"**Rest by inventory size** routes BFCL questions over one in-process server of that many BFCL functions " +
	"(`internal/bfcltools`) with `max_tool_calls` 1 and `num_ctx` " + strconv.Itoa(SizeNumCtx) + ", after one warm-up route. " +
	"Both are measured with `router.prefill` on (the default: the router writes what the format fixes and the model " +
	"decodes the values, a phase-1 answer taking a model call per decision) and off (whole objects): two routers route " +
	"each query one after the other, the order switching every pair. **A one-tool route** routes the same queries " +
	"with `max_tool_calls` 1 and reasoning none, prefill on and off the same way: a selection, its arguments, the end.\n\n" +
	"**decode tokens**: the phase-1 answer's tokens as the server decoded them (`eval_count`, added up over its calls " +
	"with prefill). **tokenizer " +
	"tokens**: the same answer's text counted by the model's tokenizer on the server (`/api/generate`, a raw " +
	"prompt of the text alone): what a model writing the vocabulary's merged tokens would decode. **rest**: the " +
	"server's total time less load, prefill and decode (rendering and tokenizing the prompt, waiting for a slot, " +
	"parsing). **uncached**: the share of the round's prompt tokens not served from the server's prompt cache " +
	"(their sum over the sum of prompt tokens). **decode ms/token**: decode time over decoded tokens. Token and " +
	"rest figures are means per phase-1 call; route figures are means per route (**route ms** the router's " +
	"own total, **wall ms** around the call).\n\n"

// Markdown renders the results: the run's lines, then a table per part that ran.
func Markdown(r *Results) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Command: `%s`  \n", r.Command)
	fmt.Fprintf(&b, "Date: %s.  \n", r.Started.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "Machine: %s/%s, %d CPUs, %s; %.0f s.", r.Machine.OS, r.Machine.Arch, r.Machine.CPUs, r.Machine.GoVersion, r.Seconds)
	if r.LoadStart >= 0 && r.LoadEnd >= 0 {
		fmt.Fprintf(&b, "  \nLoad average (1 min) %.1f at the start, %.1f at the end: the machine may be shared, and the times include any wait for a core.", r.LoadStart, r.LoadEnd)
	}
	fmt.Fprintf(&b, "  \nModel: %s at %s (Ollama %s): %s; answers' tokens counted with %s's tokenizer.\n",
		r.Model.Name, r.Model.URL, r.ServerVersion, r.Model.Status, r.TokenizerModel)
	if r.RandomWeights {
		fmt.Fprintf(&b, "\n**%s.** The model's weights are random (scripts/real-ollama's tiny models): its answers "+
			"mean nothing, and it writes whichever pieces the format allows, so its decode counts are not a trained "+
			"model's. The times measure the server (rendering the prompt, the cache, the format's grammar), which is what "+
			"this section is for.\n", capitalise(report.RandomWeightsLabel))
	}

	if len(r.Settings) > 0 {
		fmt.Fprintf(&b, "\n### Rounds by reasoning\n\n%d routes per setting, queries in turn: %s.\n\n", r.RoundsReps, quoted(r.Queries))
		b.WriteString("| reasoning | prefill | round | phase-1 answers | decode tokens | tokenizer tokens | rest ms | uncached % |\n")
		b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|\n")
		for _, s := range r.Settings {
			for _, rd := range s.Rounds {
				fmt.Fprintf(&b, "| %s | %s | %d | %d | %.1f | %.1f | %.1f | %.1f |\n",
					s.Reasoning, onOff(s.Prefill), rd.Round, rd.Calls, rd.MeanDecode, rd.MeanText, rd.MeanRestMS, rd.UncachedPct)
			}
		}
		b.WriteString("\n| reasoning | prefill | routes | degraded | rounds | model calls | route ms | wall ms |\n")
		b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|\n")
		for _, s := range r.Settings {
			fmt.Fprintf(&b, "| %s | %s | %d | %d | %.1f | %.1f | %.0f | %.0f |\n",
				s.Reasoning, onOff(s.Prefill), s.Routes, s.Degraded, s.SelectRounds, s.ModelCalls, s.RouteMS, s.WallMS)
		}
		for _, s := range r.Settings {
			if s.FirstDegraded != "" {
				fmt.Fprintf(&b, "\nReasoning %s, prefill %s: %d of %d routes degraded; the first: %s\n", s.Reasoning, onOff(s.Prefill), s.Degraded, s.Routes, s.FirstDegraded)
			}
		}
		b.WriteString(prefillTable(r.Settings))
		b.WriteString(partsTable(r.Settings))
	}

	if len(r.OneTool) == 2 {
		b.WriteString(oneToolTable(r.OneTool))
	}
	if len(r.Sizes) > 0 {
		fmt.Fprintf(&b, "\n### Rest by inventory size\n\n%d routes per size.\n\n", r.Reps)
		b.WriteString("| tools | prefill | routes | degraded | phase-1 answers | prompt tokens | format bytes | rest ms | decode tokens | decode ms/token |\n")
		b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, z := range r.Sizes {
			fmt.Fprintf(&b, "| %d | %s | %d | %d | %d | %.0f | %.0f | %.1f | %.1f | %.2f |\n",
				z.Tools, onOff(z.Prefill), z.Routes, z.Degraded, z.Calls, z.MeanPrompt, z.MeanFormatBytes, z.MeanRestMS, z.MeanDecode, z.DecodeMSPerToken)
		}
		for _, z := range r.Sizes {
			if z.FirstDegraded != "" {
				fmt.Fprintf(&b, "\n%d tools, prefill %s: %d of %d routes degraded; the first: %s\n", z.Tools, onOff(z.Prefill), z.Degraded, z.Routes, z.FirstDegraded)
			}
		}
	}
	if len(r.Arguments) > 0 {
		fmt.Fprintf(&b, "\n### Phase 2 on BFCL's schemas\n\nEach of the first %d BFCL functions' questions routed naming its "+
			"function (phase 1 skipped), over an inventory of those functions, after one warm-up route; `router.prefill` on and "+
			"off in turn. With prefill an answer is written value by value when the function's format fixes the object's text "+
			"but for its values (every property required: **continued**), as a whole object otherwise. Means per phase-2 "+
			"answer (repairs included); **invalid**: calls whose arguments stayed invalid after the repairs.\n\n", r.Arguments[0].Tools)
		b.WriteString("| prefill | routes | answers | continued | model calls | decode tokens | ms | invalid |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, a := range r.Arguments {
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %.1f | %.1f | %.0f | %d |\n", onOff(a.Prefill), a.Routes, a.Answers, a.Continued,
				a.MeanCalls, a.MeanDecode, a.MeanMS, a.Invalid)
		}
	}
	if g := r.Generated; g != nil {
		fmt.Fprintf(&b, "\n### Examples written by the model\n\n`retrieval.generate_examples: %d`: one call per built-in tool, as the "+
			"sidecar makes it in the background, after one warm-up call. **wall ms** is around the call; the other figures "+
			"are the server's counters, means per call.\n\n", g.PerTool)
		b.WriteString("| tools | calls | tools written | prompt tokens | decode tokens | decode ms/token | rest ms | wall ms |\n")
		b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		fmt.Fprintf(&b, "| %d | %d | %d | %.1f | %.1f | %.2f | %.1f | %.0f |\n",
			g.Tools, g.Calls, g.Written, g.MeanPrompt, g.MeanDecode, g.DecodeMSPerToken, g.MeanRestMS, g.MeanWallMS)
		if r.RandomWeights {
			b.WriteString("\nWith random weights the model's answers are far shorter than a trained model's questions would be " +
				"(see decode tokens): a trained model's call costs about its own decode tokens × the decode ms/token above, " +
				"plus the prompt and the rest.\n")
		}
	}
	return b.String()
}

func quoted(qs []string) string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = fmt.Sprintf("%q", q)
	}
	return strings.Join(out, ", ")
}

func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// prefillTable sets each reasoning's routes with router.prefill on beside those with it off: round
// 1's phase-1 answer, phase 2's answers and the route, and how many pairs decided alike.
func prefillTable(settings []Setting) string {
	var b strings.Builder
	b.WriteString("\n### Prefill against whole objects\n\nThe same routes as above, `router.prefill` on and off in turn " +
		"(each query routed by both routers one after the other). **round-1 phase 1** is the first selection: its model calls, " +
		"the tokens the server decoded for it, and its time (the calls' times added); **phase 2** the same per arguments answer " +
		"(repairs included); **same selection**: pairs whose first selection was identical, **same arguments**: of those, the " +
		"ones whose round-1 arguments were identical too.\n\n")
	b.WriteString("| reasoning | prefill | round-1 phase 1: calls | decode tokens | ms | phase 2: calls | decode tokens | ms | route wall ms | same selection | same arguments |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range settings {
		fmt.Fprintf(&b, "| %s | %s | %.1f | %.1f | %.0f | %.1f | %.1f | %.0f | %.0f | %d of %d | %d of %d |\n", s.Reasoning, onOff(s.Prefill),
			s.FirstModelCall, s.FirstDecode, s.FirstMS, s.ArgumentsCalls, s.ArgumentsDecode, s.ArgumentsMS, s.WallMS,
			s.SameSelections, s.Pairs, s.SameArguments, s.SameSelections)
	}
	b.WriteString("\n")
	for i := 0; i+1 < len(settings); i += 2 {
		on, off := settings[i], settings[i+1]
		if !on.Prefill || off.Prefill || on.FirstMS <= 0 || on.WallMS <= 0 {
			continue
		}
		fmt.Fprintf(&b, "Reasoning %s: round-1 phase 1 **%.1f× faster** with prefill (%.1f decode tokens against %.1f), "+
			"the route **%.1f× faster**", on.Reasoning, off.FirstMS/on.FirstMS, on.FirstDecode, off.FirstDecode, off.WallMS/on.WallMS)
		if on.ArgumentsMS > 0 {
			fmt.Fprintf(&b, ", phase 2 %.1f× (%.1f decode tokens against %.1f)", off.ArgumentsMS/on.ArgumentsMS, on.ArgumentsDecode, off.ArgumentsDecode)
		}
		b.WriteString(".  \n")
	}
	return b.String()
}

// partsTable says where each setting's route spent its time: per part (round 1's selection, later
// selections, phase 2, its repairs) the answers, model calls, decoded tokens, the prompt's uncached
// share and the server's split of the time, means per route; then what the route spent outside
// the model calls (tools, the router, the client).
func partsTable(settings []Setting) string {
	if len(settings) == 0 || len(settings[0].Parts) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n### Where a route's time goes\n\nThe routes above split by kind of answer, means per route: " +
		"**answers** the trace's steps, **calls** their model calls (a continued answer takes one per value), " +
		"**decode** the tokens decoded, **uncached** the share of the calls' prompt tokens not served from the " +
		"server's prompt cache, then the server's load, prefill, decode and rest ms and **ms** the calls' own times (the server's " +
		"and the way to it and back). " +
		"**outside** is the route's wall time less its model calls' (tools, the router).\n\n")
	b.WriteString("| reasoning | prefill | part | answers | calls | decode | uncached % | load ms | prefill ms | decode ms | rest ms | ms |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range settings {
		var in float64
		for _, p := range s.Parts {
			if p.Answers == 0 {
				continue
			}
			in += p.MS
			fmt.Fprintf(&b, "| %s | %s | %s | %.1f | %.1f | %.1f | %.1f | %.0f | %.0f | %.0f | %.0f | %.0f |\n", s.Reasoning, onOff(s.Prefill),
				p.Name, p.Answers, p.ModelCalls, p.DecodeTokens, 100*p.UncachedTokens/max(p.PromptTokens, 1), p.LoadMS, p.PrefillMS, p.DecodeMS, p.RestMS, p.MS)
		}
		fmt.Fprintf(&b, "| %s | %s | outside | | | | | | | | | %.0f |\n", s.Reasoning, onOff(s.Prefill), max(s.WallMS-in, 0))
	}
	return b.String()
}

// oneToolTable shows the routes with a budget of one tool call, prefill on beside off, and where
// their time went.
func oneToolTable(s []Setting) string {
	var b strings.Builder
	b.WriteString("\n### A one-tool route\n\nThe same queries in turn with `max_tool_calls` 1 and reasoning none, " +
		"`router.prefill` on and off in turn, after one warm-up route: round 1's selection, its arguments, and the route's " +
		"end (the budget is spent: no further selection). **decode** is every model call's decoded tokens added up.\n\n")
	b.WriteString("| prefill | routes | degraded | model calls | decode | round-1 phase 1 ms | phase 2 ms | route wall ms | same selection | same arguments |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, x := range s {
		var decode float64
		for _, p := range x.Parts {
			decode += p.DecodeTokens
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %.1f | %.1f | %.0f | %.0f | %.0f | %d of %d | %d of %d |\n", onOff(x.Prefill), x.Routes, x.Degraded,
			x.ModelCalls, decode, x.FirstMS, x.ArgumentsMS, x.WallMS, x.SameSelections, x.Pairs, x.SameArguments, x.SameSelections)
	}
	if on, off := s[0], s[1]; on.Prefill && !off.Prefill && on.WallMS > 0 && on.FirstMS > 0 {
		fmt.Fprintf(&b, "\nA one-tool route **%.1f× faster** with prefill, its round-1 phase 1 **%.1f×**.\n", off.WallMS/on.WallMS, off.FirstMS/on.FirstMS)
	}
	b.WriteString(strings.Replace(partsTable(s), "### Where a route's time goes", "#### Where its time goes", 1))
	return b.String()
}
