package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/answer"
	"toolrouter/council"
	"toolrouter/internal/fakeollama"
	"toolrouter/provider"
	"toolrouter/server"
)

// chairText is a chairman's answer long enough to come in many pieces (the fake sends 8 runes a
// piece).
const chairText = "The council agrees: 2+3 is 5, as the calculator's add tool returned."

// streamingCouncil is a council of two members, "local" and "remote", whose chairman answers
// stage 3 with chair (its Content, or chairText when empty), all on one fake Ollama.
func streamingCouncil(t *testing.T, chair fakeollama.Reply, chairTimeout time.Duration) (*council.Council, *fakeollama.Server) {
	t.Helper()
	fake := fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply {
		prompt := req.Messages[0].Content + req.Messages[len(req.Messages)-1].Content
		switch {
		case strings.Contains(prompt, "You are reviewing answers"):
			return fakeollama.Reply{Content: "FINAL RANKING:\n1. Response A\n2. Response B"}
		case strings.Contains(prompt, "You are the chairman"):
			if chair.Content == "" {
				chair.Content = chairText
			}
			return chair
		case req.Model == "m-local":
			return fakeollama.Reply{Content: "Local says it is 5."}
		}
		return fakeollama.Reply{Content: "Remote says five."}
	})
	model := func(id string) provider.ChatModel { return provider.ChatModel{Client: fake.Client(), Model: id} }
	return council.New([]council.Member{
		{Name: "local", ModelID: "m-local", Model: model("m-local")},
		{Name: "remote", ModelID: "m-remote", Model: model("m-remote")},
	}, council.Member{Name: "chair", ModelID: "m-chair", Model: model("m-chair"), Timeout: chairTimeout},
		council.Options{PeerReview: true, Quorum: 2, Logger: quiet}), fake
}

// councilStream is what a streamed council completion sent: its content and reasoning deltas in
// order, and its last chunk's x_toolrouter.
type councilStream struct {
	content, reasoning []string
	// firstContent is the index among all deltas of the first content delta; lastReasoning of the
	// last reasoning one.
	firstContent, lastReasoning int
	trace                       map[string]any
	done                        bool
}

func streamCouncil(t *testing.T, base, body string) councilStream {
	t.Helper()
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	chunks, done := readChunks(t, bufio.NewReader(resp.Body))
	out := councilStream{firstContent: -1, lastReasoning: -1, done: done}
	n := 0
	for _, c := range chunks {
		if tr, ok := c["x_toolrouter"].(map[string]any); ok {
			out.trace = tr
		}
		choices, _ := c["choices"].([]any)
		for _, ch := range choices {
			d, _ := ch.(map[string]any)["delta"].(map[string]any)
			if s, ok := d["reasoning_content"].(string); ok {
				out.reasoning = append(out.reasoning, s)
				out.lastReasoning = n
				n++
			}
			if s, ok := d["content"].(string); ok && s != "" {
				out.content = append(out.content, s)
				if out.firstContent < 0 {
					out.firstContent = n
				}
				n++
			}
		}
	}
	return out
}

// TestCouncilCompletionStreams: a streamed chat completion of model "council" sends the council's
// deliberation as reasoning first (anonymised, or named when configured; none with
// reasoning_effort "none" or when configured off), then the chairman's words in as many content
// deltas as its server sent, which join to the final answer.
func TestCouncilCompletionStreams(t *testing.T) {
	const ask = `{"model":"council","stream":true,"messages":[{"role":"user","content":"2+3?"}]}`
	const askNoReasoning = `{"model":"council","stream":true,"reasoning_effort":"none","messages":[{"role":"user","content":"2+3?"}]}`
	tests := []struct {
		name      string
		body      string
		delib     *answer.Deliberation
		reasoning bool
		names     bool
	}{
		{name: "anonymised deliberation by default", body: ask, reasoning: true},
		{name: "named deliberation", body: ask, delib: &answer.Deliberation{Show: true, Names: true}, reasoning: true, names: true},
		{name: "reasoning_effort none", body: askNoReasoning},
		{name: "deliberation off", body: ask, delib: &answer.Deliberation{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := streamingCouncil(t, fakeollama.Reply{}, 0)
			e := newChatEnv(t, fakeollama.New(t, selectAdd(false)...), &fakeCompleter{}, c, server.Options{Deliberation: tc.delib})
			got := streamCouncil(t, listen(t, e.app), tc.body)
			if !got.done {
				t.Fatal("the stream did not end with [DONE]")
			}
			if want := fakeollama.Pieces(chairText); !slices.Equal(got.content, want) {
				t.Fatalf("content deltas: got %q, want the chairman's %d pieces in order: %q", got.content, len(want), want)
			}
			if got.trace["answered_by"] != "council" {
				t.Errorf("x_toolrouter.answered_by: got %v, want council", got.trace["answered_by"])
			}
			var res council.Result
			raw, _ := json.Marshal(got.trace["council"])
			if err := json.Unmarshal(raw, &res); err != nil || res.Final != strings.Join(got.content, "") {
				t.Errorf("x_toolrouter.council.final %q, want the joined deltas %q (%v)", res.Final, strings.Join(got.content, ""), err)
			}
			reasoning := strings.Join(got.reasoning, "")
			if !tc.reasoning {
				if len(got.reasoning) != 0 {
					t.Errorf("got reasoning %q, want none", reasoning)
				}
				return
			}
			if got.lastReasoning > got.firstContent {
				t.Errorf("reasoning delta %d after the first content delta %d: want the deliberation first", got.lastReasoning, got.firstContent)
			}
			for _, want := range []string{"Local says it is 5.", "Remote says five.", "Aggregate ranking", res.Stage1[0].Label, res.Stage1[1].Label} {
				if !strings.Contains(reasoning, want) {
					t.Errorf("reasoning lacks %q:\n%s", want, reasoning)
				}
			}
			if named := strings.Contains(reasoning, "local") && strings.Contains(reasoning, "remote"); named != tc.names {
				t.Errorf("reasoning names the members: %v, want %v:\n%s", named, tc.names, reasoning)
			}
		})
	}
}

// TestCouncilCompletionChairmanFails: a chairman that dies or stalls after some of its words went
// out is followed in the same stream by a marker saying so, then the best-ranked member's answer;
// the last chunk's x_toolrouter says answered_by "fallback".
func TestCouncilCompletionChairmanFails(t *testing.T) {
	tests := []struct {
		name    string
		chair   fakeollama.Reply
		timeout time.Duration
		reason  string
	}{
		{name: "dies mid-answer", chair: fakeollama.Reply{CutAfter: 3}, reason: "unexpected EOF"},
		{name: "stalls past its timeout", chair: fakeollama.Reply{CutAfter: 3, Hang: true}, timeout: 300 * time.Millisecond, reason: "timed out after 300ms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := streamingCouncil(t, tc.chair, tc.timeout)
			e := newChatEnv(t, fakeollama.New(t, selectAdd(false)...), &fakeCompleter{}, c, server.Options{})
			got := streamCouncil(t, listen(t, e.app), `{"model":"council","stream":true,"messages":[{"role":"user","content":"2+3?"}]}`)
			if !got.done || got.trace["answered_by"] != "fallback" {
				t.Fatalf("done %v, answered_by %v: want [DONE] and fallback", got.done, got.trace["answered_by"])
			}
			if len(got.content) != 5 || !slices.Equal(got.content[:3], fakeollama.Pieces(chairText)[:3]) {
				t.Fatalf("content deltas %q: want the chairman's 3 pieces, a marker and the fallback's answer", got.content)
			}
			if m := got.content[3]; !strings.Contains(m, "chairman stopped") || !strings.Contains(m, tc.reason) {
				t.Errorf("marker %q: want it to say the chairman stopped and why (%q)", m, tc.reason)
			}
			if got.content[4] != "Local says it is 5." {
				t.Errorf("after the marker: got %q, want the best-ranked member's answer", got.content[4])
			}
		})
	}
}

// TestCouncilCompletionClientGone: a client that leaves while the chairman writes stops the
// chairman's generation at once.
func TestCouncilCompletionClientGone(t *testing.T) {
	c, fake := streamingCouncil(t, fakeollama.Reply{CutAfter: 2, Hang: true}, 0)
	e := newChatEnv(t, fakeollama.New(t, selectAdd(false)...), &fakeCompleter{}, c, server.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, listen(t, e.app)+"/v1/chat/completions",
		strings.NewReader(`{"model":"council","stream":true,"messages":[{"role":"user","content":"2+3?"}]}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(resp.Body)
	first := fakeollama.Pieces(chairText)[0]
	for { // up to the chairman's first words: it is writing
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before the chairman's words: %v", err)
		}
		if strings.Contains(line, `"content":`+mustJSON(first)) {
			break
		}
	}
	cancel()
	resp.Body.Close()
	select {
	case <-fake.Aborted():
	case <-time.After(10 * time.Second):
		t.Fatal("the chairman's call was not stopped within 10s of the client leaving")
	}
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestAnswerStreamPieces: /v1/answer/stream sends each member's pieces (stage1_delta, labelled)
// and answer (stage1_answer) before stage1_complete, and the chairman's pieces (stage3_delta)
// before stage3_complete, which has them joined.
func TestAnswerStreamPieces(t *testing.T) {
	c, _ := streamingCouncil(t, fakeollama.Reply{}, 0)
	e := answerEnv(t, fakeollama.New(t, selectAdd(false)...), c)
	resp, err := http.Post(listen(t, e.app)+"/v1/answer/stream", "application/json", strings.NewReader(`{"query":"2+3?"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	names, data := readEvents(t, bufio.NewReader(resp.Body), nil)
	type piece struct {
		Data council.Delta `json:"data"`
	}
	var chair []string
	members := map[string]string{} // label: joined pieces
	var stage3 struct {
		Data council.Synthesis `json:"data"`
	}
	var stage1 struct {
		Data []council.Answer `json:"data"`
	}
	seen := map[string]int{}
	for i, n := range names {
		seen[n] = i
		switch n {
		case "stage1_delta", "stage3_delta":
			var p piece
			if err := json.Unmarshal([]byte(data[i]), &p); err != nil {
				t.Fatal(err)
			}
			if n == "stage3_delta" {
				chair = append(chair, p.Data.Text)
			} else {
				members[p.Data.Label] += p.Data.Text
			}
		case "stage1_complete":
			_ = json.Unmarshal([]byte(data[i]), &stage1)
		case "stage3_complete":
			_ = json.Unmarshal([]byte(data[i]), &stage3)
		}
	}
	if !slices.Equal(chair, fakeollama.Pieces(chairText)) || stage3.Data.Response != strings.Join(chair, "") {
		t.Errorf("stage3_delta texts %q, stage3_complete %q: want the chairman's pieces, joined in stage3_complete", chair, stage3.Data.Response)
	}
	if seen["stage3_delta"] > seen["stage3_complete"] || seen["stage1_answer"] > seen["stage1_complete"] || seen["stage1_delta"] > seen["stage1_complete"] {
		t.Errorf("events %v: want the pieces before their stage's complete", names)
	}
	for _, a := range stage1.Data {
		if members[a.Label] != a.Response {
			t.Errorf("%s (%s): pieces joined %q, want its answer %q", a.Model, a.Label, members[a.Label], a.Response)
		}
	}
}
