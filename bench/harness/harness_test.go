package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/bench/dataset"
	"toolrouter/bench/metrics"
	"toolrouter/bench/report"
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
	var counts [Folds]int
	for i := range 1000 {
		counts[fold(1, "bfcl", "ds", fmt.Sprint(i))]++
	}
	for f, n := range counts {
		if n < 1000/Folds*3/4 {
			t.Errorf("fold %d got %d of 1000 cases, want roughly %d (all: %v)", f, n, 1000/Folds, counts)
		}
	}
	first, again := fold(1, "bfcl", "ds", "x"), fold(1, "bfcl", "ds", "x")
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
		{ID: "4", Toolset: ts, NeedsTool: false},
	}}
	preds := []prediction{
		{used: true, calls: []metrics.Call{{Name: "s.add", Args: map[string]any{"a": 1}}}, latency: 10 * time.Millisecond, modelCalls: 2, promptTokens: 100}, // right, args right
		{used: true, calls: []metrics.Call{{Name: "s.add", Args: map[string]any{"a": 5}}}, latency: 20 * time.Millisecond, modelCalls: 2, promptTokens: 100}, // right tool, wrong args
		{used: true, calls: []metrics.Call{{Name: "s.other"}}, latency: 30 * time.Millisecond, modelCalls: 2, promptTokens: 100},                             // wrong tool
		{used: true, calls: []metrics.Call{{Name: "s.add", Args: map[string]any{"a": 1}}}, latency: 40 * time.Millisecond, modelCalls: 2, promptTokens: 100}, // tool where none is needed
	}
	row := score(ds, runOf(TwoPhase), preds, specs)
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
	// Latency: nearest rank of 10, 20, 30, 40 ms: p50 20, p95 40. Usage: 8 calls, 400 tokens over 4.
	if row.Latency.P50 != 20 || row.Latency.P95 != 40 || *row.ModelCallsPerQuery != 2 || *row.PromptTokensPerQuery != 100 || row.QPS != nil {
		t.Errorf("got latency %+v, calls/q %v, tokens/q %v, qps %v", row.Latency, *row.ModelCallsPerQuery, *row.PromptTokensPerQuery, row.QPS)
	}

	// A model-free router on the same predictions: no argument or end-to-end figures (it executes
	// nothing), and queries per second = 4 / 0.1 s.
	kw := score(ds, runOf(CouncilKeywords), preds, specs)
	if kw.Arguments != nil || kw.EndToEnd != nil || kw.QPS == nil || *kw.QPS != 40 || kw.ModelCallsPerQuery != nil {
		t.Errorf("model-free row: got arguments %v, end-to-end %v, qps %v, calls/q %v", kw.Arguments, kw.EndToEnd, kw.QPS, kw.ModelCallsPerQuery)
	}
}

// TestScoreDegraded scores a dead model: every answer degraded to "no tool". Degraded is its own
// outcome, so none of them is right, the no-tool cases included.
func TestScoreDegraded(t *testing.T) {
	ts := &dataset.Toolset{ID: "t", Server: "s"}
	specs := &specBook{}
	specs.put(ts, map[string]metrics.FunctionSpec{"s.f": {Name: "s.f"}})
	ds := &dataset.Dataset{Name: "d", Cases: []dataset.Case{
		{ID: "1", Toolset: ts, NeedsTool: true, Answers: []dataset.Answer{{Calls: []metrics.Expected{{Name: "s.f"}}}}},
		{ID: "2", Toolset: ts, NeedsTool: false},
		{ID: "3", Toolset: ts, NeedsTool: false},
	}}
	dead := make([]prediction, len(ds.Cases))
	for i := range dead {
		dead[i] = prediction{degraded: true, modelCalls: 1}
	}
	row := score(ds, runOf(TwoPhase), dead, specs)
	if row.Degraded != 3 || row.Routing != (metrics.Ratio{Total: 3}) || *row.EndToEnd != (metrics.Ratio{Total: 3}) {
		t.Errorf("got %d degraded, routing %+v, end-to-end %+v; want 3 degraded, 0 of 3 right in both", row.Degraded, row.Routing, *row.EndToEnd)
	}
	if row.Decision.TN != 0 || row.Decision.Degraded() != 3 || *row.Recall != 0 {
		t.Errorf("got decision %+v, recall %v; want no true negative, 3 degraded, recall 0", row.Decision, *row.Recall)
	}
	// A degraded answer that still holds the right call is not right either.
	partial := []prediction{{degraded: true, used: true, calls: []metrics.Call{{Name: "s.f", Args: map[string]any{}}}}, {}, {}}
	row = score(ds, runOf(TwoPhase), partial, specs)
	if row.Selection.Correct != 0 || row.Routing.Correct != 2 {
		t.Errorf("got selection %+v, routing %+v; want the degraded case wrong, the two no-tool cases right", row.Selection, row.Routing)
	}
}

// TestScoreEndToEnd checks that end-to-end credits only calls that ran and returned without error.
func TestScoreEndToEnd(t *testing.T) {
	ts := &dataset.Toolset{ID: "t", Server: "s"}
	specs := &specBook{}
	specs.put(ts, map[string]metrics.FunctionSpec{"s.add": {Name: "s.add", Required: []string{"a"}, Params: map[string]metrics.ParamSpec{"a": {Type: "integer"}}}})
	ds := &dataset.Dataset{Name: "d", Cases: []dataset.Case{
		{ID: "1", Toolset: ts, NeedsTool: true, Answers: []dataset.Answer{{Calls: []metrics.Expected{{Name: "s.add", Args: num(t, `{"a": [1]}`)}}}}},
	}}
	right := metrics.Call{Name: "s.add", Args: map[string]any{"a": 1}}
	tests := []struct {
		name string
		p    prediction
		want bool
	}{
		{"ran and succeeded", prediction{used: true, calls: []metrics.Call{right}, executed: 1}, true},
		{"failed: error, no result or isError", prediction{used: true, calls: []metrics.Call{right}, failed: 1}, false},
		{"an extra call to an unknown tool", prediction{used: true, calls: []metrics.Call{right}, executed: 1, failed: 1}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			row := score(ds, runOf(TwoPhase), []prediction{tc.p}, specs)
			if got := row.EndToEnd.Correct == 1; got != tc.want || row.Routing.Correct != 1 || row.Arguments.Correct != 1 {
				t.Errorf("got end-to-end %v (routing %+v, arguments %+v), want %v with routing and arguments right", got, row.Routing, *row.Arguments, tc.want)
			}
		})
	}
}

// tuneData builds datasets and a thresholded router's predictions for the tuning tests.
type tuneData struct {
	datasets []*dataset.Dataset
	preds    [][][]prediction // dataset → router (one) → case
}

// add appends a dataset of source family with n cases; label and score give each case's label and
// the router's top score (its top tool is always "s.x", the right tool of every tool case).
func (d *tuneData) add(family, name string, n int, label func(i int) bool, score func(i int) float64) {
	ds := &dataset.Dataset{Name: name, Family: family}
	var preds []prediction
	for i := range n {
		c := dataset.Case{ID: fmt.Sprint(i), NeedsTool: label(i)}
		if c.NeedsTool {
			c.Answers = []dataset.Answer{{Calls: []metrics.Expected{{Name: "s.x"}}}}
		}
		ds.Cases = append(ds.Cases, c)
		preds = append(preds, prediction{best: "s.x", score: score(i)})
	}
	d.datasets = append(d.datasets, ds)
	d.preds = append(d.preds, [][]prediction{preds})
}

func (d *tuneData) tune() ([]report.Threshold, map[string]string) {
	return tune(1, d.datasets, []string{BM25}, d.preds)
}

// used returns a dataset's decisions after tuning.
func (d *tuneData) used(name string) []bool {
	var out []bool
	for i, ds := range d.datasets {
		if ds.Name == name {
			for _, p := range d.preds[i][0] {
				out = append(out, p.used)
			}
		}
	}
	return out
}

func ofSource(ths []report.Threshold, source string) []report.Threshold {
	var out []report.Threshold
	for _, th := range ths {
		if th.Source == source {
			out = append(out, th)
		}
	}
	return out
}

// TestTunePerSource checks that a source's thresholds come from its own cases only: growing
// MetaTool's selection set leaves BFCL's thresholds and decisions unchanged, while MetaTool's
// thresholds are tuned on its two datasets pooled.
func TestTunePerSource(t *testing.T) {
	toolEven := func(i int) bool { return i%2 == 0 }
	tool := func(int) bool { return true }
	// Tool cases score above no-tool cases by a margin, with some spread.
	spread := func(base float64) func(int) float64 {
		return func(i int) float64 {
			s := base + float64(i%7)
			if i%2 == 0 {
				s += 10
			}
			return s
		}
	}
	run := func(selectionRows int) (*tuneData, []report.Threshold) {
		d := &tuneData{}
		d.add("bfcl", "bfcl-a", 40, toolEven, spread(1))
		d.add("metatool", "metatool-selection", selectionRows, tool, func(i int) float64 { return 100 + float64(i%5) })
		d.add("metatool", "metatool-awareness", 40, toolEven, spread(100))
		ths, _ := d.tune()
		return d, ths
	}
	small, thSmall := run(20)
	large, thLarge := run(400)
	if got, want := fmt.Sprint(ofSource(thLarge, "bfcl")), fmt.Sprint(ofSource(thSmall, "bfcl")); got != want {
		t.Errorf("BFCL's thresholds moved when MetaTool grew: got %v, want %v", got, want)
	}
	if got, want := fmt.Sprint(large.used("bfcl-a")), fmt.Sprint(small.used("bfcl-a")); got != want {
		t.Errorf("BFCL's decisions moved when MetaTool grew: got %v, want %v", got, want)
	}
	mt := ofSource(thLarge, "metatool")
	tunedOn, applied := 0, 0
	for _, th := range mt {
		tunedOn += th.TunedOn
		applied += th.AppliedTo
		if th.OneLabel {
			t.Errorf("fold %d of MetaTool learned no threshold, want one: its training data hold both labels", th.Fold)
		}
	}
	if len(mt) != Folds || applied != 440 || tunedOn != (Folds-1)*440 {
		t.Errorf("got %d MetaTool thresholds applied to %d cases and tuned on %d, want %d applied to 440 (both datasets), each tuned on the other %d folds (%d in all)",
			len(mt), applied, tunedOn, Folds, Folds-1, (Folds-1)*440)
	}
}

// TestTuneSingleLabelSplit checks that a category holding one label is decided by its source's
// threshold, not by one learned on itself: BFCL's irrelevance queries here score above every tool
// query, so a threshold tuned on irrelevance alone would answer "no tool" to all of them, while the
// source, with four times more tool queries, keeps any match.
func TestTuneSingleLabelSplit(t *testing.T) {
	d := &tuneData{}
	d.add("bfcl", "bfcl-simple", 200, func(int) bool { return true }, func(i int) float64 { return 1 + float64(i%5) })
	d.add("bfcl", "bfcl-irrelevance", 50, func(int) bool { return false }, func(i int) float64 { return 10 + float64(i%5) })
	_, notes := d.tune()
	right := 0
	for _, used := range d.used("bfcl-irrelevance") {
		if !used {
			right++
		}
	}
	if right != 0 {
		t.Errorf("got %d of 50 irrelevance queries routed right, want 0: the pooled threshold keeps the 200 tool queries", right)
	}
	if len(notes) != 0 {
		t.Errorf("got notes %v, want none: the source holds both labels", notes)
	}
}

// TestTuneOneLabelSource checks that a source whose training data hold one label learns no
// threshold (any match uses a tool) and says so, instead of learning the constant label.
func TestTuneOneLabelSource(t *testing.T) {
	tests := []struct {
		name     string
		label    func(i int) bool
		n        int
		wantNote string // a part of the note; "" for none
	}{
		{"only tool queries", func(int) bool { return true }, 60, `hold only "tool" queries in 5 of 5 folds`},
		{"only no-tool queries", func(int) bool { return false }, 60, `hold only "no tool" queries in 5 of 5 folds`},
		{"both labels", func(i int) bool { return i%2 == 0 }, 60, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &tuneData{}
			// No-tool queries score 5, tool queries 1: a threshold learned on no-tool queries alone would be 5.
			d.add("bfcl", "bfcl-x", tc.n, tc.label, func(i int) float64 {
				if tc.label(i) {
					return 1
				}
				return 5
			})
			ths, notes := d.tune()
			note := notes["bfcl"]
			if tc.wantNote == "" {
				if note != "" {
					t.Errorf("got note %q, want none", note)
				}
				return
			}
			if !strings.Contains(note, tc.wantNote) {
				t.Errorf("got note %q, want it to say %q", note, tc.wantNote)
			}
			for _, th := range ths {
				if !th.OneLabel || th.Value != 0 {
					t.Errorf("fold %d: got threshold %v (one label %v), want none learned: 0, one label", th.Fold, th.Value, th.OneLabel)
				}
			}
			for i, used := range d.used("bfcl-x") {
				if !used {
					t.Errorf("case %d: got no tool, want a tool on any match when no threshold is learned", i)
					break
				}
			}
		})
	}
}

// prober is a fake model server for Probe: the models it lists, and how its chats end.
type prober struct {
	models  []string
	listErr error
	chatErr error
	noDone  bool
	chats   int
}

func (p *prober) List(context.Context) (*api.ListResponse, error) {
	if p.listErr != nil {
		return nil, p.listErr
	}
	var r api.ListResponse
	for _, m := range p.models {
		r.Models = append(r.Models, api.ListModelResponse{Name: m, Model: m})
	}
	return &r, nil
}

func (p *prober) Chat(_ context.Context, req *api.ChatRequest, fn api.ChatResponseFunc) error {
	p.chats++
	if p.chatErr != nil {
		return p.chatErr
	}
	return fn(api.ChatResponse{Model: req.Model, Message: api.Message{Role: "assistant", Content: "ready"}, Done: !p.noDone})
}

func TestProbe(t *testing.T) {
	tests := []struct {
		name      string
		p         prober
		want      string
		wantChats int
	}{
		{"down", prober{listErr: errors.New("connection refused")}, "no model server at http://h:1", 0},
		{"not pulled", prober{models: []string{"llama3.1:8b"}}, "model qwen2.5:7b is not pulled at http://h:1 (ollama pull qwen2.5:7b)", 0},
		{"listed but every chat fails", prober{models: []string{"qwen2.5:7b"}, chatErr: errors.New("model requires more system memory")},
			"model qwen2.5:7b at http://h:1 failed a test chat: model requires more system memory", 1},
		{"listed, chat never finishes", prober{models: []string{"qwen2.5:7b"}, noDone: true}, "model qwen2.5:7b at http://h:1 did not finish a test chat", 1},
		{"listed and chats", prober{models: []string{"qwen2.5:7b"}}, "", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Probe(context.Background(), &tc.p, "http://h:1", "qwen2.5:7b", ProbeTimeouts{List: time.Second, Chat: time.Second})
			if got != tc.want || tc.p.chats != tc.wantChats {
				t.Errorf("got %q after %d chats, want %q after %d", got, tc.p.chats, tc.want, tc.wantChats)
			}
		})
	}
}
