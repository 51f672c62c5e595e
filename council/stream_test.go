package council_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"toolrouter/council"
	"toolrouter/internal/fakeollama"
	"toolrouter/provider"
)

// synthesis is a chairman's answer long enough to come in many pieces (the fakes send 8 runes a
// piece).
const synthesis = "The tool computed 407 for 17*23+4^2. Tokyo's time could not be checked: the zone name was misspelt."

// deltas returns the Data of the events of type typ, in order.
func deltas(events []council.Event, typ council.EventType) []council.Delta {
	var out []council.Delta
	for _, e := range events {
		if e.Type == typ {
			out = append(out, e.Data.(council.Delta))
		}
	}
	return out
}

func texts(ds []council.Delta) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Text
	}
	return out
}

// chairScript answers stages 1 and 2 as standard does and stage 3 with tr.
func chairScript(tr turn) script {
	return func(stage int, prompt string) turn {
		if stage == 3 {
			return tr
		}
		return standard("")(stage, prompt)
	}
}

// TestChairmanStreams: the chairman's answer goes out piece by piece as its server sends it, on
// either wire, between stage3_start and stage3_complete; the pieces, joined, are the final answer.
func TestChairmanStreams(t *testing.T) {
	for _, w := range []wire{ollamaWire, openaiWire} {
		t.Run(string(w), func(t *testing.T) {
			a, _ := newMember(t, spec{name: "a", modelID: "ma", wire: ollamaWire, script: standard("407. quality=2")})
			b, _ := newMember(t, spec{name: "b", modelID: "mb", wire: ollamaWire, script: standard("391. quality=1")})
			chair, _ := newMember(t, spec{name: "chair", modelID: "mc", wire: w, key: "k", script: chairScript(turn{text: synthesis, prompt: 500, complete: 30})})
			var events []council.Event
			res, err := council.New([]council.Member{a, b}, chair, council.Options{PeerReview: true, Quorum: 2}).
				Run(context.Background(), council.Input{Query: query, Evidence: evidence}, collectAll(&events))
			if err != nil {
				t.Fatal(err)
			}
			got := texts(deltas(events, council.Stage3Delta))
			if want := fakeollama.Pieces(synthesis); !slices.Equal(got, want) {
				t.Fatalf("stage3_delta texts: got %q, want the %d pieces the server sent, in order: %q", got, len(want), want)
			}
			if joined := strings.Join(got, ""); joined != res.Final || res.Stage3.Response != res.Final || res.Final != synthesis {
				t.Errorf("joined pieces %q, stage3 %q, final %q: want all %q", joined, res.Stage3.Response, res.Final, synthesis)
			}
			// The pieces come after stage3_start and before stage3_complete, nothing else between.
			start := slices.IndexFunc(events, func(e council.Event) bool { return e.Type == council.Stage3Start })
			end := slices.IndexFunc(events, func(e council.Event) bool { return e.Type == council.Stage3Complete })
			if start < 0 || end != len(events)-1 || end-start-1 != len(got) {
				t.Errorf("events: got %v, want stage3_start, the %d pieces, stage3_complete last", types(events), len(got))
			}
			if res.AnsweredBy != council.AnsweredByCouncil {
				t.Errorf("answered by %q, want council", res.AnsweredBy)
			}
		})
	}
}

// wholeModel answers with a whole text and does not stream.
type wholeModel string

func (m wholeModel) Complete(context.Context, []provider.Message) (provider.Answer, error) {
	return provider.Answer{Text: string(m)}, nil
}

// TestChairmanWithoutStreaming: a model that cannot stream sends its whole answer as one piece.
func TestChairmanWithoutStreaming(t *testing.T) {
	a, _ := newMember(t, spec{name: "a", modelID: "ma", wire: ollamaWire, script: standard("407")})
	var events []council.Event
	res, err := council.New([]council.Member{a}, council.Member{Name: "chair", Model: wholeModel(synthesis)}, council.Options{}).
		Run(context.Background(), council.Input{Query: query}, collectAll(&events))
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(deltas(events, council.Stage3Delta)); !slices.Equal(got, []string{synthesis}) || res.Final != synthesis {
		t.Errorf("stage3_delta texts %q, final %q: want the whole answer once", got, res.Final)
	}
}

// TestMembersStream: each member's answer goes out piece by piece in stage1_delta, named and
// labelled as stage1_complete has it, then whole in stage1_answer as soon as that member is done;
// a failed member's stage1_answer has its error and no label.
func TestMembersStream(t *testing.T) {
	const long = "Seventeen times twenty-three is 391; plus sixteen makes 407. quality=2"
	a, _ := newMember(t, spec{name: "a", modelID: "ma", wire: ollamaWire, script: standard(long)})
	b, _ := newMember(t, spec{name: "b", modelID: "mb", wire: openaiWire, script: standard("407. quality=1")})
	x, _ := newMember(t, spec{name: "x", modelID: "mx", wire: ollamaWire, script: failing(500, "down")})
	chair, _ := newMember(t, spec{name: "chair", modelID: "mc", wire: ollamaWire, script: standard("")})
	var events []council.Event
	res, err := council.New([]council.Member{a, b, x}, chair, council.Options{PeerReview: true, Quorum: 2}).
		Run(context.Background(), council.Input{Query: query}, collectAll(&events))
	if err != nil {
		t.Fatal(err)
	}
	complete := slices.IndexFunc(events, func(e council.Event) bool { return e.Type == council.Stage1Complete })
	for _, want := range res.Stage1 {
		var got []string
		answered := -1
		for i, e := range events[:complete] {
			switch d := e.Data.(type) {
			case council.Delta:
				if e.Type == council.Stage1Delta && d.Model == want.Model {
					if d.Label != want.Label || answered >= 0 {
						t.Errorf("%s: a piece labelled %q after its answer at %d: want label %q, pieces before the answer", want.Model, d.Label, answered, want.Label)
					}
					got = append(got, d.Text)
				}
			case council.Answer:
				if d.Model == want.Model {
					answered = i
					if d.Response != want.Response || d.Label != want.Label || d.Error != want.Error {
						t.Errorf("%s: stage1_answer %+v, want %+v", want.Model, d, want)
					}
				}
			}
		}
		if answered < 0 {
			t.Errorf("%s: no stage1_answer before stage1_complete", want.Model)
		}
		if want.Error == "" && !slices.Equal(got, fakeollama.Pieces(want.Response)) {
			t.Errorf("%s: pieces %q, want %q", want.Model, got, fakeollama.Pieces(want.Response))
		}
		if want.Error != "" && (len(got) != 0 || want.Label != "") {
			t.Errorf("%s failed: got pieces %q and label %q, want none", want.Model, got, want.Label)
		}
	}
	if len(res.LabelToModel) != 2 {
		t.Errorf("label_to_model %v: want the 2 members that answered", res.LabelToModel)
	}
}

// TestChairmanFailsMidAnswer: a chairman that fails after some of its words went out is followed,
// in the same stream, by a marker saying so and why, then the fallback's answer; the final answer
// is the fallback's, flagged.
func TestChairmanFailsMidAnswer(t *testing.T) {
	cases := []struct {
		name    string
		chair   turn
		timeout time.Duration // the chairman's
		stage   time.Duration // council.stage_timeout
		reason  string        // in the chairman's error and the marker
		sent    int           // pieces of the chairman's that went out
	}{
		{name: "connection dropped", chair: turn{text: synthesis, cutAfter: 3}, reason: "EOF", sent: 3},
		{name: "stalls past its timeout", chair: turn{text: synthesis, cutAfter: 2, hang: true}, timeout: 300 * time.Millisecond,
			reason: "member chair: timed out after 300ms", sent: 2},
		{name: "stalls past the stage's timeout", chair: turn{text: synthesis, cutAfter: 4, hang: true}, stage: 400 * time.Millisecond,
			reason: "stage 3: timed out after 400ms", sent: 4},
		{name: "fails before a word", chair: turn{status: 500, errMsg: "overloaded"}, reason: "overloaded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := newMember(t, spec{name: "a", modelID: "ma", wire: ollamaWire, script: standard("A says 407. quality=3")})
			b, _ := newMember(t, spec{name: "b", modelID: "mb", wire: ollamaWire, script: standard("B says 391. quality=1")})
			chair, _ := newMember(t, spec{name: "chair", modelID: "mc", wire: ollamaWire, timeout: tc.timeout, script: chairScript(tc.chair)})
			var events []council.Event
			res, err := council.New([]council.Member{a, b}, chair, council.Options{PeerReview: true, Quorum: 2, StageTimeout: tc.stage}).
				Run(context.Background(), council.Input{Query: query}, collectAll(&events))
			if err != nil {
				t.Fatal(err)
			}
			if res.AnsweredBy != council.AnsweredByFallback || res.Final != "A says 407. quality=3" || !strings.Contains(res.ChairmanError, tc.reason) {
				t.Fatalf("answered by %q with %q, chairman error %q: want the fallback to a's answer, error with %q", res.AnsweredBy, res.Final, res.ChairmanError, tc.reason)
			}
			ds := deltas(events, council.Stage3Delta)
			want := fakeollama.Pieces(synthesis)[:tc.sent]
			if got := texts(ds[:min(tc.sent, len(ds))]); !slices.Equal(got, want) {
				t.Fatalf("chairman's pieces: got %q, want %q", got, want)
			}
			rest := ds[tc.sent:]
			if tc.sent == 0 {
				// Nothing to take back: the fallback's answer is the whole stream, as final.
				if len(rest) != 1 || rest[0].Text != res.Final || !rest[0].Fallback {
					t.Errorf("after the chairman: got %+v, want only the fallback's answer, flagged", rest)
				}
				return
			}
			if len(rest) != 2 || !rest[0].Fallback || !rest[1].Fallback || rest[1].Text != res.Final {
				t.Fatalf("after the chairman's pieces: got %+v, want a marker and the fallback's answer, flagged", rest)
			}
			label := res.Stage1[0].Label
			if m := rest[0].Text; !strings.Contains(m, "chairman stopped") || !strings.Contains(m, tc.reason) || !strings.Contains(m, label) || !strings.Contains(m, "best-ranked") {
				t.Errorf("marker %q: want it to say the chairman stopped, why (%q), and whose answer follows (%s, best-ranked)", m, tc.reason, label)
			}
			if s := res.Stage3; s.Response != res.Final || s.AnsweredBy != council.AnsweredByFallback || s.FallbackFrom != "a" {
				t.Errorf("stage3 %+v: want the fallback's whole answer, from a", s)
			}
		})
	}
}

// TestStreamedChairmanBounded: a chairman whose answer does not end streams no more than the
// response limit before it is cut, and the fallback follows its marker.
func TestStreamedChairmanBounded(t *testing.T) {
	a, _ := newMember(t, spec{name: "a", modelID: "ma", wire: ollamaWire, script: standard("407")})
	chair, _ := newMember(t, spec{name: "chair", modelID: "mc", wire: ollamaWire, script: chairScript(turn{flood: true})})
	var events []council.Event
	res, err := council.New([]council.Member{a}, chair, council.Options{}).Run(context.Background(), council.Input{Query: query}, collectAll(&events))
	if err != nil {
		t.Fatal(err)
	}
	ds := deltas(events, council.Stage3Delta)
	sent := 0
	for _, d := range ds[:len(ds)-2] {
		sent += len(d.Text)
	}
	if sent == 0 || sent > provider.DefaultMaxResponseBytes {
		t.Errorf("the chairman streamed %d bytes, want some and at most the limit %d", sent, provider.DefaultMaxResponseBytes)
	}
	if m := ds[len(ds)-2]; !m.Fallback || !strings.Contains(m.Text, "too large") || res.Final != "407" {
		t.Errorf("got marker %q and final %q, want a marker naming the limit, then a's answer", m.Text, res.Final)
	}
}
