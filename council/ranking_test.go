package council

import (
	"slices"
	"strings"
	"testing"
)

func TestParseRanking(t *testing.T) {
	abc := []string{"Response A", "Response B", "Response C"}
	tests := []struct {
		name     string
		text     string
		want     []string
		section  bool
		problems []string // substrings, in order
	}{
		{
			name:    "as asked",
			text:    "Response A is thorough. Response B is wrong.\n\nFINAL RANKING:\n1. Response C\n2. Response A\n3. Response B",
			want:    []string{"Response C", "Response A", "Response B"},
			section: true,
		},
		{
			name:    "markdown bold heading and labels",
			text:    "Evaluation...\n\n**FINAL RANKING:**\n1. **Response B**\n2. **Response A**\n3. **Response C**\n",
			want:    []string{"Response B", "Response A", "Response C"},
			section: true,
		},
		{
			name:    "lowercase, markdown heading, explanations after labels",
			text:    "## final ranking\n1. response c — clearest, unlike Response A\n2. response a: mostly right\n3) response b (ignores the tool result)",
			want:    []string{"Response C", "Response A", "Response B"},
			section: true,
		},
		{
			name:    "the last heading wins",
			text:    "I will end with a FINAL RANKING as asked.\nResponse A mentions Response B.\n\nFinal Ranking:\n1. Response B\n2. Response C\n3. Response A",
			want:    []string{"Response B", "Response C", "Response A"},
			section: true,
		},
		{
			name:    "chain with >",
			text:    "FINAL RANKING: Response B > Response A > Response C",
			want:    []string{"Response B", "Response A", "Response C"},
			section: true,
		},
		{
			name:    "bare letters",
			text:    "FINAL RANKING:\n1. C\n2. (A)\n3. B.",
			want:    []string{"Response C", "Response A", "Response B"},
			section: true,
		},
		{
			name:    "bullets and ordinals",
			text:    "Final ranking -\n- 1st: Response A\n- 2nd: Response C\n- 3rd: Response B",
			want:    []string{"Response A", "Response C", "Response B"},
			section: true,
		},
		{
			name:     "missing label",
			text:     "FINAL RANKING:\n1. Response B\n2. Response A",
			want:     []string{"Response B", "Response A"},
			section:  true,
			problems: []string{"Response C not ranked"},
		},
		{
			name:     "duplicate and unknown labels",
			text:     "FINAL RANKING:\n1. Response A\n2. Response D\n3. Response A\n4. Response C\n5. Response B",
			want:     []string{"Response A", "Response C", "Response B"},
			section:  true,
			problems: []string{"unknown label Response D", "Response A ranked twice"},
		},
		{
			name:     "no heading, numbered list",
			text:     "Response A is good and Response C is weak.\nMy order:\n1. Response A\n2. Response B\n3. Response C",
			want:     []string{"Response A", "Response B", "Response C"},
			problems: []string{"no FINAL RANKING section"},
		},
		{
			name:     "no heading, chain",
			text:     "Response A is good.\nOverall: Response C > Response A > Response B",
			want:     []string{"Response C", "Response A", "Response B"},
			problems: []string{"no FINAL RANKING section"},
		},
		{
			name:     "no ranking at all",
			text:     "All three responses are fine; Response A is the longest.",
			problems: []string{"no FINAL RANKING section", "Response A not ranked", "Response B not ranked", "Response C not ranked"},
		},
		{
			name:    "words that look like labels are not labels",
			text:    "FINAL RANKING:\n1. The response is Response B\n2. Response A\n3. Response C",
			want:    []string{"Response B", "Response A", "Response C"},
			section: true,
		},
		{
			name:    "own label included",
			text:    "FINAL RANKING:\n1. Response A (mine)\n2. Response C\n3. Response B",
			want:    []string{"Response A", "Response C", "Response B"},
			section: true,
		},
		{
			name:    "windows line ends and trailing text",
			text:    "FINAL RANKING:\r\n1. Response C\r\n2. Response B\r\n3. Response A\r\n",
			want:    []string{"Response C", "Response B", "Response A"},
			section: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ParseRanking(tc.text, abc)
			if !slices.Equal(got.Labels, tc.want) || got.Section != tc.section {
				t.Errorf("got %v (section %v), want %v (section %v); problems %v", got.Labels, got.Section, tc.want, tc.section, got.Problems)
			}
			if len(got.Problems) != len(tc.problems) {
				t.Fatalf("got problems %q, want %q", got.Problems, tc.problems)
			}
			for i, p := range tc.problems {
				if !strings.Contains(got.Problems[i], p) {
					t.Errorf("problem %d: got %q, want %q", i, got.Problems[i], p)
				}
			}
		})
	}
}

func TestRankingComplete(t *testing.T) {
	abc := []string{"Response A", "Response B", "Response C"}
	tests := []struct {
		text string
		own  string
		want bool
	}{
		{"FINAL RANKING:\n1. Response A\n2. Response B\n3. Response C", "Response A", true},
		{"FINAL RANKING:\n1. Response B\n2. Response C", "Response A", true}, // left its own out
		{"FINAL RANKING:\n1. Response A\n2. Response C", "Response A", false},
		{"1. Response A\n2. Response B\n3. Response C", "Response A", false}, // no heading
		{"FINAL RANKING:\n1. Response A\n2. Response B\n3. Response C\n4. Response B", "Response C", false},
	}
	for _, tc := range tests {
		if got := ParseRanking(tc.text, abc).complete(abc, tc.own); got != tc.want {
			t.Errorf("complete(%q, own %s): got %v, want %v", tc.text, tc.own, got, tc.want)
		}
	}
}

func TestAggregate(t *testing.T) {
	l2m := map[string]string{"Response A": "a", "Response B": "b", "Response C": "c"}
	labels := []string{"Response A", "Response B", "Response C"}
	tests := []struct {
		name    string
		reviews []Review
		want    []Aggregate
	}{
		{
			name: "own votes not counted",
			reviews: []Review{
				{Label: "Response A", ParsedRanking: []string{"Response A", "Response B", "Response C"}},
				{Label: "Response B", ParsedRanking: []string{"Response B", "Response A", "Response C"}},
				{Label: "Response C", ParsedRanking: []string{"Response C", "Response A", "Response B"}},
			},
			want: []Aggregate{
				{Model: "a", Label: "Response A", AverageRank: 2, RankingsCount: 2},
				{Model: "b", Label: "Response B", AverageRank: 2.5, RankingsCount: 2},
				{Model: "c", Label: "Response C", AverageRank: 3, RankingsCount: 2},
			},
		},
		{
			name: "partial ranking and a failed reviewer",
			reviews: []Review{
				{Label: "Response A", ParsedRanking: []string{"Response C"}},
				{Label: "Response B", ParsedRanking: []string{"Response A", "Response C"}},
				{Label: "Response C", Error: "timed out"},
			},
			want: []Aggregate{
				{Model: "a", Label: "Response A", AverageRank: 1, RankingsCount: 1},
				{Model: "c", Label: "Response C", AverageRank: 1.5, RankingsCount: 2},
			},
		},
		{
			name: "a tie goes to more votes",
			reviews: []Review{
				{Label: "Response A", ParsedRanking: []string{"Response C"}},
				{Label: "Response B", ParsedRanking: []string{"Response C"}},
				{Label: "Response C", ParsedRanking: []string{"Response A"}},
			},
			want: []Aggregate{
				{Model: "c", Label: "Response C", AverageRank: 1, RankingsCount: 2},
				{Model: "a", Label: "Response A", AverageRank: 1, RankingsCount: 1},
			},
		},
		{
			name: "then to the label",
			reviews: []Review{
				{Label: "Response B", ParsedRanking: []string{"Response A"}},
				{Label: "Response A", ParsedRanking: []string{"Response B"}},
			},
			want: []Aggregate{
				{Model: "a", Label: "Response A", AverageRank: 1, RankingsCount: 1},
				{Model: "b", Label: "Response B", AverageRank: 1, RankingsCount: 1},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := aggregate(tc.reviews, l2m, labels)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestLabelName(t *testing.T) {
	for i, want := range map[int]string{0: "Response A", 25: "Response Z", 26: "Response AA", 27: "Response AB"} {
		if got := labelName(i); got != want {
			t.Errorf("labelName(%d): got %q, want %q", i, got, want)
		}
	}
}

func TestRedactor(t *testing.T) {
	r := redactor([]Member{{Name: "gpt-big", ModelID: "openai/gpt-4o"}, {Name: "x", ModelID: "qwen2.5:7b"}})
	got := r("I am GPT-4o (gpt-big, OpenAI/GPT-4o), not Qwen2.5 or qwen2.5:7b; x marks the spot.")
	want := "I am [model] ([model], [model]), not [model] or [model]; x marks the spot."
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
