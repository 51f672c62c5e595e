package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"toolrouter/bench/metrics"
)

func sample() *Results {
	measured := Row{Dataset: "bfcl-simple", Router: "bm25", Status: Measured, Cases: 4,
		Decision: metrics.Confusion{TP: 2, FP: 1, FN: 1}, Selection: metrics.Ratio{Correct: 1, Total: 3},
		Routing: metrics.Ratio{Correct: 1, Total: 4}, Latency: Latency{P50: 0.05, P95: 0.1, P99: 0.1, Max: 0.1}, QPS: Float(20000),
		Ranking: &metrics.Ratio{Correct: 2, Total: 3}}
	measured.Fill()
	model := Row{Dataset: "bfcl-simple", Router: "two-phase", Status: Measured, Cases: 4,
		Decision: metrics.Confusion{TP: 3, TN: 1}, Selection: metrics.Ratio{Correct: 3, Total: 3},
		Arguments: &metrics.Ratio{Correct: 2, Total: 3}, Routing: metrics.Ratio{Correct: 4, Total: 4},
		EndToEnd: &metrics.Ratio{Correct: 3, Total: 4}, Latency: Latency{P50: 800, P95: 1500, P99: 1600, Max: 1600},
		ModelCallsPerQuery: Float(1.75), PromptTokensPerQuery: Float(900), DecodeTokensPerQuery: Float(40), UncachedPromptTokensPerQuery: Float(300),
		Time:       &TimeSplit{LoadMS: 0.5, PrefillMS: 120, DecodeMS: 500, RestMS: 60, ToolsMS: 100, SidecarMS: 19.5},
		Confidence: &Confidence{UseTool: Float(0.95), UseToolAnswers: 4, Tool: Float(0.9), ToolAnswers: 3}}
	model.Fill()
	return &Results{
		Command: "go run ./bench", Seed: 1, Machine: Machine{GoVersion: "go1.26", OS: "linux", Arch: "amd64", CPUs: 2},
		Model:    Model{URL: "http://127.0.0.1:11434", Name: "qwen2.5:7b", Status: "measured"},
		Datasets: []Dataset{{Name: "bfcl-simple", Family: "bfcl", Source: "x <y>", Cases: 4, NeedTool: 3, NoTool: 1, Notes: []string{"a note"}}},
		Rows: []Row{measured, model,
			{Dataset: "bfcl-simple", Router: "native", Status: Unavailable, Reason: "not landed"},
			{Dataset: "bfcl-simple", Router: "hybrid", Status: Skipped, Reason: "no model server at http://127.0.0.1:11434"}},
		Tuning: "tuned per source.",
		Thresholds: []Threshold{{Source: "bfcl", Router: "bm25", Fold: 0, Value: 1.5, TunedOn: 2, AppliedTo: 2},
			{Source: "bfcl", Router: "bm25", Fold: 1, TunedOn: 2, AppliedTo: 2, OneLabel: true}},
	}
}

func TestFill(t *testing.T) {
	r := sample().Rows[1]
	// P = 3/3, R = 3/3, arguments 2/3, end-to-end 3/4.
	if *r.Precision != 1 || *r.Recall != 1 || *r.ArgumentAccuracy != 2.0/3 || *r.EndToEndAccuracy != 0.75 || r.RankingAccuracy != nil {
		t.Errorf("got P %v R %v args %v e2e %v ranking %v", *r.Precision, *r.Recall, *r.ArgumentAccuracy, *r.EndToEndAccuracy, r.RankingAccuracy)
	}
	var empty Row
	empty.Fill()
	if empty.Precision != nil || empty.SelectionAccuracy != nil || empty.EndToEndAccuracy != nil {
		t.Error("an empty row has figures, want none")
	}
}

func TestMarkdown(t *testing.T) {
	md := Markdown(sample())
	for _, want := range []string{
		"### bfcl-simple",
		"| router | bfcl-simple | degraded |",
		"| bm25 | 0.250 | 0 of 4 |",
		"| hybrid | skipped | — |",
		"| native | n/a | — |",
		"| bm25 | 0.667 | 0.667 | 0.667 | 0.333 | n/a | n/a | 0.250 | 0 | 0 | 0.050 | 0.100 | 0.100 | — | — | 20000 |",
		"| two-phase | 1.000 | 1.000 | 1.000 | 1.000 | 0.667 | 0.750 | 1.000 | 0 | 0 | 800 | 1500 | 1600 | 1.750 | 900 | — |",
		"| router | model calls/q | decode tokens/q | uncached prompt tokens/q | load | prefill | decode | rest | tools | sidecar | mean ms |",
		"| two-phase | 1.750 | 40 | 300 | 0.500 | 120 | 500 | 60 | 100 | 20 | 800 |",
		"| native | not yet available: not landed |",
		"| hybrid | skipped: no model server at http://127.0.0.1:11434 |",
		"Note: a note.",
		"Top-ranked tool right, threshold ignored (tool queries): bm25 0.667.",
		"Phase-1 confidence, mean over the answers that carry it (answers): two-phase: use_tool 0.950 (4), tool 0.900 (3).",
		"Thresholds: tuned per source.",
		"| bfcl | bm25 | 0 | 1.500 | 2 | 2 |",
		"| bfcl | bm25 | 1 | none (one label) | 2 | 2 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "Warning") {
		t.Errorf("a run without degraded answers warns:\n%s", md)
	}
	if strings.Contains(md, "| bm25 | — |") {
		t.Errorf("a model-free router has a row in the time table:\n%s", md)
	}
}

// TestDegradedWarning checks that a run where more than 1% of the answers degraded says so at the
// top, and that a degraded count shows in the tables.
func TestDegradedWarning(t *testing.T) {
	tests := []struct {
		name     string
		degraded int // of the model row's 4 answers; the bm25 row has 4 more, none degraded
		warn     bool
	}{
		{"none", 0, false},
		{"one of eight", 1, true},
		{"all", 4, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := sample()
			res.Rows[1].Degraded = tc.degraded
			md := Markdown(res)
			top, _, _ := strings.Cut(md, "\n")
			want := fmt.Sprintf("**Warning: %d of 8 answers", tc.degraded)
			if got := strings.HasPrefix(top, want); got != tc.warn {
				t.Errorf("got first line %q, want a warning %v", top, tc.warn)
			}
			if tc.warn && !strings.Contains(top, fmt.Sprintf("two-phase %d of 4", tc.degraded)) {
				t.Errorf("warning %q does not name the router", top)
			}
			if row := fmt.Sprintf("| 1.000 | %d | 0 | 800 |", tc.degraded); !strings.Contains(md, row) {
				t.Errorf("table lacks the degraded count %q:\n%s", row, md)
			}
		})
	}
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	res := sample()
	md, err := Write(dir, res)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back Results
	if err := json.Unmarshal(raw, &back); err != nil || len(back.Rows) != 4 || *back.Rows[1].EndToEndAccuracy != 0.75 {
		t.Fatalf("results.json does not round-trip: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "results.md")); string(b) != md {
		t.Error("results.md differs from the returned markdown")
	}
	svg, _ := os.ReadFile(filepath.Join(dir, "chart.svg"))
	dec := xml.NewDecoder(bytes.NewReader(svg))
	points := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("chart.svg is not XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "title" {
			points++
		}
	}
	// One point per measured row; skipped and unavailable rows are not drawn.
	if points != 2 {
		t.Errorf("got %d points, want 2", points)
	}
}

// TestLineChart: the chart is well-formed XML with one line per series in each panel, a point per
// value, the reference line, and names escaped.
func TestLineChart(t *testing.T) {
	c := LineChart{
		Title: "recall <by budget>", XLabel: "tokens", YLabel: "recall", XTicks: []float64{1000, 2000, 4000},
		YMin: 0, YMax: 1, Reference: &Reference{Y: 0.97, Label: "target"},
		Panels: []LinePanel{
			{Title: "A & B", Series: []Series{
				{Name: "bm25", Color: "#000", Points: []Point{{1000, 0.5}, {2000, 0.7}, {4000, 0.9}}},
				{Name: "gate", Color: "#f00", Points: []Point{{1000, 0.1}, {2000, 0.2}, {4000, 0.3}}},
			}},
			{Title: "C", Series: []Series{{Name: "bm25", Color: "#000", Points: []Point{{1000, 1}}}}},
		},
	}
	counts := map[string]int{}
	dec := xml.NewDecoder(strings.NewReader(c.SVG()))
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			counts[se.Name.Local]++
		}
	}
	// 7 points and 2 legend entries; 3 lines; 2 reference lines among the grid lines.
	if counts["circle"] != 7+2 || counts["polyline"] != 3 {
		t.Errorf("got %d circles and %d polylines, want 9 and 3", counts["circle"], counts["polyline"])
	}
	if !strings.Contains(c.SVG(), `stroke-dasharray`) || !strings.Contains(c.SVG(), "A &amp; B") {
		t.Error("no reference line, or a title not escaped")
	}
}
