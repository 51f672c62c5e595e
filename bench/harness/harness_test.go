package harness

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/bench/dataset"
	"toolrouter/bench/metrics"
)

func num(t *testing.T, s string) map[string][]any {
	t.Helper()
	var m map[string][]any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestChooseThreshold(t *testing.T) {
	tool := func(name string) []dataset.Answer {
		return []dataset.Answer{{Calls: []metrics.Expected{{Name: name}}}}
	}
	cases := []dataset.Case{
		{ID: "a", NeedsTool: true, Answers: tool("s.x")},
		{ID: "b", NeedsTool: true, Answers: tool("s.x")},
		{ID: "c", NeedsTool: false},
		{ID: "d", NeedsTool: false},
		{ID: "e", NeedsTool: true, Answers: tool("s.y")},
	}
	preds := []prediction{
		{best: "s.x", score: 3}, // right tool, high score
		{best: "s.x", score: 1}, // right tool, low score
		{best: "s.x", score: 2}, // no tool needed
		{best: "", score: 0},    // no match
		{best: "s.x", score: 4}, // wrong tool: wrong at any threshold below 4
	}
	var tcs []tuneCase
	for i := range cases {
		tcs = append(tcs, tuneCase{c: &cases[i], p: &preds[i]})
	}
	// Right cases by threshold: t=0: a b d → 3; t=1: a d → 2; t=2: a c d → 3; t=3: c d e(no tool
	// is wrong for e) → 2; t=4: c d → 2. The best, 3, first at t = 0.
	if got := chooseThreshold(tcs); got != 0 {
		t.Errorf("got threshold %v, want 0", got)
	}
	// Make b wrong (another tool): t=0: a d → 2; t=2: a c d → 3: threshold 2.
	preds[1].best = "s.z"
	if got := chooseThreshold(tcs); got != 2 {
		t.Errorf("got threshold %v, want 2", got)
	}
	if got := chooseThreshold(nil); got != 0 {
		t.Errorf("no cases: got %v, want 0", got)
	}
}

func TestFold(t *testing.T) {
	counts := [2]int{}
	for i := range 1000 {
		f := fold(1, "ds", string(rune('a'+i%26))+string(rune('a'+i/26)))
		counts[f]++
	}
	if counts[0] < 400 || counts[1] < 400 {
		t.Errorf("folds %v, want roughly half each", counts)
	}
	first, again := fold(1, "ds", "x"), fold(1, "ds", "x")
	if first != again {
		t.Errorf("fold gave %d then %d for the same query, want it deterministic", first, again)
	}
}

// TestScore scores hand-made predictions on a four-case dataset; each figure is worked out in the
// comments.
func TestScore(t *testing.T) {
	spec := metrics.FunctionSpec{Name: "s.add", Required: []string{"a"}, Params: map[string]metrics.ParamSpec{"a": {Type: "integer"}}}
	ts := &dataset.Toolset{ID: "t", Server: "s"}
	specs := &specBook{}
	specs.put(ts, map[string]metrics.FunctionSpec{"s.add": spec, "s.other": {Name: "s.other"}})
	ds := &dataset.Dataset{Name: "d", Cases: []dataset.Case{
		{ID: "1", Toolset: ts, NeedsTool: true, Answers: []dataset.Answer{{Calls: []metrics.Expected{{Name: "s.add", Args: num(t, `{"a": [1]}`)}}}}},
		{ID: "2", Toolset: ts, NeedsTool: true, Answers: []dataset.Answer{{Calls: []metrics.Expected{{Name: "s.add", Args: num(t, `{"a": [2]}`)}}}}},
		{ID: "3", Toolset: ts, NeedsTool: true, Answers: []dataset.Answer{{Calls: []metrics.Expected{{Name: "s.add", Args: num(t, `{"a": [3]}`)}}}}},
		{ID: "4", Toolset: ts, NeedsTool: false, Trap: "what is"},
	}}
	preds := []prediction{
		{used: true, calls: []metrics.Call{{Name: "s.add", Args: map[string]any{"a": 1}}}, latency: 10 * time.Millisecond, modelCalls: 2, promptTokens: 100}, // right, args right
		{used: true, calls: []metrics.Call{{Name: "s.add", Args: map[string]any{"a": 5}}}, latency: 20 * time.Millisecond, modelCalls: 2, promptTokens: 100}, // right tool, wrong args
		{used: true, calls: []metrics.Call{{Name: "s.other"}}, latency: 30 * time.Millisecond, modelCalls: 2, promptTokens: 100},                             // wrong tool
		{used: true, calls: []metrics.Call{{Name: "s.add", Args: map[string]any{"a": 1}}}, latency: 40 * time.Millisecond, modelCalls: 2, promptTokens: 100}, // tool where none is needed
	}
	row := score(ds, TwoPhase, preds, specs)
	// Decision: TP 3, FP 1, FN 0, TN 0 → P 0.75, R 1, F1 6/7.
	if row.Decision != (metrics.Confusion{TP: 3, FP: 1}) || *row.Precision != 0.75 || *row.Recall != 1 {
		t.Errorf("decision: got %+v P %v R %v, want TP 3 FP 1, P 0.75, R 1", row.Decision, *row.Precision, *row.Recall)
	}
	// Selection: 1 and 2 right of 3. Arguments: of the 2 right selections, 1 passes. Routing:
	// 1, 2 right of 4. End-to-end: only 1 of 4.
	check := func(what string, got metrics.Ratio, want metrics.Ratio) {
		t.Helper()
		if got != want {
			t.Errorf("%s: got %d/%d, want %d/%d", what, got.Correct, got.Total, want.Correct, want.Total)
		}
	}
	check("selection", row.Selection, metrics.Ratio{Correct: 2, Total: 3})
	check("arguments", *row.Arguments, metrics.Ratio{Correct: 1, Total: 2})
	check("routing", row.Routing, metrics.Ratio{Correct: 2, Total: 4})
	check("end-to-end", *row.EndToEnd, metrics.Ratio{Correct: 1, Total: 4})
	check("traps", *row.Traps, metrics.Ratio{Correct: 0, Total: 1})
	// Latency: nearest rank of 10, 20, 30, 40 ms: p50 20, p95 40. Usage: 8 calls, 400 tokens over 4.
	if row.Latency.P50 != 20 || row.Latency.P95 != 40 || *row.ModelCallsPerQuery != 2 || *row.PromptTokensPerQuery != 100 || row.QPS != nil {
		t.Errorf("got latency %+v, calls/q %v, tokens/q %v, qps %v", row.Latency, *row.ModelCallsPerQuery, *row.PromptTokensPerQuery, row.QPS)
	}

	// A model-free router on the same predictions: no argument or end-to-end figures (the dataset
	// labels arguments), and queries per second = 4 / 0.1 s.
	kw := score(ds, CouncilKeywords, preds, specs)
	if kw.Arguments != nil || kw.EndToEnd != nil || kw.QPS == nil || *kw.QPS != 40 || kw.ModelCallsPerQuery != nil {
		t.Errorf("model-free row: got arguments %v, end-to-end %v, qps %v, calls/q %v", kw.Arguments, kw.EndToEnd, kw.QPS, kw.ModelCallsPerQuery)
	}
}

type lister struct {
	models []string
	err    error
}

func (l lister) List(context.Context) (*api.ListResponse, error) {
	if l.err != nil {
		return nil, l.err
	}
	var r api.ListResponse
	for _, m := range l.models {
		r.Models = append(r.Models, api.ListModelResponse{Name: m, Model: m})
	}
	return &r, nil
}

func TestProbe(t *testing.T) {
	tests := []struct {
		name string
		l    lister
		want string
	}{
		{"down", lister{err: errors.New("connection refused")}, "no model server at http://h:1"},
		{"not pulled", lister{models: []string{"llama3.1:8b"}}, "model qwen2.5:7b is not pulled at http://h:1 (ollama pull qwen2.5:7b)"},
		{"pulled", lister{models: []string{"qwen2.5:7b"}}, ""},
	}
	for _, tc := range tests {
		if got := Probe(context.Background(), tc.l, "http://h:1", "qwen2.5:7b", time.Second); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
