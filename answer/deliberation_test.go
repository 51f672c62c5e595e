package answer

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"toolrouter/access"
	"toolrouter/council"
	"toolrouter/router"
)

type routeFunc func(context.Context, router.Request) (*router.Outcome, error)

func (f routeFunc) Route(ctx context.Context, req router.Request) (*router.Outcome, error) {
	return f(ctx, req)
}

// scriptedCouncil emits its events, then answers final.
type scriptedCouncil struct {
	events []council.Event
	final  string
	by     council.AnsweredBy
}

func (s scriptedCouncil) Run(_ context.Context, _ council.Input, emit func(council.Event)) (*council.Result, error) {
	for _, ev := range s.events {
		emit(ev)
	}
	return &council.Result{Final: s.final, AnsweredBy: s.by}, nil
}

// TestCouncilChatDeltas: a streamed council completion sends the chairman's pieces as text (once:
// the final answer is not sent again after them), the final answer whole when no piece came (a
// council that does not stream, an answer awaiting approval), and the deliberation as thinking
// only when it is shown.
func TestCouncilChatDeltas(t *testing.T) {
	stage1 := council.Event{Type: council.Stage1Answer, Data: council.Answer{Model: "alpha", Label: "Response B", Response: "It is 5."}}
	ranking := council.Event{Type: council.Stage2Complete, Metadata: council.Stage2Metadata{AggregateRankings: []council.Aggregate{
		{Model: "alpha", Label: "Response B", AverageRank: 1, RankingsCount: 2}}}}
	piece := func(s string) council.Event {
		return council.Event{Type: council.Stage3Delta, Data: council.Delta{Text: s}}
	}
	off := api.ThinkValue{Value: false}
	tests := []struct {
		name        string
		council     scriptedCouncil
		pending     bool
		delib       Deliberation
		think       *api.ThinkValue
		wantText    []string
		wantThought []string // substrings of the thinking, in order; nil: no thinking
		wantBy      string
	}{
		{name: "streamed chairman, anonymised deliberation", council: scriptedCouncil{events: []council.Event{stage1, ranking, piece("Five"), piece(".")}, final: "Five.", by: council.AnsweredByCouncil},
			delib: Deliberation{Show: true}, wantText: []string{"Five", "."}, wantThought: []string{"**Response B**\nIt is 5.", "**Aggregate ranking**\n1. Response B (average position 1 over 2 reviews)"}, wantBy: "council"},
		{name: "named deliberation", council: scriptedCouncil{events: []council.Event{stage1, piece("Five.")}, final: "Five.", by: council.AnsweredByCouncil},
			delib: Deliberation{Show: true, Names: true}, wantText: []string{"Five."}, wantThought: []string{"**alpha (Response B)**"}, wantBy: "council"},
		{name: "reasoning_effort none", council: scriptedCouncil{events: []council.Event{stage1, piece("Five.")}, final: "Five.", by: council.AnsweredByCouncil},
			delib: Deliberation{Show: true}, think: &off, wantText: []string{"Five."}, wantBy: "council"},
		{name: "a council that does not stream", council: scriptedCouncil{final: "Five.", by: council.AnsweredByFallback},
			delib: Deliberation{Show: true}, wantText: []string{"Five."}, wantBy: "fallback"},
		{name: "awaiting approval", pending: true, council: scriptedCouncil{final: "never"},
			delib: Deliberation{Show: true}, wantText: []string{"Approval is needed"}, wantBy: AnsweredByApproval},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rt := routeFunc(func(context.Context, router.Request) (*router.Outcome, error) {
				out := &router.Outcome{UseTool: true}
				if tc.pending {
					out.Pending = []router.Pending{{Server: "files", Tool: "delete", Reason: "destructive", Token: "t"}}
				}
				return out, nil
			})
			c := &Chat{Router: rt, Answers: &Service{Router: rt, Council: tc.council}, Deliberation: tc.delib}
			var text []string
			var thought strings.Builder
			res, err := c.Run(context.Background(), ChatRequest{Model: CouncilModel, Messages: []api.Message{{Role: "user", Content: "2+3?"}}, Think: tc.think},
				access.Identity{}, func(d Delta) {
					if d.Text != "" {
						text = append(text, d.Text)
					}
					thought.WriteString(d.Thinking)
				})
			if err != nil {
				t.Fatal(err)
			}
			if tc.pending {
				if len(text) != 1 || !strings.HasPrefix(text[0], tc.wantText[0]) || text[0] != res.Text {
					t.Errorf("text deltas %q: want the answer awaiting approval once", text)
				}
			} else if !slices.Equal(text, tc.wantText) || strings.Join(text, "") != res.Text {
				t.Errorf("text deltas %q (final %q): want %q, joined the final answer", text, res.Text, tc.wantText)
			}
			if res.Trace.AnsweredBy != tc.wantBy {
				t.Errorf("answered_by %q, want %q", res.Trace.AnsweredBy, tc.wantBy)
			}
			got := thought.String()
			if tc.wantThought == nil && got != "" {
				t.Errorf("thinking %q, want none", got)
			}
			at := 0
			for _, w := range tc.wantThought {
				i := strings.Index(got[at:], w)
				if i < 0 {
					t.Fatalf("thinking lacks %q (in order):\n%s", w, got)
				}
				at += i + len(w)
			}
			if !tc.delib.Names && strings.Contains(got, "alpha") {
				t.Errorf("anonymised thinking names the member:\n%s", got)
			}
		})
	}
}
