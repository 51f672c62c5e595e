package streaming

import (
	"context"
	"net/url"
	"testing"
	"time"

	"toolrouter/internal/fakeollama"
	"toolrouter/provider"
)

// TestProxyTimesCalls: the proxy passes a streamed answer through whole, classifies the call by
// its prompt and counts the lines that carried text, with their times in order.
func TestProxyTimesCalls(t *testing.T) {
	const text = "The chairman writes this answer in several pieces."
	fake := fakeollama.New(t, fakeollama.Reply{Content: text})
	p, err := NewProxy(fake.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	m := provider.ChatModel{Client: provider.NewOllama(mustURL(t, p.URL()), nil), Model: "m"}
	var got []string
	a, err := m.CompleteStream(context.Background(), []provider.Message{{Role: "user", Content: "You are the chairman of a council of AI models."}},
		func(s string) { got = append(got, s) })
	if err != nil || a.Text != text {
		t.Fatalf("through the proxy: got %q, %v; want %q", a.Text, err, text)
	}
	calls := p.Take()
	if len(calls) != 1 {
		t.Fatalf("got %d calls, want 1", len(calls))
	}
	c := calls[0]
	if c.Stage != StageChairman || c.Pieces != len(got) || c.Pieces < 2 || c.FirstText.Before(c.Received) || c.Done.Before(c.FirstText) {
		t.Errorf("got %+v, want the chairman's call with %d pieces, received ≤ first text ≤ done", c, len(got))
	}
	if again := p.Take(); len(again) != 0 {
		t.Errorf("a second Take got %d calls, want none", len(again))
	}
}

// TestCouncilTarget: the target is the end of stage 2 plus the chairman's own first token plus
// 50 ms, and the pieces must match.
func TestCouncilTarget(t *testing.T) {
	start := time.Now()
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	calls := []Call{
		{Stage: StageMember, Received: at(0), FirstText: at(10), Done: at(50), Pieces: 3},
		{Stage: StageReview, Received: at(50), FirstText: at(60), Done: at(100), Pieces: 3},
		{Stage: StageReview, Received: at(50), FirstText: at(60), Done: at(120), Pieces: 3},
		{Stage: StageChairman, Received: at(125), FirstText: at(165), Done: at(400), Pieces: 20},
	}
	for _, tc := range []struct {
		name         string
		first        float64
		pieces       int
		want         bool
		wantAfterCut float64
	}{
		{"on time", 166, 20, true, 1},
		{"late", 211, 20, false, 46},
		{"pieces merged", 166, 19, false, 1},
	} {
		r, err := Council(Completion{FirstContentMS: tc.first, ContentPieces: tc.pieces}, start, calls)
		if err != nil {
			t.Fatal(err)
		}
		if r.BoundMS != 120+40+TargetSlackMS || r.Met() != tc.want || r.AfterChairmanMS != tc.wantAfterCut {
			t.Errorf("%s: bound %.0f met %v after the chairman %.0f, want %d, %v, %.0f", tc.name, r.BoundMS, r.Met(), r.AfterChairmanMS, 120+40+TargetSlackMS, tc.want, tc.wantAfterCut)
		}
	}
	if _, err := Council(Completion{}, start, calls[:1]); err == nil {
		t.Error("a run without the chairman's text: got no error")
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
