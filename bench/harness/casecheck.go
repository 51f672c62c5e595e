package harness

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"toolrouter/bench/dataset"
	"toolrouter/bench/report"
)

// CheckCases checks a run's per-case file for shape, never for accuracy: it is what CI asserts
// about a run against a random-weight model, whose answers mean nothing. It returns one line per
// problem:
//   - a requested model router that did not run (skipped or unavailable) on a dataset;
//   - a router that ran on a dataset without exactly one line for each of its cases, or a line for
//     a case, router or dataset the run does not have;
//   - a line without router, dataset or case, with an unknown outcome, a negative latency or a call
//     without a tool name;
//   - a model router's line that timed out, or that made no model call or counted no prompt token
//     (except hybrid's keyword gate answering "no tool" before any model call);
//   - a model router's line without the decode and uncached prompt tokens and the time split
//     (modelFields), with a negative one, more uncached prompt tokens than prompt tokens, no model
//     time despite model calls, or a split that does not add up to its latency;
//   - a model router's line that says whether it routed right while the model rows measure no model;
//   - a line of a router that selects with phase 1 without its run's reasoning setting, or with a
//     confidence figure outside [0, 1].
func CheckCases(path string, datasets []*dataset.Dataset, res *report.Results) ([]string, error) {
	h, recs, err := ReadCases(path)
	if err != nil {
		return nil, err
	}
	keys, err := lineKeys(path)
	if err != nil {
		return nil, err
	}
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	unmeasured := h.Params.FakeModel || h.Params.RandomWeights
	runs := map[string]routerRun{} // by name, as the header's parameters expand
	for _, rn := range expand(h.Params.Routers, h.Params.Reasoning) {
		runs[rn.name] = rn
	}
	want := map[caseKey]bool{} // expected lines, true once seen
	for _, row := range res.Rows {
		switch row.Status {
		case report.Measured, report.Plumbing, report.RandomWeights:
		default:
			if needsModel(runs[row.Router].router) {
				bad("%s on %s did not run: %s: %s", row.Router, row.Dataset, row.Status, row.Reason)
			}
			continue
		}
		for _, ds := range datasets {
			if ds.Name != row.Dataset {
				continue
			}
			for _, c := range ds.Cases {
				want[caseKey{row.Router, ds.Name, c.ID}] = false
			}
		}
	}
	for i, r := range recs {
		at := fmt.Sprintf("line %d (%s on %s/%s)", i+2, r.Router, r.Dataset, r.Case)
		k := caseKey{r.Router, r.Dataset, r.Case}
		seen, ok := want[k]
		switch {
		case r.Router == "" || r.Dataset == "" || r.Case == "":
			bad("%s: no router, dataset or case", at)
		case !ok:
			bad("%s: no such case in this run", at)
		case seen:
			bad("%s: a second line for the case", at)
		}
		want[k] = true
		if !slices.Contains([]Outcome{OutcomeTool, OutcomeNoTool, OutcomeRanked, OutcomeDegraded, OutcomeTimedOut}, r.Outcome) {
			bad("%s: unknown outcome %q", at, r.Outcome)
		}
		if r.LatencyMS < 0 {
			bad("%s: latency %v ms", at, r.LatencyMS)
		}
		for _, c := range r.Calls {
			if c.Name == "" {
				bad("%s: a call without a tool name", at)
			}
		}
		rn := runs[r.Router]
		if !needsModel(rn.router) {
			continue
		}
		if usesPhase1(rn.router) && r.Reasoning != rn.reasoning {
			bad("%s: reasoning %q, want %q", at, r.Reasoning, rn.reasoning)
		}
		if c := r.Confidence; c != nil {
			for _, v := range []*float64{c.UseTool, c.Tool} {
				if v != nil && !(*v >= 0 && *v <= 1) {
					bad("%s: confidence %v outside [0, 1]", at, *v)
				}
			}
		}
		gate := rn.router == Hybrid && r.Outcome == OutcomeNoTool && r.ModelCalls == 0
		switch {
		case r.Outcome == OutcomeTimedOut:
			bad("%s: timed out (case timeout %s)", at, h.Params.CaseTimeout)
		case gate:
		case r.ModelCalls < 1 || r.PromptTokens <= 0:
			bad("%s: %d model calls, %d prompt tokens; want at least 1 call and 1 token", at, r.ModelCalls, r.PromptTokens)
		}
		for _, p := range checkModelFields(keys[i], r) {
			bad("%s: %s", at, p)
		}
		if unmeasured && r.RoutingRight != nil {
			bad("%s: says whether it routed right, but the model rows measure no model", at)
		}
	}
	var missing []caseKey
	for k, seen := range want {
		if !seen {
			missing = append(missing, k)
		}
	}
	slices.SortFunc(missing, func(a, b caseKey) int {
		return cmp.Or(strings.Compare(a.dataset, b.dataset), strings.Compare(a.router, b.router), strings.Compare(a.id, b.id))
	})
	for _, k := range missing {
		bad("no line for %s on %s/%s", k.router, k.dataset, k.id)
	}
	return problems, nil
}

// modelFields are the fields a model router's line must have.
var modelFields = []string{"decode_tokens", "uncached_prompt_tokens", "load_ms", "prefill_ms", "decode_ms", "rest_ms", "tools_ms", "sidecar_ms"}

// checkModelFields checks a model router's line for its tokens and time split: present (keys are
// the line's fields), none negative, no more uncached prompt tokens than prompt tokens, model time
// when the model was called, and parts adding up to the latency (within 1 ms or 1%).
func checkModelFields(keys map[string]bool, r CaseRecord) []string {
	var problems []string
	var missing []string
	for _, k := range modelFields {
		if !keys[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return []string{"no " + strings.Join(missing, ", ")}
	}
	t := r.TimeSplit
	for _, v := range []float64{float64(r.DecodeTokens), float64(r.UncachedPromptTokens), t.LoadMS, t.PrefillMS, t.DecodeMS, t.RestMS, t.ToolsMS, t.SidecarMS} {
		if v < 0 {
			problems = append(problems, fmt.Sprintf("a negative token count or time: %+v", t))
			break
		}
	}
	if r.UncachedPromptTokens > r.PromptTokens {
		problems = append(problems, fmt.Sprintf("%d uncached prompt tokens of %d", r.UncachedPromptTokens, r.PromptTokens))
	}
	if r.ModelCalls > 0 && t.ModelMS() <= 0 {
		problems = append(problems, fmt.Sprintf("%d model calls in no model time", r.ModelCalls))
	}
	if d := math.Abs(t.TotalMS() - r.LatencyMS); d > max(1, r.LatencyMS/100) {
		problems = append(problems, fmt.Sprintf("the time split adds up to %.3f ms, the latency is %.3f ms", t.TotalMS(), r.LatencyMS))
	}
	return problems
}

// lineKeys returns the fields of each case line of a per-case file, in order (the header apart).
func lineKeys(path string) ([]map[string]bool, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	var out []map[string]bool
	for i, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		if i == 0 {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", path, i+1, err)
		}
		keys := make(map[string]bool, len(m))
		for k := range m {
			keys[k] = true
		}
		out = append(out, keys)
	}
	return out, nil
}
