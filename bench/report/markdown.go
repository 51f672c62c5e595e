package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// DegradedLimit is the share of degraded answers above which a report warns at its top.
const DegradedLimit = 0.01

// Markdown renders the results: a warning when more than DegradedLimit of the answers degraded and
// one when any timed out, one table per dataset (measured, skipped and unavailable rows), the
// plumbing and random-weight rows apart (they measure no model), and the thresholds with a line on
// how they were tuned.
func Markdown(res *Results) string {
	var b strings.Builder
	b.WriteString(degradedWarning(res))
	b.WriteString(timedOutWarning(res))
	fmt.Fprintf(&b, "Command: `%s`  \n", res.Command)
	fmt.Fprintf(&b, "Machine: %s/%s, %d CPUs, %s; seed %d", res.Machine.OS, res.Machine.Arch, res.Machine.CPUs, res.Machine.GoVersion, res.Seed)
	if res.Limit > 0 {
		fmt.Fprintf(&b, "; first %d queries of each dataset", res.Limit)
	}
	fmt.Fprintf(&b, "; %.0f s", res.Seconds)
	if res.Resumed > 0 {
		fmt.Fprintf(&b, " (resumed: %d answers, their latencies included, come from an earlier run's per-case file)", res.Resumed)
	}
	fmt.Fprintf(&b, ".  \nDate: %s.  \nModel: %s\n", res.Started.UTC().Format("2006-01-02 15:04 MST"), modelLine(res.Model))
	if res.Tuning != "" {
		fmt.Fprintf(&b, "\nThresholds: %s\n", res.Tuning)
	}

	b.WriteString(summary(res))
	for _, ds := range res.Datasets {
		fmt.Fprintf(&b, "\n### %s\n\n%d queries (%d need a tool, %d need none). Source: %s.\n", ds.Name, ds.Cases, ds.NeedTool, ds.NoTool, ds.Source)
		for _, n := range ds.Notes {
			fmt.Fprintf(&b, "Note: %s.\n", n)
		}
		if !slices.ContainsFunc(res.Rows, func(r Row) bool { return r.Dataset == ds.Name && r.Status != Plumbing && r.Status != RandomWeights }) {
			b.WriteString("\nNo row here measures accuracy: see the runs below.\n")
			continue
		}
		b.WriteString("\n| router | P | R | F1 | selection | arguments | end-to-end | routing | degraded | timed out | p50 ms | p95 ms | p99 ms | model calls/q | prompt tokens/q | q/s |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, r := range res.Rows {
			if r.Dataset != ds.Name || r.Status == Plumbing || r.Status == RandomWeights {
				continue
			}
			if r.Status != Measured {
				fmt.Fprintf(&b, "| %s | %s |||||||||||||||\n", r.Router, rowReason(r))
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %d | %d | %s | %s | %s | %s | %s | %s |\n",
				r.Router, num(r.Precision), num(r.Recall), num(r.F1),
				num(r.SelectionAccuracy), argCell(r), e2eCell(r), num(r.RoutingAccuracy), r.Degraded, r.TimedOut,
				ms(r.Latency.P50), ms(r.Latency.P95), ms(r.Latency.P99),
				num(r.ModelCallsPerQuery), tokens(r.PromptTokensPerQuery), qps(r.QPS))
		}
		var ranking []string
		for _, r := range res.Rows {
			if r.Dataset == ds.Name && r.Status == Measured && r.RankingAccuracy != nil {
				ranking = append(ranking, fmt.Sprintf("%s %.3f", r.Router, *r.RankingAccuracy))
			}
		}
		if len(ranking) > 0 {
			fmt.Fprintf(&b, "\nTop-ranked tool right, threshold ignored (tool queries): %s.\n", strings.Join(ranking, ", "))
		}
		var timed []Row
		for _, r := range res.Rows {
			if r.Dataset == ds.Name && r.Status == Measured {
				timed = append(timed, r)
			}
		}
		b.WriteString(confidenceLine(timed, false))
		b.WriteString(timeTable(timed, false))
	}

	unmeasured(&b, rowsWith(res, Plumbing), "Plumbing runs (fake model: not a measurement of any model)")
	unmeasured(&b, rowsWith(res, RandomWeights), "Random-weight model runs ("+RandomWeightsLabel+")")

	if len(res.Thresholds) > 0 {
		b.WriteString("\n### \"No tool\" thresholds (each chosen on the other folds of its source)\n\n| source | router | fold | threshold | tuned on | applied to |\n|---|---|---:|---:|---:|---:|\n")
		for _, t := range res.Thresholds {
			value := fmt.Sprintf("%.3f", t.Value)
			if t.OneLabel {
				value = "none (one label)"
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %d | %d |\n", t.Source, t.Router, t.Fold, value, t.TunedOn, t.AppliedTo)
		}
	}
	return b.String()
}

// unmeasured renders rows that measure no model (plumbing, random weights) under title: what they
// check, never an accuracy.
func unmeasured(b *strings.Builder, rows []Row, title string) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "\n### %s\n\n%s\n\n", title, rows[0].Reason)
	b.WriteString("| dataset | router | queries | calls | failed | executed over MCP | recorded by handlers | mismatches | degraded | timed out | model calls/q | prompt tokens/q | p50 ms |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| %s | %s | %d | %d | %d | %d | %d | %d | %d | %d | %s | %s | %s |\n", r.Dataset, r.Router, r.Cases, r.Calls, r.Failed,
			r.Executed, r.Recorded, r.Mismatches, r.Degraded, r.TimedOut, num(r.ModelCallsPerQuery), tokens(r.PromptTokensPerQuery), ms(r.Latency.P50))
	}
	b.WriteString(confidenceLine(rows, true))
	b.WriteString(timeTable(rows, true))
}

// timeTable renders where the rows' queries spent their time, for the rows that have a time split
// (the model routers), or "" when none has: the model's calls and tokens per query, then the mean
// milliseconds per query of each part of the wall time (report.TimeSplit), which add up to the
// mean latency.
func timeTable(rows []Row, withDataset bool) string {
	var b strings.Builder
	for _, r := range rows {
		if r.Time == nil {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\nWhere a query's time went, mean ms per query: the model server's load, prefill and decode, the rest of " +
				"the model calls (the server's other work, waiting, the transport), tool calls outside model calls, and the sidecar's own time.\n\n")
			head, rule := "| router |", "|---|"
			if withDataset {
				head, rule = "| dataset | router |", "|---|---|"
			}
			b.WriteString(head + " model calls/q | decode tokens/q | uncached prompt tokens/q | load | prefill | decode | rest | tools | sidecar | mean ms |\n")
			b.WriteString(rule + strings.Repeat("---:|", 10) + "\n")
		}
		b.WriteString("|")
		if withDataset {
			fmt.Fprintf(&b, " %s |", r.Dataset)
		}
		t := r.Time
		fmt.Fprintf(&b, " %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Router, num(r.ModelCallsPerQuery),
			tokens(r.DecodeTokensPerQuery), tokens(r.UncachedPromptTokensPerQuery),
			ms(t.LoadMS), ms(t.PrefillMS), ms(t.DecodeMS), ms(t.RestMS), ms(t.ToolsMS), ms(t.SidecarMS), ms(t.TotalMS()))
	}
	return b.String()
}

// confidenceLine is one line with phase 1's mean confidence of the rows that have one, each figure
// with the number of answers it is the mean of, or "" when none has.
func confidenceLine(rows []Row, withDataset bool) string {
	var parts []string
	for _, r := range rows {
		c := r.Confidence
		if c == nil {
			continue
		}
		name := r.Router
		if withDataset {
			name = r.Dataset + " " + name
		}
		parts = append(parts, fmt.Sprintf("%s: use_tool %s (%d), tool %s (%d)", name, num(c.UseTool), c.UseToolAnswers, num(c.Tool), c.ToolAnswers))
	}
	if len(parts) == 0 {
		return ""
	}
	return "\nPhase-1 confidence, mean over the answers that carry it (answers): " + strings.Join(parts, "; ") + ".\n"
}

// ran reports whether a row's router ran its cases (measured, plumbing and random-weight rows).
func ran(r Row) bool {
	return r.Status == Measured || r.Status == Plumbing || r.Status == RandomWeights
}

// timedOutWarning is a line at the report's top when any answer timed out; else "".
func timedOutWarning(res *Results) string {
	var all, late int
	for _, r := range res.Rows {
		if ran(r) {
			all, late = all+r.Cases, late+r.TimedOut
		}
	}
	if late == 0 {
		return ""
	}
	return fmt.Sprintf("**Warning: %d of %d answers timed out (over the case timeout of %s) and were cancelled; "+
		"they count as wrong everywhere (the \"timed out\" columns).**\n\n", late, all, res.CaseTimeout)
}

func modelLine(m Model) string {
	if m.Name == "" {
		return m.Status
	}
	return fmt.Sprintf("%s at %s: %s", m.Name, m.URL, m.Status)
}

func rowReason(r Row) string {
	if r.Reason == "" {
		return string(r.Status)
	}
	if r.Status == Skipped {
		return "skipped: " + r.Reason
	}
	return string(r.Status) + ": " + r.Reason
}

// degradedWarning is the report's first line when more than DegradedLimit of the answers that
// ran (measured, plumbing and random-weight rows) degraded, naming the routers over the limit; else "".
func degradedWarning(res *Results) string {
	var all, bad int
	perRouter := map[string][2]int{} // router → degraded, answers
	reasons := map[string]int{}
	var routers []string
	for _, r := range res.Rows {
		if !ran(r) {
			continue
		}
		all += r.Cases
		bad += r.Degraded
		for why, n := range r.DegradedBy {
			reasons[why] += n
		}
		if _, ok := perRouter[r.Router]; !ok {
			routers = append(routers, r.Router)
		}
		c := perRouter[r.Router]
		perRouter[r.Router] = [2]int{c[0] + r.Degraded, c[1] + r.Cases}
	}
	if all == 0 || float64(bad) <= DegradedLimit*float64(all) {
		return ""
	}
	var over []string
	for _, name := range routers {
		c := perRouter[name]
		if c[1] > 0 && float64(c[0]) > DegradedLimit*float64(c[1]) {
			over = append(over, fmt.Sprintf("%s %d of %d", name, c[0], c[1]))
		}
	}
	var why []string
	for _, k := range slices.Sorted(maps.Keys(reasons)) {
		why = append(why, fmt.Sprintf("%s %d", k, reasons[k]))
	}
	because := ""
	if len(why) > 0 {
		because = "; reasons: " + strings.Join(why, ", ")
	}
	return fmt.Sprintf("**Warning: %d of %d answers (%.1f%%) degraded: the router fell back without the tool results "+
		"asked for (%s%s). Degraded answers count as wrong everywhere.**\n\n",
		bad, all, 100*float64(bad)/float64(all), strings.Join(over, "; "), because)
}

func rowsWith(res *Results, s Status) []Row {
	var out []Row
	for _, r := range res.Rows {
		if r.Status == s {
			out = append(out, r)
		}
	}
	return out
}

func argCell(r Row) string {
	if r.Arguments == nil {
		return "n/a"
	}
	return num(r.ArgumentAccuracy)
}

func e2eCell(r Row) string {
	if r.EndToEnd == nil {
		return "n/a"
	}
	return num(r.EndToEndAccuracy)
}

func num(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf("%.3f", *v)
}

func tokens(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf("%.0f", *v)
}

func ms(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 0.01:
		return fmt.Sprintf("%.4f", v)
	case v < 10:
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

func qps(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf("%.0f", *v)
}

// summary is the routing accuracy of every router on every dataset, one row per router.
func summary(res *Results) string {
	var routers []string
	for _, r := range res.Rows {
		if !slices.Contains(routers, r.Router) {
			routers = append(routers, r.Router)
		}
	}
	if len(routers) == 0 || len(res.Datasets) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n### Routing accuracy (right \"no tool\", or exactly the right tools), all datasets\n\n| router |")
	for _, ds := range res.Datasets {
		fmt.Fprintf(&b, " %s |", ds.Name)
	}
	b.WriteString(" degraded |\n|---|" + strings.Repeat("---:|", len(res.Datasets)+1) + "\n")
	for _, name := range routers {
		fmt.Fprintf(&b, "| %s |", name)
		degraded, answers := 0, 0
		for _, ds := range res.Datasets {
			cell := "—"
			for _, r := range res.Rows {
				if r.Router != name || r.Dataset != ds.Name {
					continue
				}
				if ran(r) {
					degraded, answers = degraded+r.Degraded, answers+r.Cases
				}
				switch r.Status {
				case Measured:
					cell = num(r.RoutingAccuracy)
				case Plumbing:
					cell = "plumbing"
				case RandomWeights:
					cell = "random weights"
				case Skipped:
					cell = "skipped"
				case Unavailable:
					cell = "n/a"
				}
			}
			fmt.Fprintf(&b, " %s |", cell)
		}
		if answers == 0 {
			b.WriteString(" — |\n")
		} else {
			fmt.Fprintf(&b, " %d of %d |\n", degraded, answers)
		}
	}
	return b.String()
}
