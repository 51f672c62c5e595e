package router_test

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"toolrouter/internal/fakeollama"
	"toolrouter/router"
)

func TestConfidence(t *testing.T) {
	tests := []struct {
		name     string
		min      float64
		p        float64
		wantCall bool
	}{
		{"off: followed whatever the confidence", 0, 0.3, true},
		{"above the minimum: followed", 0.5, 0.8, true},
		{"below the minimum: no call, degraded", 0.5, 0.3, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, router.Settings{MinConfidence: tc.min}, fakeollama.Scored("calculator.add", "faults", tc.p, 0.9, 100), args(`{"a": 2, "b": 40}`))
			out, err := e.router.Route(context.Background(), router.Request{Query: "what is 2 plus 40?"})
			if err != nil {
				t.Fatal(err)
			}
			p1 := e.model.Requests()[0]
			if !p1.Logprobs || p1.TopLogprobs < 2 {
				t.Errorf("phase 1 asked logprobs=%v top_logprobs=%d, want both", p1.Logprobs, p1.TopLogprobs)
			}
			c := out.Confidence
			if c == nil || c.Tool == nil || c.UseTool == nil {
				t.Fatalf("got confidence %+v, want tool and use_tool", c)
			}
			// "calculator" against "faults": the first token decides between the two servers' tools.
			if math.Abs(*c.Tool-tc.p) > 1e-9 || math.Abs(*c.UseTool-0.9) > 1e-9 {
				t.Errorf("got tool %v use_tool %v, want %v and 0.9", *c.Tool, *c.UseTool, tc.p)
			}
			var step *router.Step
			for i := range out.Trace {
				if out.Trace[i].Kind == router.StepSelect {
					step = &out.Trace[i]
				}
			}
			if step == nil || step.Confidence == nil || *step.Confidence.Tool != *c.Tool {
				t.Errorf("select step %+v lacks the confidence", step)
			}
			if got := len(out.Calls) > 0; got != tc.wantCall {
				t.Fatalf("got calls %+v, want a call: %v", out.Calls, tc.wantCall)
			}
			if !tc.wantCall {
				if out.DegradedReason != router.DegradedLowConfidence || out.Stopped != router.StopNoTool {
					t.Errorf("got degraded %q (%s), stopped %s; want low_confidence, no_tool", out.DegradedReason, out.Degraded, out.Stopped)
				}
				if n := len(e.model.Requests()); n != 1 {
					t.Errorf("got %d model calls, want phase 1 only", n)
				}
			} else if out.Degraded != "" {
				t.Errorf("got degraded %q, want none", out.Degraded)
			}
		})
	}
}

// TestReasoningShapes: each router.reasoning sends its own phase-1 format and instructions, and
// the answer in that shape routes.
func TestReasoningShapes(t *testing.T) {
	tests := []struct {
		reasoning     router.Reasoning
		answer        string
		wantReasoning bool
		wantTask      bool
	}{
		{router.ReasoningNone, `{"use_tool":true,"calls":["calculator.add"],"needs_more":false,"direct":true}`, false, false},
		{router.ReasoningBrief, `{"reasoning":"adds","use_tool":true,"calls":["calculator.add"],"needs_more":false,"direct":true}`, true, false},
		{router.ReasoningFull, `{"reasoning":"adds two numbers","use_tool":true,"calls":[{"tool":"calculator.add","task":"add"}],"needs_more":false,"direct":true}`, true, true},
	}
	for _, tc := range tests {
		t.Run(string(tc.reasoning), func(t *testing.T) {
			e := newEnv(t, router.Settings{Reasoning: tc.reasoning}, fakeollama.Reply{Content: tc.answer}, args(`{"a": 2, "b": 40}`))
			out, err := e.router.Route(context.Background(), router.Request{Query: "what is 2 plus 40?"})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Calls) != 1 || out.Result == nil || out.Result.Text != "42" {
				t.Fatalf("got calls %+v, want calculator.add answering 42", out.Calls)
			}
			p1 := e.model.Requests()[0]
			var f struct {
				Properties map[string]json.RawMessage `json:"properties"`
				Required   []string                   `json:"required"`
			}
			if err := json.Unmarshal(p1.Format, &f); err != nil {
				t.Fatal(err)
			}
			_, hasReasoning := f.Properties["reasoning"]
			if hasReasoning != tc.wantReasoning {
				t.Errorf("format has reasoning: %v, want %v", hasReasoning, tc.wantReasoning)
			}
			if got := strings.Contains(string(f.Properties["calls"]), `"task"`); got != tc.wantTask {
				t.Errorf("format has task: %v, want %v", got, tc.wantTask)
			}
			if !tc.wantReasoning && f.Required[0] != "use_tool" {
				t.Errorf("got required %v, want the decision first", f.Required)
			}
			if got := strings.Contains(p1.Messages[0].Content, `"reasoning"`); got != tc.wantReasoning {
				t.Errorf("instructions mention reasoning: %v, want %v", got, tc.wantReasoning)
			}
		})
	}
}
