package prompts

import (
	"strings"
	"testing"
)

var councilEvidence = []CouncilEvidence{
	{Step: 1, Server: "calculator", Tool: "evaluate", Arguments: `{"expression":"17*23+4^2"}`, Result: "407", Mark: "fedcba9876543210"},
	{Step: 2, Server: "clock", Tool: "current_time", Arguments: `{"timezone":"Asia/Tokio"}`, IsError: true,
		Result: `parameter "timezone": unknown time zone "Asia/Tokio"`, Mark: "fedcba9876543210"},
	{Step: 3, Server: "weather", Tool: "forecast", Arguments: `{"city":"Paris"}`, Failed: "tool_timeout: no answer within 30s", Mark: "fedcba9876543210"},
}

var councilAnswers = []CouncilAnswer{
	{Label: "Response A", Text: "17*23+4^2 = 407. The time in Tokyo could not be checked."},
	{Label: "Response B", Text: "It is 407.\nI cannot tell the weather."},
}

func TestCouncilGolden(t *testing.T) {
	tests := []goldenCase{
		{"council_stage1", func() (string, error) { return CouncilStage1(councilEvidence) }},
		{"council_stage1_no_tools", func() (string, error) { return CouncilStage1(nil) }},
		{"council_stage2", func() (string, error) {
			return CouncilStage2("What is 17*23+4^2, the time in Tokyo and the weather in Paris?", councilEvidence, councilAnswers)
		}},
		{"council_stage3", func() (string, error) {
			return CouncilStage3("What is 17*23+4^2, the time in Tokyo and the weather in Paris?", councilEvidence, councilAnswers,
				[]CouncilReview{{Reviewer: "Reviewer 1", Text: "A is complete.\n\nFINAL RANKING:\n1. Response A\n2. Response B"}},
				[]CouncilRank{{Position: 1, Label: "Response A", Average: 1, Votes: 1}, {Position: 2, Label: "Response B", Average: 2, Votes: 1}})
		}},
		{"completion_evidence", func() (string, error) { return CompletionEvidence(councilEvidence) }},
		{"completion_no_tools", func() (string, error) { return CompletionEvidence(nil) }},
		{"council_stage3_no_review", func() (string, error) {
			return CouncilStage3("Why is the sky blue?", nil, councilAnswers, nil, nil)
		}},
	}
	runGolden(t, tests)
}

// TestCouncilStage1MarksToolErrors: a tool error and a failed call are never shown as results.
func TestCouncilStage1MarksToolErrors(t *testing.T) {
	got, err := CouncilStage1(councilEvidence)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"<<<data fedcba9876543210>>>\n407\n<<<end fedcba9876543210>>>",
		"The tool answered with an error:\n<<<data fedcba9876543210>>>\nparameter \"timezone\"",
		"The call failed and returned nothing:\n<<<data fedcba9876543210>>>\ntool_timeout",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("stage-1 prompt lacks %q:\n%s", want, got)
		}
	}
}
