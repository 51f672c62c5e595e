package trust

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"toolrouter/bench/dataset"
	"toolrouter/bench/metrics"
)

var weather = []dataset.Function{{Name: "get_weather", Description: "weather",
	Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}}

func TestEncode(t *testing.T) {
	tests := []struct {
		door    Door
		choice  Choice
		want    string // a part of the body
		wantErr bool
	}{
		{OpenAI, Auto, `"tool_choice":"auto"`, false},
		{OpenAI, Required, `"tool_choice":"required"`, false},
		{OpenAI, None, `"tool_choice":"none"`, false},
		{OpenAI, Named, `"tool_choice":{"function":{"name":"get_weather"},"type":"function"}`, false},
		{Ollama, Auto, `"options":{"num_predict":64}`, false},
		{Ollama, Required, "", true},
	}
	for _, tc := range tests {
		t.Run(string(tc.door)+"/"+string(tc.choice), func(t *testing.T) {
			b, err := Encode(tc.door, Request{Model: "m", Query: "q", Tools: weather, Choice: tc.choice, Name: "get_weather", MaxTokens: 64})
			if (err != nil) != tc.wantErr {
				t.Fatalf("got error %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			s := string(b)
			if !strings.Contains(s, tc.want) || !strings.Contains(s, `"tools":[{"type":"function","function":{"name":"get_weather"`) {
				t.Errorf("got %s, want it to hold %s and the tool", s, tc.want)
			}
			if tc.door == Ollama && strings.Contains(s, "tool_choice") {
				t.Errorf("got %s: /api/chat has no tool_choice", s)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	fs, err := Compile(weather)
	if err != nil {
		t.Fatal(err)
	}
	paris := Call{Name: "get_weather", Args: map[string]any{"city": "Paris"}}
	tests := []struct {
		name   string
		choice Choice
		calls  []Call
		want   Score
	}{
		{"auto, no call", Auto, nil, Score{Honoured: true}},
		{"required, a call", Required, []Call{paris}, Score{Calls: 1, Named: 1, Valid: 1, Honoured: true}},
		{"required, no call", Required, nil, Score{}},
		{"named, another function", Named, []Call{{Name: "get_time", Args: map[string]any{}}}, Score{Calls: 1}},
		{"named, invalid arguments", Named, []Call{{Name: "get_weather", Args: map[string]any{"city": 5}}}, Score{Calls: 1, Named: 1, Honoured: true}},
		{"named, arguments not an object", Named, []Call{{Name: "get_weather"}}, Score{Calls: 1, Named: 1, Honoured: true}},
		{"none, a call", None, []Call{paris}, Score{Calls: 1, Named: 1, Valid: 1}},
		{"none, no call", None, nil, Score{Honoured: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Check(Request{Choice: tc.choice, Name: "get_weather"}, fs, Answer{Calls: tc.calls})
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestSend reads both doors' answers, toolrouter's trace for the model calls, and tells a
// missing door (404) from a refused request.
func TestSend(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/chat/completions":
			_, _ = w.Write([]byte(`{"choices":[{"message":{"content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}}],
				"usage":{"completion_tokens":12},"x_toolrouter":{"mode":"client_tools","routing":{"usage":{"llm_calls":2}}}}`))
		case "/api/chat":
			_, _ = w.Write([]byte(`{"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Rome"}}}]},"eval_count":9}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	a, err := Send(ctx, srv.Client(), srv.URL, OpenAI, Request{Model: "m", Query: "q", Tools: weather, Choice: Auto})
	if err != nil || a.Err != "" || len(a.Calls) != 1 || a.Calls[0].Args["city"] != "Paris" || a.ModelCalls != 2 || a.Decoded != 12 {
		t.Fatalf("openai: got %+v, %v; want one call for Paris, 2 model calls, 12 tokens", a, err)
	}
	a, err = Send(ctx, srv.Client(), srv.URL, Ollama, Request{Model: "m", Query: "q", Tools: weather, Choice: Auto})
	if err != nil || len(a.Calls) != 1 || a.Calls[0].Args["city"] != "Rome" || a.ModelCalls != 1 || a.Decoded != 9 {
		t.Fatalf("ollama: got %+v, %v; want one call for Rome, 1 model call, 9 tokens", a, err)
	}
	missing := httptest.NewServer(http.NotFoundHandler())
	defer missing.Close()
	if _, err := Send(ctx, missing.Client(), missing.URL, Ollama, Request{Model: "m", Choice: Auto}); !errors.Is(err, ErrNoDoor) {
		t.Fatalf("got %v, want ErrNoDoor", err)
	}
}

func TestAccurate(t *testing.T) {
	ts := &dataset.Toolset{Functions: append([]dataset.Function(nil), weather...)}
	ts.Functions[0].Spec = metrics.FunctionSpec{Name: "bfcl.get_weather", Params: map[string]metrics.ParamSpec{"city": {Type: "string"}}, Required: []string{"city"}}
	c := dataset.Case{NeedsTool: true, Toolset: ts, Answers: []dataset.Answer{{Calls: []metrics.Expected{{Name: "bfcl.get_weather", Args: map[string][]any{"city": {"Paris"}}}}}}}
	if !Accurate(c, metrics.BFCLStrings, Answer{Calls: []Call{{Name: "get_weather", Args: map[string]any{"city": "paris"}}}}) {
		t.Error("the right call was scored wrong")
	}
	if Accurate(c, metrics.BFCLStrings, Answer{Calls: []Call{{Name: "get_weather", Args: map[string]any{"city": "Rome"}}}}) {
		t.Error("a wrong call was scored right")
	}
	if !Accurate(dataset.Case{Toolset: ts}, metrics.BFCLStrings, Answer{}) {
		t.Error("no call for an irrelevant question was scored wrong")
	}
}
