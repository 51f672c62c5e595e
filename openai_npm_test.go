package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/access"
	"toolrouter/auth"
	"toolrouter/internal/fakeollama"
	"toolrouter/internal/fakeopenai"
	"toolrouter/internal/npmservers"
)

// openAIClientRun is what examples/npm/openai-client.mjs reports.
type openAIClientRun struct {
	Completion struct {
		ID, Object, Content, Finish string
		Usage                       map[string]int
		Trace                       struct {
			Mode    string
			Routing struct {
				Calls []struct{ Server, Tool string }
			}
		}
	}
	Stream struct {
		Content, Finish string
		Chunks          int
		Usage           map[string]int
		Trace           *struct{ Mode string }
	}
	Models []string
	// ToolCases are the client-tools answers by "MODEL/CASE[/stream]".
	ToolCases map[string]toolCaseRun
	RunTools  struct {
		Content  string
		Ran      []map[string]any
		Messages int
	}
	BadRequest, Unauthenticated, NoCouncil, BadSchema, UnknownFunction clientError
}

type toolCaseRun struct {
	Finish, Mode string
	Content      *string
	Calls        []struct {
		ID, Type string
		Function struct{ Name, Arguments string }
	}
}

// clientToolsAnswer is the fake models' answer to the phases over the script's get_weather and
// get_time (hint holds the request's format and its last message: a continued answer's first key
// is there), and to the text answer after their results; ok is false for another request.
// Phase 1 calls both functions when the query says "both", else get_weather.
func clientToolsAnswer(all, hint string, selecting bool) (string, bool) {
	switch {
	case selecting && strings.Contains(all, "- get_weather:") && strings.Contains(all, "sunny"):
		return `{"use_tool":false,"calls":[],"needs_more":false,"direct":false}`, true
	case selecting && strings.Contains(all, "- get_weather:") && strings.Contains(all, "both"):
		return `{"use_tool":true,"calls":["get_weather","get_time"],"needs_more":false,"direct":false}`, true
	case selecting && strings.Contains(all, "- get_weather:"):
		return `{"use_tool":true,"calls":["get_weather"],"needs_more":false,"direct":false}`, true
	case selecting:
		return "", false
	case strings.Contains(hint, `"city"`):
		return `{"city":"Paris"}`, true
	case strings.Contains(hint, `"zone"`):
		return `{"zone":"UTC"}`, true
	case strings.Contains(all, "sunny") || strings.Contains(all, "Weather"):
		return "It is sunny in Paris.", true
	}
	return "", false
}

type clientError struct {
	Thrown, IsAPIError               bool
	Name, Code, Type, Param, Message string
	Status                           int
}

// TestOpenAIClient drives the real command line's OpenAI-compatible API with the official openai
// npm client (examples/npm/openai-client.mjs): a routed completion, the same streamed, the model
// list, the client's own tools through the two phases on an Ollama model and an OpenAI-compatible
// provider's under each tool_choice (streamed and not, parallel calls, a tool-result round trip,
// the SDK's runTools loop), and errors as the client's error classes. The routing and answering model is a fake Ollama.
func TestOpenAIClient(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil && os.Getenv("CI") == "true" {
		t.Fatal("node not found, and CI=true: the openai npm client test must run")
	}
	dir := npmservers.Dir(t) // skips without node, installs examples/npm's packages
	script := filepath.Join(dir, "openai-client.mjs")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the openai npm package is not installed in %s: %v", dir, err)
		}
		t.Skipf("the openai npm package is not installed in %s (npm ci there installs it): %v", dir, err)
	}

	model := npmClientsModel(t)
	remote := fakeopenai.NewFunc(t, func(req fakeopenai.Request) fakeopenai.Reply {
		var all strings.Builder
		for _, m := range req.Body.Messages {
			all.WriteString(m.Content + "\n")
		}
		format := string(req.Body.ResponseFormat)
		text, _ := clientToolsAnswer(all.String(), format, strings.Contains(format, `"use_tool"`))
		return fakeopenai.Reply{Content: text, PromptTokens: 30, CompletionTokens: 8}
	})

	key, err := auth.NewKey("npm", auth.Identity{Org: access.DefaultOrg})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TOOLROUTER_TEST_OPENAI_KEY", key.Key)
	entry := key.Entry
	entry.SHA256, entry.Env = "", "TOOLROUTER_TEST_OPENAI_KEY"
	path := writeConfig(t, map[string]any{
		"providers": map[string]any{"remote": map[string]any{"type": "openai", "base_url": remote.BaseURL()}},
		"auth":      map[string]any{"keys": []auth.Key{entry}},
	})
	base := serve(t, "-config", path, "-ollama", model.URL, "-model", "fake")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Env = append(os.Environ(), "TOOLROUTER_BASE_URL="+base+"/v1", "TOOLROUTER_API_KEY="+key.Key)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, stderr.String())
	}
	t.Logf("client report: %s", stdout)
	var run openAIClientRun
	if err := json.Unmarshal(stdout, &run); err != nil {
		t.Fatalf("decoding the script's report %s: %v", stdout, err)
	}

	const answer = "2 + 3 = 5, by the calculator."
	c := run.Completion
	if c.Object != "chat.completion" || !strings.HasPrefix(c.ID, "chatcmpl-") || c.Content != answer || c.Finish != "stop" {
		t.Errorf("completion: got %+v, want %q finished by stop", c, answer)
	}
	if u := c.Usage; u["completion_tokens"] < 9 || u["prompt_tokens"] < 50 || u["total_tokens"] != u["prompt_tokens"]+u["completion_tokens"] {
		t.Errorf("completion: got usage %v, want the routing's and the completion's tokens", u)
	}
	if tr := c.Trace; tr.Mode != "routed" || len(tr.Routing.Calls) != 1 || tr.Routing.Calls[0].Tool != "add" {
		t.Errorf("completion: got x_toolrouter %+v, want the routed calculator.add call", tr)
	}

	s := run.Stream
	if s.Content != answer || s.Finish != "stop" || s.Chunks < 3 {
		t.Errorf("stream: got %q finished by %q in %d chunks, want %q by stop in several", s.Content, s.Finish, s.Chunks, answer)
	}
	if s.Usage["total_tokens"] != c.Usage["total_tokens"] || s.Trace == nil || s.Trace.Mode != "routed" {
		t.Errorf("stream: got usage %v and x_toolrouter %v, want the same usage as the completion (%v) and the trace", s.Usage, s.Trace, c.Usage)
	}

	if got := strings.Join(run.Models, ","); got != "fake,llama3.1:8b" {
		t.Errorf("models: got %s, want fake,llama3.1:8b", got)
	}

	checkToolCases(t, run)
	if reqs := remote.Requests(); len(reqs) == 0 || reqs[0].Body.Model != "gpt-4o-mini" || len(reqs[0].Body.Tools) != 0 {
		t.Errorf("tools: the provider got %d requests, want the phases' for gpt-4o-mini, without the client's tools", len(reqs))
	}

	for _, tc := range []struct {
		name                 string
		got                  clientError
		status               int
		class, code, errType string
	}{
		{"n=2", run.BadRequest, 400, "BadRequestError", "unsupported_n", "invalid_request_error"},
		{"wrong key", run.Unauthenticated, 401, "AuthenticationError", "invalid_credential", "authentication_error"},
		{"council without one", run.NoCouncil, 503, "InternalServerError", "no_council", "server_error"},
		{"parameters that do not compile", run.BadSchema, 400, "BadRequestError", "bad_tool_schema", "invalid_request_error"},
		{"tool_choice naming an unknown function", run.UnknownFunction, 400, "BadRequestError", "unknown_tool_choice", "invalid_request_error"},
	} {
		if g := tc.got; !g.Thrown || !g.IsAPIError || g.Status != tc.status || g.Name != tc.class || g.Code != tc.code || g.Type != tc.errType || g.Message == "" {
			t.Errorf("%s: got %+v, want a %s (APIError) with status %d, code %s, type %s", tc.name, g, tc.class, tc.status, tc.code, tc.errType)
		}
	}
	if run.BadRequest.Param != "n" {
		t.Errorf("n=2: got param %q, want n", run.BadRequest.Param)
	}
	if run.BadSchema.Param != "tools[0].function.parameters" || !strings.Contains(run.BadSchema.Message, "broken") {
		t.Errorf("bad schema: got param %q message %q, want tools[0].function.parameters naming the function", run.BadSchema.Param, run.BadSchema.Message)
	}
}

// checkToolCases checks the client-tools answers of examples/npm/openai-client.mjs: on both
// providers, streamed and not, each tool_choice is honoured, parallel calls come as several calls
// with their own ids, and the results of a call are answered in text; runTools' round trip ran
// the function once and ended with the text.
func checkToolCases(t *testing.T, run openAIClientRun) {
	t.Helper()
	const text = "It is sunny in Paris."
	want := map[string]struct {
		calls []string // name=arguments
		text  bool
	}{
		"auto":     {calls: []string{`get_weather={"city":"Paris"}`}},
		"required": {calls: []string{`get_weather={"city":"Paris"}`}},
		"named":    {calls: []string{`get_time={"zone":"UTC"}`}},
		"none":     {text: true},
		"parallel": {calls: []string{`get_weather={"city":"Paris"}`, `get_time={"zone":"UTC"}`}},
		"one":      {calls: []string{`get_weather={"city":"Paris"}`}},
		"results":  {text: true},
	}
	for _, model := range []string{"fake", "remote/gpt-4o-mini"} {
		for name, w := range want {
			for _, suffix := range []string{"", "/stream"} {
				key := model + "/" + name + suffix
				got, ok := run.ToolCases[key]
				if !ok {
					t.Errorf("%s: no answer", key)
					continue
				}
				var calls []string
				ids := map[string]bool{}
				for _, c := range got.Calls {
					calls = append(calls, c.Function.Name+"="+c.Function.Arguments)
					if !strings.HasPrefix(c.ID, "call_") || c.Type != "function" || ids[c.ID] {
						t.Errorf("%s: got call %+v, want its own call_… id and type function", key, c)
					}
					ids[c.ID] = true
				}
				wantFinish := "tool_calls"
				if w.text {
					wantFinish = "stop"
					if got.Content == nil || *got.Content != text {
						t.Errorf("%s: got content %v, want %q", key, got.Content, text)
					}
				} else if got.Content != nil && *got.Content != "" {
					t.Errorf("%s: got content %q beside the calls, want none", key, *got.Content)
				}
				if strings.Join(calls, " ") != strings.Join(w.calls, " ") || got.Finish != wantFinish {
					t.Errorf("%s: got calls %v finished by %q, want %v by %q", key, calls, got.Finish, w.calls, wantFinish)
				}
				if suffix == "" && got.Mode != "client_tools" {
					t.Errorf("%s: got x_toolrouter.mode %q, want client_tools", key, got.Mode)
				}
			}
		}
	}
	if r := run.RunTools; r.Content != text || len(r.Ran) != 1 || r.Ran[0]["city"] != "Paris" || r.Messages != 4 {
		t.Errorf("runTools: got %+v, want get_weather run once for Paris, then %q (4 messages)", r, text)
	}
}

// councilClientRun is what examples/npm/openai-council.mjs reports.
type councilClientRun struct {
	Deliberation, Quiet councilClientStream
}

type councilClientStream struct {
	Deltas []struct{ Reasoning, Content string }
	Finish string
	Trace  struct {
		Mode       string
		AnsweredBy string `json:"answered_by"`
		Council    struct {
			Final  string
			Stage1 []struct{ Model, Label, Response string }
		}
	}
}

// split returns the stream's reasoning and content deltas, and the index of the first content one
// among all (-1 when none) and of the last reasoning one.
func (s councilClientStream) split() (reasoning, content []string, firstContent, lastReasoning int) {
	firstContent, lastReasoning = -1, -1
	for i, d := range s.Deltas {
		if d.Reasoning != "" {
			reasoning, lastReasoning = append(reasoning, d.Reasoning), i
		}
		if d.Content != "" {
			if firstContent < 0 {
				firstContent = i
			}
			content = append(content, d.Content)
		}
	}
	return reasoning, content, firstContent, lastReasoning
}

// TestOpenAIClientCouncil streams a council completion through the real command line with the
// official openai npm client (examples/npm/openai-council.mjs), as a chat UI that shows reasoning
// does: the members' answers and the aggregate ranking arrive as reasoning_content, anonymised,
// before the chairman's words, which arrive as content in the pieces the model server sent and
// join to the council's final answer; with reasoning_effort "none" only the content comes.
func TestOpenAIClientCouncil(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil && os.Getenv("CI") == "true" {
		t.Fatal("node not found, and CI=true: the openai npm client test must run")
	}
	dir := npmservers.Dir(t) // skips without node, installs examples/npm's packages
	script := filepath.Join(dir, "openai-council.mjs")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the openai npm package is not installed in %s: %v", dir, err)
		}
		t.Skipf("the openai npm package is not installed in %s (npm ci there installs it): %v", dir, err)
	}
	const synthesis = "Both members agree, and the calculator confirms it: 2 + 3 = 5."
	model := fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply {
		prompt := req.Messages[0].Content + req.Messages[len(req.Messages)-1].Content
		switch {
		case fakeollama.Selecting(req):
			return fakeollama.Reply{Content: `{"use_tool":true,"calls":["calculator.add"],"needs_more":false,"direct":false}`}
		case req.Format != nil:
			return reply(map[string]any{"a": 2, "b": 3})
		case strings.Contains(prompt, "You are reviewing answers"):
			return fakeollama.Reply{Content: "FINAL RANKING:\n1. Response A\n2. Response B"}
		case strings.Contains(prompt, "You are the chairman"):
			return fakeollama.Reply{Content: synthesis}
		case req.Model == "m1":
			return fakeollama.Reply{Content: "The sum is 5."}
		}
		return fakeollama.Reply{Content: "Five."}
	})
	model.Models = []string{"fake", "m1", "m2", "m3"}

	key, err := auth.NewKey("npm", auth.Identity{Org: access.DefaultOrg})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TOOLROUTER_TEST_OPENAI_KEY", key.Key)
	entry := key.Entry
	entry.SHA256, entry.Env = "", "TOOLROUTER_TEST_OPENAI_KEY"
	path := writeConfig(t, map[string]any{
		"council": map[string]any{
			"members":  []map[string]any{{"name": "one", "model": "m1"}, {"name": "two", "model": "m2"}},
			"chairman": map[string]any{"name": "chair", "model": "m3"},
		},
		"auth": map[string]any{"keys": []auth.Key{entry}},
	})
	base := serve(t, "-config", path, "-ollama", model.URL, "-model", "fake")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Env = append(os.Environ(), "TOOLROUTER_BASE_URL="+base+"/v1", "TOOLROUTER_API_KEY="+key.Key)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, stderr.String())
	}
	var run councilClientRun
	if err := json.Unmarshal(stdout, &run); err != nil {
		t.Fatalf("decoding the script's report %s: %v", stdout, err)
	}

	pieces := fakeollama.Pieces(synthesis)
	for _, tc := range []struct {
		name      string
		got       councilClientStream
		reasoning bool
	}{
		{"deliberation", run.Deliberation, true},
		{"reasoning_effort none", run.Quiet, false},
	} {
		reasoning, content, first, last := tc.got.split()
		if tr := tc.got.Trace; !slices.Equal(content, pieces) || tc.got.Finish != "stop" || tr.Mode != "council" || tr.AnsweredBy != "council" || tr.Council.Final != synthesis {
			t.Errorf("%s: got content %q finished by %q, x_toolrouter %+v; want the chairman's %d pieces %q by stop, answered by the council",
				tc.name, content, tc.got.Finish, tr, len(pieces), pieces)
		}
		if !tc.reasoning {
			if len(reasoning) != 0 {
				t.Errorf("%s: got reasoning %q, want none", tc.name, reasoning)
			}
			continue
		}
		all := strings.Join(reasoning, "")
		if last > first {
			t.Errorf("%s: reasoning after the content began (delta %d after %d):\n%s", tc.name, last, first, all)
		}
		want := []string{"The sum is 5.", "Five.", "Aggregate ranking"}
		for _, a := range tc.got.Trace.Council.Stage1 {
			want = append(want, a.Label)
		}
		for _, w := range want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: reasoning lacks %q:\n%s", tc.name, w, all)
			}
		}
		if strings.Contains(all, "one") || strings.Contains(all, "two") {
			t.Errorf("%s: reasoning names a member, want the anonymous labels:\n%s", tc.name, all)
		}
	}
}

// routedAnswer is what npmClientsModel's answering model writes from the calculator's 5.
const routedAnswer = "2 + 3 = 5, by the calculator."

// npmClientsModel is the fake Ollama behind the npm clients' tests (models "fake" and
// "llama3.1:8b"): the phases over the scripts' get_weather and get_time (clientToolsAnswer), a
// routed calculator.add of 2 and 3, and routedAnswer from its result.
func npmClientsModel(t *testing.T) *fakeollama.Server {
	t.Helper()
	model := fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply {
		var all strings.Builder
		for _, m := range req.Messages {
			all.WriteString(m.Content + "\n")
		}
		hint := string(req.Format)
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "assistant" {
			hint += req.Messages[n-1].Content
		}
		if text, ok := clientToolsAnswer(all.String(), hint, fakeollama.Selecting(req)); ok {
			return fakeollama.Reply{Content: text, PromptTokens: 40, CompletionTokens: 6}
		}
		switch {
		case fakeollama.Selecting(req):
			// In the selection's key order, which a continued answer follows.
			return fakeollama.Reply{Content: `{"use_tool":true,"calls":["calculator.add"],"needs_more":false,"direct":false}`,
				PromptTokens: 300, CompletionTokens: 20}
		case req.Format != nil:
			return reply(map[string]any{"a": 2, "b": 3})
		}
		for _, m := range req.Messages {
			if m.Role == "system" && strings.Contains(m.Content, ">>>\n5\n<<<end ") {
				return fakeollama.Reply{Content: routedAnswer, PromptTokens: 50, CompletionTokens: 9}
			}
		}
		return fakeollama.Reply{Content: "no evidence was given", PromptTokens: 50, CompletionTokens: 4}
	})
	model.Models = []string{"fake", "llama3.1:8b"}
	return model
}
