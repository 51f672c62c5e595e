package server_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ollama/ollama/api"

	"toolrouter/council"
	"toolrouter/internal/fakeollama"
	"toolrouter/internal/fakeopenai"
	"toolrouter/provider"
	"toolrouter/router"
	"toolrouter/server"
)

const secretKey = "sk-test-SECRET-0123456789"

// councilFakes are a council of two members and a chairman behind fake Ollama and OpenAI servers,
// counting the calls they receive.
type councilFakes struct {
	council *council.Council
	calls   *atomic.Int64
}

func newCouncil(t *testing.T, quorum int, failMembers bool) councilFakes {
	t.Helper()
	var calls atomic.Int64
	answer := func(system string) string {
		switch {
		case strings.Contains(system, "You are reviewing answers"):
			return "Both are fine.\nFINAL RANKING:\n1. Response A\n2. Response B"
		case strings.Contains(system, "You are the chairman"):
			return "The council's answer: 5."
		}
		return "It is 5."
	}
	ollama := fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply {
		calls.Add(1)
		if failMembers {
			return fakeollama.Reply{Status: http.StatusInternalServerError, Error: "member down"}
		}
		return fakeollama.Reply{Content: answer(req.Messages[0].Content + req.Messages[len(req.Messages)-1].Content), PromptTokens: 10, CompletionTokens: 3}
	})
	openai := fakeopenai.NewFunc(t, func(req fakeopenai.Request) fakeopenai.Reply {
		calls.Add(1)
		if failMembers {
			return fakeopenai.Reply{Status: http.StatusServiceUnavailable, Error: "overloaded " + secretKey}
		}
		m := req.Body.Messages
		return fakeopenai.Reply{Content: answer(contentText(m[0].Content) + contentText(m[len(m)-1].Content)), PromptTokens: 12, CompletionTokens: 4}
	})
	oc := ollama.Client()
	oa := provider.NewOpenAI(openai.BaseURL(), secretKey, nil)
	c := council.New([]council.Member{
		{Name: "local", ModelID: "qwen2.5:7b", Model: provider.ChatModel{Client: oc, Model: "qwen2.5:7b"}},
		{Name: "remote", ModelID: "gpt-4o-mini", Model: provider.ChatModel{Client: oa, Model: "gpt-4o-mini"}},
	}, council.Member{Name: "chair", ModelID: "llama3.1:8b", Model: provider.ChatModel{Client: oc, Model: "llama3.1:8b"}},
		council.Options{PeerReview: true, Quorum: quorum, Logger: quiet})
	return councilFakes{council: c, calls: &calls}
}

func contentText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func answerEnv(t *testing.T, model *fakeollama.Server, c server.Councillor) *env {
	t.Helper()
	e := newEnv(t, model, router.Settings{}, server.Options{})
	rt := router.New(model.Client(), e.inv, e.inv, router.Settings{Model: "fake"}, quiet)
	e.app = server.New(server.Deps{Router: rt, Inventory: e.inv, Model: model.Client(), Council: c}, server.Options{Model: "fake", Logger: quiet})
	return e
}

func selectAdd(direct bool) []fakeollama.Reply {
	b, _ := json.Marshal(map[string]any{"reasoning": "r", "use_tool": true, "calls": []map[string]string{{"tool": "calculator.add", "task": "add"}},
		"needs_more": false, "direct": direct})
	return []fakeollama.Reply{{Content: string(b)}, {Content: `{"a":2,"b":3}`}}
}

type answerBody struct {
	Final      string          `json:"final"`
	AnsweredBy string          `json:"answered_by"`
	Note       string          `json:"note"`
	Routing    *router.Outcome `json:"routing"`
	Council    *council.Result `json:"council"`
	Usage      struct {
		Total struct {
			LLMCalls int `json:"llm_calls"`
		} `json:"total"`
	} `json:"usage"`
}

func TestAnswer(t *testing.T) {
	tests := []struct {
		name        string
		direct      bool
		synthesize  string
		council     bool
		wantBy      string
		wantFinal   string
		wantCouncil bool
	}{
		{"direct result skips the council", true, "auto", true, "tool", "5", false},
		{"never uses the tool output", false, "never", true, "tool", "5", false},
		{"non-direct goes to the council", false, "auto", true, "council", "The council's answer: 5.", true},
		{"always convenes the council", true, "always", true, "council", "The council's answer: 5.", true},
		{"no council configured: the tool answers, with a note", false, "auto", false, "tool", "5", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			model := fakeollama.New(t, selectAdd(tc.direct)...)
			var c server.Councillor
			fakes := newCouncil(t, 2, false)
			if tc.council {
				c = fakes.council
			}
			e := answerEnv(t, model, c)
			status, raw, _ := do(t, e.app, http.MethodPost, "/v1/answer", []byte(`{"query":"2+3?","synthesize":"`+tc.synthesize+`"}`))
			if status != http.StatusOK {
				t.Fatalf("got %d %s", status, raw)
			}
			var out answerBody
			if err := json.Unmarshal(raw, &out); err != nil {
				t.Fatal(err)
			}
			if out.AnsweredBy != tc.wantBy || out.Final != tc.wantFinal {
				t.Errorf("got answered_by %q final %q, want %q %q", out.AnsweredBy, out.Final, tc.wantBy, tc.wantFinal)
			}
			if got := fakes.calls.Load() > 0; got != tc.wantCouncil || (out.Council != nil) != tc.wantCouncil {
				t.Errorf("council called=%v result=%v, want %v", got, out.Council != nil, tc.wantCouncil)
			}
			if tc.wantCouncil && (len(out.Council.Stage1) != 2 || len(out.Council.Stage2) != 2 || out.Usage.Total.LLMCalls != 2+5) {
				t.Errorf("got %d answers %d reviews %d calls, want 2, 2 and 7", len(out.Council.Stage1), len(out.Council.Stage2), out.Usage.Total.LLMCalls)
			}
			if !tc.council && !strings.Contains(out.Note, "no council") {
				t.Errorf("got note %q, want one saying no council is configured", out.Note)
			}
			if out.Routing == nil || len(out.Routing.Calls) != 1 {
				t.Errorf("routing outcome missing: %s", raw)
			}
			if strings.Contains(string(raw), secretKey) {
				t.Errorf("the API key appears in the response")
			}
		})
	}
}

func TestAnswerErrors(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		council    func(t *testing.T) server.Councillor
		wantStatus int
		wantCode   string
	}{
		{"bad synthesize", `{"query":"q","synthesize":"sometimes"}`, nil, http.StatusBadRequest, "bad_synthesize"},
		{"unknown field", `{"query":"q","synthesise":"auto"}`, nil, http.StatusBadRequest, "unknown_field"},
		{"always without a council", `{"query":"q","synthesize":"always"}`, nil, http.StatusServiceUnavailable, "no_council"},
		{"quorum not met", `{"query":"q","synthesize":"always"}`, func(t *testing.T) server.Councillor { return newCouncil(t, 2, true).council },
			http.StatusBadGateway, "quorum_not_met"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			model := fakeollama.New(t, selectAdd(false)...)
			var c server.Councillor
			if tc.council != nil {
				c = tc.council(t)
			}
			e := answerEnv(t, model, c)
			status, raw, _ := do(t, e.app, http.MethodPost, "/v1/answer", []byte(tc.body))
			if code, _ := errorBody(t, raw); status != tc.wantStatus || code != tc.wantCode {
				t.Errorf("got %d %s, want %d %s", status, raw, tc.wantStatus, tc.wantCode)
			}
			if strings.Contains(string(raw), secretKey) {
				t.Errorf("the API key appears in the error: %s", raw)
			}
		})
	}
}

func TestAnswerStreamEventOrder(t *testing.T) {
	model := fakeollama.New(t, selectAdd(false)...)
	e := answerEnv(t, model, newCouncil(t, 2, false).council)
	base := listen(t, e.app)
	resp, err := http.Post(base+"/v1/answer/stream", "application/json", strings.NewReader(`{"query":"2+3?"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	names, data := readEvents(t, bufio.NewReader(resp.Body), nil)
	want := "select_start,select_complete,tool_call_start,tool_call_complete,tool_result," +
		"stage1_start,stage1_complete,stage2_start,stage2_complete,stage3_start,stage3_complete,complete"
	// The pieces of the answers between a stage's start and complete (TestAnswerStreamPieces).
	stages := slices.DeleteFunc(slices.Clone(names), func(n string) bool {
		return n == "stage1_delta" || n == "stage1_answer" || n == "stage3_delta"
	})
	if got := strings.Join(stages, ","); got != want {
		t.Fatalf("got events\n%s\nwant\n%s", got, want)
	}
	var out answerBody
	if err := json.Unmarshal([]byte(data[len(data)-1]), &out); err != nil || out.AnsweredBy != "council" {
		t.Errorf("complete = %s, want the council's answer", data[len(data)-1])
	}
}
