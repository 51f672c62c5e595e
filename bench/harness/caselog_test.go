package harness

import (
	"reflect"
	"testing"
	"time"

	"toolrouter/bench/metrics"
	"toolrouter/router"
)

// TestCaseRecordRoundTrip checks that every kind of answer comes back from its line as it was
// made, so a resumed run scores what the interrupted one answered, and that each gets its outcome.
func TestCaseRecordRoundTrip(t *testing.T) {
	calls := []metrics.Call{{Name: "s.add", Args: map[string]any{"a": 1.5}}}
	sure, unsure := 0.99, 0.5
	tests := []struct {
		name   string
		router string
		p      prediction
		want   Outcome
	}{
		{"tool", TwoPhase, prediction{used: true, calls: calls, latency: 1234567 * time.Nanosecond, modelCalls: 2, promptTokens: 900, executed: 1, recorded: 1,
			confidence: &router.Confidence{UseTool: &sure, Tool: &unsure}}, OutcomeTool},
		{"no tool", Hybrid, prediction{latency: 42 * time.Microsecond}, OutcomeNoTool},
		{"ranked", BM25, prediction{best: "s.add", score: 3.25, latency: time.Millisecond}, OutcomeRanked},
		{"council", CouncilKeywords, prediction{used: true, calls: []metrics.Call{{Name: "s.add"}}, score: 2}, OutcomeTool},
		{"degraded", Native, prediction{degraded: true, degradedBy: "model_failure", degradedWhy: "model call: 500", modelCalls: 1}, OutcomeDegraded},
		{"timed out", TwoPhase, prediction{timedOut: true, used: true, calls: calls, latency: 2 * time.Minute, modelCalls: 3, promptTokens: 10}, OutcomeTimedOut},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.p.record(runOf(tc.router), "d", "1")
			if r.Outcome != tc.want {
				t.Errorf("got outcome %q, want %q", r.Outcome, tc.want)
			}
			if got := r.prediction(); !reflect.DeepEqual(got, tc.p) {
				t.Errorf("got %+v back, want %+v", got, tc.p)
			}
		})
	}
}
