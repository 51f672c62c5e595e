package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"toolrouter/internal/fakeollama"
)

// TestChatCompletionFields runs chat completions through the real command line, handler and
// completer against a fake Ollama whose answering model thinks: reasoning_effort reaches the
// model as think, response_format as format (the answering model's only, never the routing's nor
// the phases' over the client's tools), the answering model is never sent the client's tools
// (toolrouter's phases choose the calls; tool_choice "none" skips them), and the model's thinking
// comes back as reasoning_content, in the message or in the stream's deltas.
func TestChatCompletionFields(t *testing.T) {
	const answerer = "llama3.1:8b"
	model := fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply {
		switch {
		case req.Model == answerer && fakeollama.Selecting(req):
			// Phase 1 over the client's tools: none is needed.
			return fakeollama.Reply{Content: `{"use_tool":false,"calls":[],"needs_more":false,"direct":false}`}
		case req.Model == answerer:
			return fakeollama.Reply{Content: "It is 5.", Thinking: "2 plus 3 makes 5", PromptTokens: 30, CompletionTokens: 9}
		case strings.Contains(string(req.Format), "needs_more"):
			return reply(map[string]any{"reasoning": "sum", "use_tool": true, "calls": []map[string]string{{"tool": "calculator.add", "task": "add"}},
				"needs_more": false, "direct": false})
		case req.Format != nil:
			return reply(map[string]any{"a": 2, "b": 3})
		}
		return fakeollama.Reply{Status: http.StatusInternalServerError, Error: "unexpected request"}
	})
	model.Models = []string{"fake", answerer}
	base := serve(t, "-config", "config.json", "-ollama", model.URL, "-model", "fake")

	const schema = `{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]}`
	const tools = `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
	tests := []struct {
		name       string
		fields     string // added to the body, with a trailing comma
		stream     bool
		wantThink  string // the think sent, as JSON ("" for none)
		wantFormat string // the format sent, as JSON ("" for none)
		wantPhases bool   // phase 1 ran over the client's tools, on the named model
		wantRouted bool
	}{
		{"no reasoning_effort sends no think", tools + ",", false, "", "", true, false},
		{"reasoning_effort high is think high", tools + `,"reasoning_effort":"high",`, false, `"high"`, "", true, false},
		{"reasoning_effort minimal is think off", tools + `,"reasoning_effort":"minimal",`, false, `false`, "", true, false},
		{"reasoning_effort none is think off, streamed", tools + `,"reasoning_effort":"none",`, true, `false`, "", true, false},
		{"thinking is streamed as reasoning_content", tools + `,"reasoning_effort":"low",`, true, `"low"`, "", true, false},
		{"response_format json_object is format json", tools + `,"response_format":{"type":"json_object"},`, false, "", `"json"`, true, false},
		{"response_format json_schema is the schema", tools + `,"response_format":{"type":"json_schema","json_schema":{"name":"s","strict":true,"schema":` + schema + `}},`, false, "", schema, true, false},
		{"response_format text is no format", tools + `,"response_format":{"type":"text"},`, false, "", "", true, false},
		{"tool_choice none skips the phases", tools + `,"tool_choice":"none",`, false, "", "", false, false},
		{"tool_choice auto runs the phases", tools + `,"tool_choice":"auto",`, false, "", "", true, false},
		{"routed: format and think for the answering model only", `"response_format":{"type":"json_object"},"reasoning_effort":"medium",`, true, `"medium"`, `"json"`, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(model.Requests())
			body := `{"model":"` + answerer + `",` + tc.fields + `"stream":` + map[bool]string{true: "true", false: "false"}[tc.stream] +
				`,"messages":[{"role":"user","content":"What is 2+3?"}]}`
			status, _, raw := send(t, http.MethodPost, base+"/v1/chat/completions", body, map[string]string{"Content-Type": "application/json"})
			if status != http.StatusOK {
				t.Fatalf("got %d %s, want 200", status, raw)
			}

			reqs := model.Requests()[before:]
			var answering []api.ChatRequest
			phases := false
			for _, r := range reqs {
				switch {
				case r.Model == answerer && (fakeollama.Selecting(r) || r.DebugRenderOnly):
					phases = true
					// The phases never think (router.think off): a client's think false cannot be told from it.
					if tc.wantFormat != "" && string(r.Format) == tc.wantFormat || tc.wantThink != "" && tc.wantThink != "false" && thinkOf(r) == tc.wantThink {
						t.Errorf("got a phase call with format %s think %s, the client's: want the routing's own", r.Format, thinkOf(r))
					}
				case r.Model == answerer && len(r.Messages) > 0 && r.Messages[len(r.Messages)-1].Role == "assistant":
					// A response_format continued value by value (prefill): this fake does not
					// continue, so the answer is then asked for whole, the call checked below.
				case r.Model == answerer:
					answering = append(answering, r)
				case tc.wantFormat != "" && string(r.Format) == tc.wantFormat, tc.wantThink != "" && thinkOf(r) == tc.wantThink:
					t.Errorf("got a routing call with format %s think %s, the client's: want the routing's own", r.Format, thinkOf(r))
				}
			}
			routed := false
			for _, r := range reqs {
				routed = routed || r.Model != answerer
			}
			if routed != tc.wantRouted || phases != tc.wantPhases || len(answering) != 1 {
				t.Fatalf("got %d calls, %d of them answering, routed %v, phases %v; want one answering call (routed: %v, phases: %v)",
					len(reqs), len(answering), routed, phases, tc.wantRouted, tc.wantPhases)
			}
			got := answering[0]
			if think := thinkOf(got); think != tc.wantThink || string(got.Format) != tc.wantFormat || len(got.Tools) != 0 {
				t.Errorf("got think %s format %s and %d tools, want think %s format %s and no tools", think, got.Format, len(got.Tools), tc.wantThink, tc.wantFormat)
			}

			text, thinking := answerOf(t, raw, tc.stream)
			if text != "It is 5." || thinking != "2 plus 3 makes 5" {
				t.Errorf("got content %q reasoning_content %q, want %q and %q", text, thinking, "It is 5.", "2 plus 3 makes 5")
			}
		})
	}
}

// thinkOf is a request's think as JSON, "" when it has none.
func thinkOf(r api.ChatRequest) string {
	if r.Think == nil {
		return ""
	}
	b, _ := json.Marshal(r.Think)
	return string(b)
}

// answerOf reads a chat completion's content and reasoning_content: the message's, or the
// stream's deltas joined.
func answerOf(t *testing.T, raw []byte, stream bool) (text, thinking string) {
	t.Helper()
	type message struct {
		Content          *string `json:"content"`
		ReasoningContent *string `json:"reasoning_content"`
	}
	var out struct {
		Choices []struct {
			Message message `json:"message"`
			Delta   message `json:"delta"`
		} `json:"choices"`
	}
	if !stream {
		if err := json.Unmarshal(raw, &out); err != nil || len(out.Choices) != 1 || out.Choices[0].Message.Content == nil {
			t.Fatalf("got %s, want one choice with content", raw)
		}
		m := out.Choices[0].Message
		if m.ReasoningContent != nil {
			thinking = *m.ReasoningContent
		}
		return *m.Content, thinking
	}
	var tb, rb strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(raw))
	done := false
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		out.Choices = nil
		if err := json.Unmarshal([]byte(data), &out); err != nil {
			t.Fatalf("got event %s: %v", data, err)
		}
		for _, c := range out.Choices {
			if c.Delta.Content != nil {
				tb.WriteString(*c.Delta.Content)
			}
			if c.Delta.ReasoningContent != nil {
				rb.WriteString(*c.Delta.ReasoningContent)
			}
		}
	}
	if !done {
		t.Fatalf("got stream %s, want it to end with [DONE]", raw)
	}
	return tb.String(), rb.String()
}
