package council_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"toolrouter/council"
	"toolrouter/provider"
)

var evidence = []council.Evidence{
	{Server: "calculator", Tool: "evaluate", Arguments: map[string]any{"expression": "17*23+4^2"}, Text: "407"},
	{Server: "clock", Tool: "current_time", Arguments: map[string]any{"timezone": "Asia/Tokio"}, IsError: true, Text: `unknown time zone "Asia/Tokio"`},
}

const query = "What is 17*23+4^2, and what time is it in Tokyo?"

// collect keeps the stage events (starts and completes), without the pieces between them.
func collect(events *[]council.Event) func(council.Event) {
	return func(e council.Event) {
		switch e.Type {
		case council.Stage1Delta, council.Stage1Answer, council.Stage3Delta:
		default:
			*events = append(*events, e)
		}
	}
}

// collectAll keeps every event.
func collectAll(events *[]council.Event) func(council.Event) {
	return func(e council.Event) { *events = append(*events, e) }
}

func types(events []council.Event) []council.EventType {
	out := make([]council.EventType, len(events))
	for i, e := range events {
		out[i] = e.Type
	}
	return out
}

var allStages = []council.EventType{
	council.Stage1Start, council.Stage1Complete, council.Stage2Start, council.Stage2Complete, council.Stage3Start, council.Stage3Complete,
}

// TestRunAllStages runs a mixed council (two members on Ollama, one and the chairman on an
// OpenAI-compatible server) through the three stages.
func TestRunAllStages(t *testing.T) {
	alpha, alphaRec := newMember(t, spec{name: "alpha", modelID: "qwen2.5:7b", wire: ollamaWire, script: standard("407. quality=2"),
		price: council.Price{PromptPerMTok: 1, CompletionPerMTok: 2}})
	beta, _ := newMember(t, spec{name: "beta", modelID: "llama3.1:8b", wire: ollamaWire, script: standard("It is 407; Tokyo's time could not be checked. quality=3")})
	gamma, _ := newMember(t, spec{name: "gamma", modelID: "gpt-4o-mini", wire: openaiWire, key: "k", script: standard("391. quality=1")})
	chair, chairRec := newMember(t, spec{name: "chair", modelID: "gpt-4o", wire: openaiWire, key: "k", script: standard("")})

	var events []council.Event
	c := council.New([]council.Member{alpha, beta, gamma}, chair, council.Options{PeerReview: true, Quorum: 2})
	res, err := c.Run(context.Background(), council.Input{Query: query, Evidence: evidence,
		History: []provider.Message{{Role: "user", Content: "hello"}, {Role: "assistant", Content: "hi"}}}, collect(&events))
	if err != nil {
		t.Fatal(err)
	}
	if got := types(events); !slices.Equal(got, allStages) {
		t.Errorf("events: got %v, want %v", got, allStages)
	}
	if res.Final != "Synthesis: 407 (the tool's figure)." || res.AnsweredBy != council.AnsweredByCouncil || res.ChairmanError != "" {
		t.Errorf("got final %q by %q (chairman error %q), want the chairman's synthesis", res.Final, res.AnsweredBy, res.ChairmanError)
	}
	if len(res.Skipped) != 0 {
		t.Errorf("got skipped %+v, want none", res.Skipped)
	}
	// Labels: a permutation of A, B, C, consistent with label_to_model.
	var labels []string
	for _, a := range res.Stage1 {
		labels = append(labels, a.Label)
		if res.LabelToModel[a.Label] != a.Model {
			t.Errorf("label_to_model[%s] = %q, want %q", a.Label, res.LabelToModel[a.Label], a.Model)
		}
	}
	slices.Sort(labels)
	if !slices.Equal(labels, []string{"Response A", "Response B", "Response C"}) {
		t.Errorf("got labels %v, want A, B, C", labels)
	}
	// Every reviewer ranked by quality: beta, alpha, gamma; own votes left out.
	for _, r := range res.Stage2 {
		if !r.ParseOK || len(r.ParsedRanking) != 3 {
			t.Errorf("review by %s: parse_ok %v, ranking %v (%v), want a complete ranking", r.Model, r.ParseOK, r.ParsedRanking, r.ParseProblems)
		}
	}
	var order []string
	for _, a := range res.AggregateRankings {
		order = append(order, a.Model)
	}
	if !slices.Equal(order, []string{"beta", "alpha", "gamma"}) {
		t.Errorf("aggregate order: got %v, want [beta alpha gamma]", order)
	}
	// Everyone ranks beta, alpha, gamma; nobody's vote on its own answer counts.
	want := map[string][2]float64{"beta": {1, 2}, "alpha": {2, 2}, "gamma": {3, 2}}
	for _, a := range res.AggregateRankings {
		if w := want[a.Model]; a.AverageRank != w[0] || float64(a.RankingsCount) != w[1] {
			t.Errorf("%s: got average %v over %d, want %v over %v", a.Model, a.AverageRank, a.RankingsCount, w[0], w[1])
		}
	}
	// Prompts: stage 1 has the evidence (the tool error marked) and the history; the chairman sees
	// the answers, the reviews and the ranking.
	p1 := alphaRec.stage(1)[0]
	for _, s := range []string{">>>\n407\n<<<end ", "The tool answered with an error:\n<<<data ", "unknown time zone", "hello", query} {
		if !strings.Contains(p1, s) {
			t.Errorf("stage-1 prompt lacks %q", s)
		}
	}
	p3 := chairRec.stage(3)[0]
	for _, s := range []string{"quality=3", "Peer reviews:", "Aggregate ranking", "The tool answered with an error:", "say so\n  briefly as a caveat"} {
		if !strings.Contains(p3, s) {
			t.Errorf("chairman prompt lacks %q", s)
		}
	}
	// Usage: 3 + 3 + 1 calls; alpha is priced.
	u := res.Usage
	if u.Stage1.Calls != 3 || u.Stage2.Calls != 3 || u.Stage3.Calls != 1 || u.Total.Calls != 7 {
		t.Errorf("calls: got %d/%d/%d total %d, want 3/3/1 total 7", u.Stage1.Calls, u.Stage2.Calls, u.Stage3.Calls, u.Total.Calls)
	}
	if u.Total.PromptTokens != 3*100+3*300+500 || u.Total.CompletionTokens != 3*20+3*40+30 {
		t.Errorf("tokens: got %d/%d, want 1700/210", u.Total.PromptTokens, u.Total.CompletionTokens)
	}
	wantCost := (100*1+20*2)/1e6 + (300*1+40*2)/1e6
	if u.Total.CostUSD == nil || math.Abs(*u.Total.CostUSD-wantCost) > 1e-12 || u.Total.UnpricedCalls != 5 {
		t.Errorf("cost: got %v with %d unpriced calls, want %v with 5", u.Total.CostUSD, u.Total.UnpricedCalls, wantCost)
	}
	if u.Stage1.DurationMS <= 0 || u.Total.DurationMS < u.Stage1.DurationMS+u.Stage2.DurationMS+u.Stage3.DurationMS {
		t.Errorf("durations: got %+v, want positive stages within the total", u)
	}
	byMember := res.ByMember()
	if len(byMember) != 4 || byMember[0].Member != "alpha" || byMember[0].Calls != 2 || byMember[0].CostUSD == nil || byMember[3].Member != "chair" {
		t.Errorf("by member: got %+v, want alpha (2 calls, priced), beta, gamma, chair", byMember)
	}
}

// TestAnonymisation: reviewers and the chairman never see a member's name or model id, even when
// an answer names its author; labels change with the query.
func TestAnonymisation(t *testing.T) {
	specs := []spec{
		{name: "openai-big", modelID: "openai/gpt-4o", wire: openaiWire},
		{name: "local-llama", modelID: "llama3.1:8b", wire: ollamaWire},
		{name: "claude-sonnet", modelID: "claude-sonnet-4-5", wire: openaiWire},
	}
	var secrets []string
	for _, s := range specs {
		secrets = append(secrets, s.name, s.modelID, "gpt-4o", "llama3.1")
	}
	var members []council.Member
	var recs []*recorder
	for _, s := range specs {
		s.script = func(stage int, prompt string) turn {
			if stage == 1 {
				return turn{text: fmt.Sprintf("As %s (%s, also known as %s) I say 407. quality=1", strings.ToUpper(s.modelID), s.name, s.modelID)}
			}
			return turn{text: rankByQuality(prompt) + "\nI preferred the answer that is not by " + s.name}
		}
		m, rec := newMember(t, s)
		members = append(members, m)
		recs = append(recs, rec)
	}
	chair, chairRec := newMember(t, spec{name: "chairman-model", modelID: "gemini-2.5-pro", wire: openaiWire, script: standard("")})
	secrets = append(secrets, "chairman-model", "gemini-2.5-pro")
	c := council.New(members, chair, council.Options{PeerReview: true, Quorum: 3})

	firstLabels := map[string]bool{}
	for i := range 12 {
		res, err := c.Run(context.Background(), council.Input{Query: fmt.Sprintf("question %d: what is 17*23+4^2?", i), Evidence: evidence}, nil)
		if err != nil {
			t.Fatal(err)
		}
		firstLabels[res.Stage1[0].Label] = true
	}
	if len(firstLabels) < 2 {
		t.Errorf("the first member was %v in 12 queries, want labels that change with the query", firstLabels)
	}
	var seen []string
	for _, rec := range append(recs, chairRec) {
		seen = append(seen, rec.stage(2)...)
		seen = append(seen, rec.stage(3)...)
	}
	if len(seen) != 12*4 {
		t.Fatalf("got %d stage-2 and stage-3 prompts, want 48", len(seen))
	}
	for _, p := range seen {
		low := strings.ToLower(p)
		for _, s := range secrets {
			if strings.Contains(low, strings.ToLower(s)) {
				t.Fatalf("a reviewer or chairman prompt names %q:\n%s", s, p)
			}
		}
		if !strings.Contains(p, "As [model] ([model], also known as [model]) I say 407") {
			t.Fatalf("answers not shown redacted:\n%s", p)
		}
	}
}

// TestPartialFailure covers members that time out or fail, the quorum, and the chairman failing.
func TestPartialFailure(t *testing.T) {
	good := func(name, text string) spec {
		return spec{name: name, modelID: name + "-model", wire: ollamaWire, script: standard(text)}
	}
	tests := []struct {
		name       string
		members    []spec
		chairman   spec
		peerReview bool
		quorum     int

		wantErr     error
		wantEvents  []council.EventType
		wantBy      council.AnsweredBy
		wantFinal   string
		wantSkipped []council.Skip // reasons are matched as substrings
		wantChair   string         // substring of ChairmanError
	}{
		{
			name: "member times out",
			members: []spec{good("a", "A says 407. quality=1"), good("b", "B says 407. quality=2"),
				{name: "slow", modelID: "slow-model", wire: openaiWire, timeout: 50 * time.Millisecond, script: hanging()}},
			chairman: good("chair", ""), peerReview: true, quorum: 2,
			wantEvents: allStages, wantBy: council.AnsweredByCouncil, wantFinal: "Synthesis: 407 (the tool's figure).",
			wantSkipped: []council.Skip{{Member: "slow", Stage: 1, Reason: "member slow: timed out after 50ms"}},
		},
		{
			name: "quorum not met",
			members: []spec{good("a", "407"),
				{name: "broken", modelID: "broken-model", wire: openaiWire, script: failing(500, "CUDA out of memory")},
				{name: "slow", modelID: "slow-model", wire: ollamaWire, timeout: 30 * time.Millisecond, script: hanging()}},
			chairman: good("chair", ""), peerReview: true, quorum: 2,
			wantErr:    council.ErrQuorum,
			wantEvents: []council.EventType{council.Stage1Start, council.Stage1Complete},
			wantSkipped: []council.Skip{
				{Member: "broken", Stage: 1, Reason: "model broken-model: 500 Internal Server Error: CUDA out of memory"},
				{Member: "slow", Stage: 1, Reason: "member slow: timed out after 30ms"}},
		},
		{
			name:     "chairman fails, best-ranked member answers",
			members:  []spec{good("a", "A: 407. quality=1"), good("b", "B: 407 exactly. quality=5"), good("c", "C: 391. quality=0")},
			chairman: spec{name: "chair", modelID: "chair-model", wire: openaiWire, script: failing(503, "The model is overloaded")}, peerReview: true, quorum: 2,
			wantEvents: allStages, wantBy: council.AnsweredByFallback, wantFinal: "B: 407 exactly. quality=5",
			wantSkipped: []council.Skip{{Member: "chair", Stage: 3, Reason: "503 Service Unavailable: The model is overloaded"}},
			wantChair:   "model chair-model: 503 Service Unavailable: The model is overloaded",
		},
		{
			name:     "chairman times out without peer review, first member answers",
			members:  []spec{good("a", "A: 407. quality=1"), good("b", "B: 407 exactly. quality=5")},
			chairman: spec{name: "chair", modelID: "chair-model", wire: ollamaWire, timeout: 30 * time.Millisecond, script: hanging()}, quorum: 1,
			wantEvents: []council.EventType{council.Stage1Start, council.Stage1Complete, council.Stage3Start, council.Stage3Complete},
			wantBy:     council.AnsweredByFallback, wantFinal: "A: 407. quality=1",
			wantSkipped: []council.Skip{{Member: "chair", Stage: 3, Reason: "member chair: timed out after 30ms"}},
			wantChair:   "timed out after 30ms",
		},
		{
			name: "reviewer fails and another writes no ranking",
			members: []spec{good("a", "A: 407. quality=1"), good("b", "B: 407. quality=2"),
				{name: "flaky", modelID: "flaky-model", wire: ollamaWire, script: func(stage int, prompt string) turn {
					if stage == 2 {
						return turn{status: 500, errMsg: "runner crashed\nout of memory"} // reasons are one line
					}
					return turn{text: "F: 407. quality=3"}
				}},
				{name: "rambler", modelID: "rambler-model", wire: ollamaWire, script: func(stage int, prompt string) turn {
					if stage == 2 {
						return turn{text: "They are all fine answers."}
					}
					return turn{text: "R: 407. quality=0"}
				}}},
			chairman: good("chair", ""), peerReview: true, quorum: 2,
			wantEvents: allStages, wantBy: council.AnsweredByCouncil, wantFinal: "Synthesis: 407 (the tool's figure).",
			wantSkipped: []council.Skip{{Member: "flaky", Stage: 2, Reason: "runner crashed; out of memory"}},
		},
		{
			name: "members whose answers do not end are cut at the response limit",
			members: []spec{good("a", "407"),
				{name: "chatty", modelID: "chatty-model", wire: ollamaWire, script: func(int, string) turn { return turn{flood: true} }},
				{name: "verbose", modelID: "verbose-model", wire: openaiWire, script: func(int, string) turn { return turn{flood: true} }}},
			chairman: good("chair", ""), quorum: 1,
			wantEvents: []council.EventType{council.Stage1Start, council.Stage1Complete, council.Stage3Start, council.Stage3Complete},
			wantBy:     council.AnsweredByCouncil,
			wantFinal:  "Synthesis: 407 (the tool's figure).",
			wantSkipped: []council.Skip{
				{Member: "chatty", Stage: 1, Reason: "model response too large"},
				{Member: "verbose", Stage: 1, Reason: "model response too large"}},
		},
		{
			name:     "empty answer is a failure",
			members:  []spec{good("a", "407"), {name: "mute", modelID: "mute-model", wire: openaiWire, script: func(int, string) turn { return turn{text: "  "} }}},
			chairman: good("chair", ""), quorum: 1,
			wantEvents:  []council.EventType{council.Stage1Start, council.Stage1Complete, council.Stage3Start, council.Stage3Complete},
			wantBy:      council.AnsweredByCouncil,
			wantFinal:   "Synthesis: 407 (the tool's figure).",
			wantSkipped: []council.Skip{{Member: "mute", Stage: 1, Reason: "empty answer"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var members []council.Member
			for _, s := range tc.members {
				m, _ := newMember(t, s)
				members = append(members, m)
			}
			chair, chairRec := newMember(t, tc.chairman)
			var events []council.Event
			var logs bytes.Buffer
			c := council.New(members, chair, council.Options{PeerReview: tc.peerReview, Quorum: tc.quorum,
				Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
			res, err := c.Run(context.Background(), council.Input{Query: query, Evidence: evidence}, collect(&events))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("got error %v, want %v", err, tc.wantErr)
			}
			if got := types(events); !slices.Equal(got, tc.wantEvents) {
				t.Errorf("events: got %v, want %v", got, tc.wantEvents)
			}
			if res.AnsweredBy != tc.wantBy || res.Final != tc.wantFinal {
				t.Errorf("got %q by %q, want %q by %q", res.Final, res.AnsweredBy, tc.wantFinal, tc.wantBy)
			}
			if len(res.Skipped) != len(tc.wantSkipped) {
				t.Fatalf("got skipped %+v, want %+v", res.Skipped, tc.wantSkipped)
			}
			for i, w := range tc.wantSkipped {
				g := res.Skipped[i]
				if g.Member != w.Member || g.Stage != w.Stage || !strings.Contains(g.Reason, w.Reason) {
					t.Errorf("skipped[%d]: got %+v, want %+v", i, g, w)
				}
				if !strings.Contains(logs.String(), w.Member) {
					t.Errorf("no log line names skipped member %s: %s", w.Member, logs.String())
				}
			}
			if !strings.Contains(res.ChairmanError, tc.wantChair) || (tc.wantChair == "") != (res.ChairmanError == "") {
				t.Errorf("chairman error: got %q, want %q", res.ChairmanError, tc.wantChair)
			}
			if tc.wantBy == council.AnsweredByFallback {
				if res.Stage3 == nil || res.Stage3.Response != tc.wantFinal || res.Stage3.Error != res.ChairmanError || res.Stage3.FallbackFrom == "" {
					t.Errorf("stage 3: got %+v, want the fallback answer, its member and the chairman's error", res.Stage3)
				}
				if strings.Contains(strings.ToLower(res.Final), "unable to generate") {
					t.Errorf("final answer hides the cause: %q", res.Final)
				}
			}
			var qe *council.QuorumError
			if errors.As(err, &qe) {
				if qe.Answered != 1 || qe.Quorum != 2 || len(chairRec.stage(3)) != 0 {
					t.Errorf("got %+v and %d chairman calls, want 1 of 3 answered, quorum 2, no chairman call", qe, len(chairRec.stage(3)))
				}
				for _, w := range tc.wantSkipped {
					if !strings.Contains(err.Error(), w.Reason) {
						t.Errorf("quorum error %q lacks %q", err, w.Reason)
					}
				}
			}
		})
	}
}

// TestReviewersAreMembersThatAnswered: a member that failed stage 1 is not asked to review.
func TestReviewersAreMembersThatAnswered(t *testing.T) {
	a, aRec := newMember(t, spec{name: "a", modelID: "ma", wire: ollamaWire, script: standard("A quality=1")})
	b, _ := newMember(t, spec{name: "b", modelID: "mb", wire: ollamaWire, script: standard("B quality=2")})
	x, xRec := newMember(t, spec{name: "x", modelID: "mx", wire: ollamaWire, script: failing(500, "down")})
	chair, _ := newMember(t, spec{name: "chair", modelID: "mc", wire: ollamaWire, script: standard("")})
	var events []council.Event
	res, err := council.New([]council.Member{a, b, x}, chair, council.Options{PeerReview: true, Quorum: 2}).
		Run(context.Background(), council.Input{Query: "q"}, collect(&events))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stage2) != 2 || len(xRec.stage(2)) != 0 || len(aRec.stage(2)) != 1 {
		t.Errorf("got %d reviews, x reviewed %d times, a %d; want 2 reviews, x none", len(res.Stage2), len(xRec.stage(2)), len(aRec.stage(2)))
	}
	if got := events[2].Data.(council.StageStart).Members; !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("stage2_start members: got %v, want [a b]", got)
	}
	if p := aRec.stage(2)[0]; strings.Count(p, "<response label=") != 2 {
		t.Errorf("reviewers should see the 2 answers only:\n%s", p)
	}
}

// TestEventPayloads: the events marshal to the llm-council wire form.
func TestEventPayloads(t *testing.T) {
	a, _ := newMember(t, spec{name: "a", modelID: "ma", wire: ollamaWire, script: standard("A quality=1")})
	b, _ := newMember(t, spec{name: "b", modelID: "mb", wire: openaiWire, script: standard("B quality=2")})
	chair, _ := newMember(t, spec{name: "chair", modelID: "mc", wire: ollamaWire, script: standard("")})
	var events []council.Event
	if _, err := council.New([]council.Member{a, b}, chair, council.Options{PeerReview: true}).
		Run(context.Background(), council.Input{Query: "q"}, collect(&events)); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	for _, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		got = append(got, m)
	}
	stage1 := got[1]["data"].([]any)[0].(map[string]any)
	stage2 := got[3]["data"].([]any)[0].(map[string]any)
	meta := got[3]["metadata"].(map[string]any)
	stage3 := got[5]["data"].(map[string]any)
	checks := []struct {
		what string
		m    map[string]any
		keys []string
	}{
		{"stage1 entry", stage1, []string{"model", "response", "label", "usage"}},
		{"stage2 entry", stage2, []string{"model", "ranking", "parsed_ranking", "parse_ok"}},
		{"stage2 metadata", meta, []string{"label_to_model", "aggregate_rankings"}},
		{"aggregate entry", meta["aggregate_rankings"].([]any)[0].(map[string]any), []string{"model", "average_rank", "rankings_count"}},
		{"stage3", stage3, []string{"model", "response", "answered_by"}},
	}
	for _, c := range checks {
		for _, k := range c.keys {
			if _, ok := c.m[k]; !ok {
				t.Errorf("%s lacks %q: %v", c.what, k, c.m)
			}
		}
	}
	if got[0]["type"] != "stage1_start" || !reflect.DeepEqual(got[0]["data"], map[string]any{"members": []any{"a", "b"}}) {
		t.Errorf("stage1_start: got %v", got[0])
	}
}

// TestSecretsAbsent: an API key echoed by a failing server appears in no reason, error, log line or
// result.
func TestSecretsAbsent(t *testing.T) {
	const key = "sk-or-v1-0a1b2c3d4e5f60718293a4b5c6d7e8f9"
	leak := func(int, string) turn {
		return turn{status: 401, errMsg: "No auth credentials found for key " + key}
	}
	a, _ := newMember(t, spec{name: "a", modelID: "ma", wire: openaiWire, key: key, script: standard("A quality=1")})
	b, _ := newMember(t, spec{name: "b", modelID: "mb", wire: openaiWire, key: key, script: leak})
	chair, _ := newMember(t, spec{name: "chair", modelID: "mc", wire: openaiWire, key: key, script: leak})
	var logs bytes.Buffer
	var events []council.Event
	res, err := council.New([]council.Member{a, b}, chair, council.Options{PeerReview: true, Quorum: 1,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))}).
		Run(context.Background(), council.Input{Query: "q"}, collectAll(&events))
	if err != nil {
		t.Fatal(err)
	}
	if res.AnsweredBy != council.AnsweredByFallback || !strings.Contains(res.ChairmanError, "No auth credentials found") {
		t.Fatalf("got %q with chairman error %q, want a fallback with the server's message", res.AnsweredBy, res.ChairmanError)
	}
	out, _ := json.Marshal(res)
	evs, _ := json.Marshal(events)
	all := string(out) + string(evs) + logs.String()
	_, qerr := council.New([]council.Member{b, b}, chair, council.Options{Quorum: 2}).Run(context.Background(), council.Input{Query: "q"}, nil)
	all += fmt.Sprint(qerr)
	if !strings.Contains(all, "[redacted]") {
		t.Errorf("the key's place is not marked: %s", all)
	}
	for i := 0; i+8 <= len(key); i++ {
		if strings.Contains(all, key[i:i+8]) {
			t.Fatalf("output contains %q, a piece of the key:\n%s", key[i:i+8], all)
		}
	}
}

// TestCallerGivesUp: a caller's deadline during stage 1 ends the run with the context's error.
func TestCallerGivesUp(t *testing.T) {
	a, _ := newMember(t, spec{name: "a", modelID: "ma", wire: ollamaWire, script: hanging()})
	b, _ := newMember(t, spec{name: "b", modelID: "mb", wire: openaiWire, script: hanging()})
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Millisecond)
	defer cancel()
	_, err := council.New([]council.Member{a, b}, a, council.Options{Quorum: 1}).Run(ctx, council.Input{Query: "q"}, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want context.DeadlineExceeded", err)
	}
}

func TestStageTimeout(t *testing.T) {
	a, _ := newMember(t, spec{name: "a", modelID: "ma", wire: ollamaWire, script: standard("A")})
	b, _ := newMember(t, spec{name: "b", modelID: "mb", wire: openaiWire, script: hanging()})
	res, err := council.New([]council.Member{a, b}, a, council.Options{Quorum: 1, StageTimeout: 250 * time.Millisecond}).
		Run(context.Background(), council.Input{Query: "q"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) != 1 || res.Skipped[0].Reason != "stage 1: timed out after 250ms" {
		t.Errorf("got skipped %+v, want b with the stage timeout", res.Skipped)
	}
}

func TestTooFewMembers(t *testing.T) {
	_, err := council.New(nil, council.Member{}, council.Options{Quorum: 2}).Run(context.Background(), council.Input{Query: "q"}, func(council.Event) {
		t.Error("an event was emitted for a council that cannot meet")
	})
	if !errors.Is(err, council.ErrQuorum) {
		t.Errorf("got %v, want ErrQuorum", err)
	}
}

// TestLongEvidenceIsShortened: a long tool result reaches the members with its head and tail and a
// marked cut, within the configured bound.
func TestLongEvidenceIsShortened(t *testing.T) {
	long := "HEAD " + strings.Repeat("middle of a long tool result. ", 2000) + " TAIL"
	alpha, rec := newMember(t, spec{name: "alpha", modelID: "qwen2.5:7b", wire: ollamaWire, script: standard("ok")})
	beta, _ := newMember(t, spec{name: "beta", modelID: "llama3.1:8b", wire: ollamaWire, script: standard("ok")})
	chair, _ := newMember(t, spec{name: "chair", modelID: "gpt-4o", wire: ollamaWire, script: standard("")})
	c := council.New([]council.Member{alpha, beta}, chair, council.Options{Quorum: 1, MaxEvidenceBytes: 4096})
	if _, err := c.Run(context.Background(), council.Input{Query: query,
		Evidence: []council.Evidence{{Server: "faults", Tool: "long", Text: long}}}, nil); err != nil {
		t.Fatal(err)
	}
	prompts := rec.stage(1)
	if len(prompts) != 1 {
		t.Fatalf("got %d stage-1 prompts, want 1", len(prompts))
	}
	p := prompts[0]
	if !strings.Contains(p, "HEAD ") || !strings.Contains(p, " TAIL") || !strings.Contains(p, "bytes trimmed]") {
		t.Errorf("stage-1 prompt lacks the head, the tail or the marked cut")
	}
	if len(p) > 4096+4000 {
		t.Errorf("stage-1 prompt is %d bytes for a 4 KiB evidence bound", len(p))
	}
}

// TestUsageBreakdown: each call's split of the server's time and its uncached prompt tokens, as
// the members' servers report them, are in its usage, and add up per stage, in total and per
// member; an OpenAI-compatible server reports no durations and every prompt token uncached.
func TestUsageBreakdown(t *testing.T) {
	cached := 60
	timed := func(text string) script {
		return func(int, string) turn {
			return turn{text: text, prompt: 100, complete: 20, cached: &cached, load: time.Millisecond, prefill: 10 * time.Millisecond, decode: 50 * time.Millisecond}
		}
	}
	alpha, _ := newMember(t, spec{name: "alpha", modelID: "qwen2.5:7b", wire: ollamaWire, script: timed("407")})
	gamma, _ := newMember(t, spec{name: "gamma", modelID: "gpt-4o-mini", wire: openaiWire, script: standard("391")})
	chair, _ := newMember(t, spec{name: "chair", modelID: "qwen2.5:14b", wire: ollamaWire, script: timed("407, says the tool.")})
	res, err := council.New([]council.Member{alpha, gamma}, chair, council.Options{Quorum: 2}).Run(context.Background(), council.Input{Query: query, Evidence: evidence}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ollama := provider.Breakdown{LoadMS: 1, PrefillMS: 10, DecodeMS: 50, UncachedTokens: 40}
	openai := provider.Breakdown{UncachedTokens: 100}
	if got := []provider.Breakdown{res.Stage1[0].Usage.Breakdown, res.Stage1[1].Usage.Breakdown, res.Stage3.Usage.Breakdown}; !slices.Equal(got, []provider.Breakdown{ollama, openai, ollama}) {
		t.Errorf("calls: got %+v, want alpha's and the chairman's %+v, gamma's %+v", got, ollama, openai)
	}
	stage1 := ollama
	stage1.Add(openai)
	total := stage1
	total.Add(ollama)
	if u := res.Usage; u.Stage1.Breakdown != stage1 || u.Stage3.Breakdown != ollama || u.Total.Breakdown != total {
		t.Errorf("sums: got stage 1 %+v, stage 3 %+v, total %+v; want %+v, %+v, %+v", u.Stage1.Breakdown, u.Stage3.Breakdown, u.Total.Breakdown, stage1, ollama, total)
	}
	for _, m := range res.ByMember() {
		if want := map[string]provider.Breakdown{"alpha": ollama, "gamma": openai, "chair": ollama}[m.Member]; m.Breakdown != want {
			t.Errorf("member %s: got %+v, want %+v", m.Member, m.Breakdown, want)
		}
	}
}
