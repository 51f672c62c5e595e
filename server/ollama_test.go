package server_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/answer"
	"toolrouter/internal/fakeollama"
	"toolrouter/provider"
	"toolrouter/router"
	"toolrouter/server"
)

// ollamaChatBody is an /api/chat answer (one object, or one NDJSON line) as Ollama's clients
// read it.
type ollamaChatBody struct {
	Model      string      `json:"model"`
	CreatedAt  time.Time   `json:"created_at"`
	Message    api.Message `json:"message"`
	Done       bool        `json:"done"`
	DoneReason string      `json:"done_reason"`
	api.Metrics
	Error string `json:"error"`
}

// TestOllamaChatRouted: an /api/chat without tools is routed over the inventory, then the named
// model answers with the tool results as evidence, in Ollama's shape: one object with
// "stream": false, NDJSON lines otherwise (Ollama's default), the last done with its done_reason
// and counts. format, think, options and keep_alive reach the answering model.
func TestOllamaChatRouted(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream %v", stream), func(t *testing.T) {
			model := fakeollama.New(t, selectAdd(true)...)
			comp := &fakeCompleter{pieces: []string{"2 + 3 ", "is 5."}, reply: answer.Completion{FinishReason: "length",
				Stats: provider.Stats{PromptTokens: 40, DecodeTokens: 6, Breakdown: provider.Breakdown{LoadMS: 1, PrefillMS: 8, DecodeMS: 30}}}}
			e := newChatEnv(t, model, comp, nil, server.Options{})
			base := listen(t, e.app)
			body := `{"model":"qwen3:0.6b","format":{"type":"object"},"think":"low","options":{"temperature":0.2,"num_ctx":4096},"keep_alive":"7m",` +
				`"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"what is 2+3?"}]`
			if !stream {
				body += `,"stream":false`
			}
			resp, err := http.Post(base+"/api/chat", "application/json", strings.NewReader(body+"}"))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			wantCT := "application/json"
			if stream {
				wantCT = "application/x-ndjson"
			}
			if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, wantCT) {
				t.Fatalf("got %d %q, want 200 %s", resp.StatusCode, ct, wantCT)
			}
			var lines []ollamaChatBody
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				var l ollamaChatBody
				if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
					t.Fatalf("line %q is not a JSON object: %v", sc.Text(), err)
				}
				lines = append(lines, l)
			}
			if len(lines) == 0 || (!stream && len(lines) != 1) {
				t.Fatalf("got %d objects, want one, or lines when streamed", len(lines))
			}
			var text string
			for i, l := range lines {
				if l.Model != "qwen3:0.6b" || l.CreatedAt.IsZero() || l.Message.Role != "assistant" || l.Done != (i == len(lines)-1) {
					t.Errorf("object %d: got %+v, want model qwen3:0.6b, a time, role assistant, done only on the last", i, l)
				}
				text += l.Message.Content
			}
			last := lines[len(lines)-1]
			if text != "2 + 3 is 5." || last.DoneReason != "length" {
				t.Errorf("got text %q done_reason %q, want \"2 + 3 is 5.\" and length", text, last.DoneReason)
			}
			if last.PromptEvalCount < 40 || last.EvalCount < 6 || last.EvalDuration != 30*time.Millisecond || last.TotalDuration <= 0 {
				t.Errorf("got metrics %+v, want the routing's and the answer's tokens, eval_duration 30ms and a total", last.Metrics)
			}
			reqs := comp.requests()
			if len(reqs) != 1 {
				t.Fatalf("got %d completions, want 1", len(reqs))
			}
			req := reqs[0]
			if req.Model != "qwen3:0.6b" || req.Tools != nil || string(req.Format) != `{"type":"object"}` || req.Think == nil || req.Think.Value != "low" ||
				req.KeepAlive == nil || req.KeepAlive.Duration != 7*time.Minute || req.Options["num_ctx"] != float64(4096) || req.Options["temperature"] != 0.2 {
				t.Errorf("got completion %+v, want the model, no tools, the format, think low, keep_alive 7m and the options", req)
			}
			if ev := req.Messages[1].Content; !strings.Contains(ev, "calculator.add") {
				t.Errorf("got evidence %q, want the calculator.add call", ev)
			}
			rep := e.reports.next(t)
			if rep.Endpoint != "/api/chat" || rep.Status != http.StatusOK || rep.Outcome == nil || len(rep.ModelCalls) != 1 {
				t.Errorf("got report endpoint %q status %d outcome %v model calls %d, want /api/chat, 200, the routing and the completion", rep.Endpoint, rep.Status, rep.Outcome != nil, len(rep.ModelCalls))
			}
		})
	}
}

// TestOllamaChatTools: an /api/chat with tools answers the model's tool calls in Ollama's shape:
// message.tool_calls, each with an id and function.name and arguments as an object, done_reason
// stop; streamed, the calls come in a line before the done one.
func TestOllamaChatTools(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream %v", stream), func(t *testing.T) {
			args := api.NewToolCallFunctionArguments()
			args.Set("city", "Paris")
			comp := &fakeCompleter{reply: answer.Completion{ToolCalls: []api.ToolCall{{Function: api.ToolCallFunction{Name: "get_weather", Arguments: args}}},
				Stats: provider.Stats{PromptTokens: 20, DecodeTokens: 9}}}
			e := newChatEnv(t, fakeollama.New(t), comp, nil, server.Options{})
			body := fmt.Sprintf(`{"model":"qwen3:0.6b","stream":%v,"tools":[{"type":"function","function":{"name":"get_weather","description":"weather",
				"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}],
				"messages":[{"role":"user","content":"weather in Rome?"},
				{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Rome"}}}]},
				{"role":"tool","tool_name":"get_weather","content":"sunny"},{"role":"user","content":"and Paris?"}]}`, stream)
			status, raw, _ := doLines(t, e.app, "/api/chat", body)
			if status != http.StatusOK {
				t.Fatalf("got %d %s", status, raw)
			}
			var calls []map[string]any
			var last map[string]any
			for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
				var l struct {
					Message struct {
						ToolCalls []map[string]any `json:"tool_calls"`
					} `json:"message"`
				}
				if err := json.Unmarshal([]byte(line), &l); err != nil {
					t.Fatalf("line %q: %v", line, err)
				}
				calls = append(calls, l.Message.ToolCalls...)
				_ = json.Unmarshal([]byte(line), &last)
			}
			if last["done"] != true || last["done_reason"] != "stop" || len(calls) != 1 {
				t.Fatalf("got %s, want one tool call and done_reason stop", raw)
			}
			fn, _ := calls[0]["function"].(map[string]any)
			id, _ := calls[0]["id"].(string)
			if !strings.HasPrefix(id, "call_") || fn["name"] != "get_weather" || fmt.Sprint(fn["arguments"]) != "map[city:Paris]" {
				t.Errorf("got tool call %v, want an id, get_weather and the arguments {\"city\":\"Paris\"} as an object", calls[0])
			}
			req := comp.requests()[0]
			if len(req.Messages) != 4 || len(req.Messages[1].ToolCalls) != 1 || req.Messages[2].ToolName != "get_weather" {
				t.Errorf("got messages %+v, want the conversation with the earlier call and its result", req.Messages)
			}
		})
	}
}

// doLines posts body to path and returns the status and the whole body.
func doLines(t *testing.T, app interface {
	Test(*http.Request, ...int) (*http.Response, error)
}, path, body string) (int, []byte, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := app.Test(req, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	return resp.StatusCode, []byte(b.String()), resp.Header
}

// TestOllamaChatRejectsBadRequests: each problem of an /api/chat body is a 400 in Ollama's shape,
// {"error": "message"}, naming it; no model is called.
func TestOllamaChatRejectsBadRequests(t *testing.T) {
	tools := `"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`
	tests := []struct {
		name, body, want string
	}{
		{"not JSON", `{"model":`, "JSON"},
		{"no model", `{"messages":[{"role":"user","content":"hi"}]}`, "model is required"},
		{"no messages", `{"model":"m"}`, "messages is required"},
		{"no user message", `{"model":"m","messages":[{"role":"system","content":"hi"}]}`, `role "user"`},
		{"a bad role", `{"model":"m","messages":[{"role":"robot","content":"hi"}]}`, `messages[0].role must be`},
		{"a tool result without tools", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"tool","content":"x"}]}`, "has no tools"},
		{"images", `{"model":"m","messages":[{"role":"user","content":"hi","images":["aGk="]}]}`, "images are not supported"},
		{"a bad think", `{"model":"m","think":"very","messages":[{"role":"user","content":"hi"}]}`, "think must be"},
		{"a bad format", `{"model":"m","format":"yaml","messages":[{"role":"user","content":"hi"}]}`, `format must be "json"`},
		{"a bad keep_alive", `{"model":"m","keep_alive":"soon","messages":[{"role":"user","content":"hi"}]}`, "keep_alive must be"},
		{"a tool call without a name", `{"model":"m",` + tools + `,"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"function":{"arguments":{}}}]}]}`, "function.name is required"},
		{"a bad tool", `{"model":"m","tools":[{"type":"retrieval"}],"messages":[{"role":"user","content":"hi"}]}`, `tools[0].type must be "function"`},
		{"the council with tools", `{"model":"council",` + tools + `,"messages":[{"role":"user","content":"hi"}]}`, `"council" cannot take the client's tools`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			comp := &fakeCompleter{pieces: []string{"x"}}
			e := newChatEnv(t, fakeollama.New(t), comp, nil, server.Options{})
			status, raw, _ := do(t, e.app, http.MethodPost, "/api/chat", []byte(tc.body))
			var body map[string]any
			_ = json.Unmarshal(raw, &body)
			msg, _ := body["error"].(string)
			if status != http.StatusBadRequest || len(body) != 1 || !strings.Contains(msg, tc.want) {
				t.Errorf("got %d %s, want 400 {\"error\": \"...%s...\"}", status, raw, tc.want)
			}
			if n := len(comp.requests()); n != 0 {
				t.Errorf("got %d completions, want none", n)
			}
		})
	}
}

// TestOllamaChatErrors: an unknown model is Ollama's 404 before any routing; a model that fails
// after a stream has started ends the stream with an {"error": "message"} line.
func TestOllamaChatErrors(t *testing.T) {
	t.Run("unknown model", func(t *testing.T) {
		model := fakeollama.New(t, selectAdd(true)...)
		e := newChatEnv(t, model, &fakeCompleter{missing: []string{"nope"}}, nil, server.Options{})
		status, raw, _ := do(t, e.app, http.MethodPost, "/api/chat", []byte(`{"model":"nope","messages":[{"role":"user","content":"2+3?"}]}`))
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		if msg, _ := body["error"].(string); status != http.StatusNotFound || !strings.Contains(msg, "nope") {
			t.Errorf("got %d %s, want 404 {\"error\"} naming the model", status, raw)
		}
		if n := len(model.Requests()); n != 0 {
			t.Errorf("the routing model got %d calls, want none", n)
		}
	})
	t.Run("a stream cut by the request timeout", func(t *testing.T) {
		// SSE doors send a keep-alive comment every StreamHeartbeat; an NDJSON line must be JSON,
		// so the stream that waits sends none: every line parses, the last is the timeout.
		comp := &fakeCompleter{pieces: []string{"It "}, hang: make(chan error, 1)}
		e := newChatEnv(t, fakeollama.New(t, selectAdd(true)...), comp, nil, server.Options{StreamHeartbeat: time.Millisecond, RequestTimeout: 300 * time.Millisecond})
		status, raw, _ := doLines(t, e.app, "/api/chat", `{"model":"m","messages":[{"role":"user","content":"2+3?"}]}`)
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		for _, l := range lines {
			if !json.Valid([]byte(l)) {
				t.Errorf("got line %q, want every line a JSON object", l)
			}
		}
		var last map[string]any
		_ = json.Unmarshal([]byte(lines[len(lines)-1]), &last)
		if msg, _ := last["error"].(string); status != http.StatusOK || len(lines) != 2 || msg == "" {
			t.Errorf("got %d, lines %q, want the text's line, then {\"error\"}", status, lines)
		}
		<-comp.hang
	})
	t.Run("the headers come before the first line", func(t *testing.T) {
		// The answer has not started (the model has not written a word): the client has the
		// stream's status and headers already, and leaving stops the model.
		comp := &fakeCompleter{hang: make(chan error, 1)}
		e := newChatEnv(t, fakeollama.New(t, selectAdd(true)...), comp, nil, server.Options{RequestTimeout: 5 * time.Second})
		base := listen(t, e.app)
		resp, err := http.Post(base+"/api/chat", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"2+3?"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		select {
		case cause := <-comp.hang:
			t.Fatalf("the headers came only once the model's call had ended (%v)", cause)
		default:
		}
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-ndjson" {
			t.Errorf("got %d %q, want 200 application/x-ndjson", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		resp.Body.Close()
		<-comp.hang
	})
	t.Run("model fails in a stream", func(t *testing.T) {
		e := newChatEnv(t, fakeollama.New(t, selectAdd(true)...), &fakeCompleter{err: errors.New("connection refused")}, nil, server.Options{})
		status, raw, _ := doLines(t, e.app, "/api/chat", `{"model":"m","messages":[{"role":"user","content":"2+3?"}]}`)
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		var last map[string]any
		_ = json.Unmarshal([]byte(lines[len(lines)-1]), &last)
		if msg, _ := last["error"].(string); status != http.StatusOK || len(last) != 1 || !strings.Contains(msg, "connection refused") {
			t.Errorf("got %d, last line %s, want 200 and a last line {\"error\": \"...connection refused...\"}", status, lines[len(lines)-1])
		}
	})
}

// TestOllamaListings: /api/tags lists what /v1/models lists, in Ollama's shape (with the router's
// Ollama server's details for its own models); /api/show shows a listed model and answers 404
// for another; /api/version and /api/ps answer as Ollama does.
func TestOllamaListings(t *testing.T) {
	model := fakeollama.New(t)
	model.Models = []string{"qwen3:0.6b", "tiny:latest"}
	e := newChatEnv(t, model, &fakeCompleter{}, nil, server.Options{Models: []server.ModelInfo{{ID: "remote/gpt-4o-mini", OwnedBy: "remote"}}})

	_, _, models := do(t, e.app, http.MethodGet, "/v1/models", nil)
	var want []string
	for _, m := range models["data"].([]any) {
		want = append(want, m.(map[string]any)["id"].(string))
	}
	status, raw, _ := do(t, e.app, http.MethodGet, "/api/tags", nil)
	var tags api.ListResponse
	if err := json.Unmarshal(raw, &tags); err != nil || status != http.StatusOK {
		t.Fatalf("got %d %s, want 200 and Ollama's list", status, raw)
	}
	var got []string
	for _, m := range tags.Models {
		if m.Name != m.Model {
			t.Errorf("got name %q model %q, want them equal", m.Name, m.Model)
		}
		got = append(got, m.Name)
	}
	if !slices.Equal(got, want) || !slices.Contains(got, "tiny:latest") || !slices.Contains(got, "remote/gpt-4o-mini") {
		t.Errorf("got /api/tags %v, want what /v1/models lists, %v", got, want)
	}

	tests := []struct {
		name, body string
		wantStatus int
		want       string
	}{
		{"a model of the router's Ollama", `{"model":"tiny:latest"}`, http.StatusOK, `"family":"fake"`},
		{"a configured model, by its old field name", `{"name":"remote/gpt-4o-mini"}`, http.StatusOK, `"capabilities":["completion","tools"]`},
		{"a model not listed", `{"model":"llama9"}`, http.StatusNotFound, `{"error":"model 'llama9' not found`},
		{"no model", `{}`, http.StatusBadRequest, `{"error":"model is required"}`},
	}
	for _, tc := range tests {
		t.Run("show "+tc.name, func(t *testing.T) {
			status, raw, _ := do(t, e.app, http.MethodPost, "/api/show", []byte(tc.body))
			if status != tc.wantStatus || !strings.Contains(string(raw), tc.want) {
				t.Errorf("got %d %s, want %d and %s", status, raw, tc.wantStatus, tc.want)
			}
		})
	}

	// The version is that of the Ollama whose API types the door encodes: go.mod's.
	mod, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	modVersion := regexp.MustCompile(`github.com/ollama/ollama v(\S+)`).FindSubmatch(mod)
	if status, raw, body := do(t, e.app, http.MethodGet, "/api/version", nil); status != http.StatusOK || modVersion == nil || body["version"] != string(modVersion[1]) || len(body) != 1 {
		t.Errorf("GET /api/version: got %d %s, want {\"version\": %q}, go.mod's github.com/ollama/ollama", status, raw, modVersion)
	}
	// The fake serves no /api/ps: nothing is loaded, as far as toolrouter can tell.
	if status, raw, _ := do(t, e.app, http.MethodGet, "/api/ps", nil); status != http.StatusOK || string(raw) != `{"models":[]}` {
		t.Errorf("GET /api/ps: got %d %s, want {\"models\":[]}", status, raw)
	}
}

// TestOllamaRefusals: model management and the endpoints toolrouter does not answer are refused
// with 501 in Ollama's shape, naming the Ollama server to use instead; nothing reaches it.
func TestOllamaRefusals(t *testing.T) {
	model := fakeollama.New(t)
	e := newChatEnv(t, model, &fakeCompleter{}, nil, server.Options{})
	for _, tc := range []struct{ method, path, want string }{
		{http.MethodPost, "/api/pull", "ollama pull MODEL"},
		{http.MethodPost, "/api/push", "does not manage models"},
		{http.MethodPost, "/api/create", "does not manage models"},
		{http.MethodPost, "/api/copy", "does not manage models"},
		{http.MethodDelete, "/api/delete", "does not manage models"},
		{http.MethodPost, "/api/generate", "user message to /api/chat"},
		{http.MethodPost, "/api/embed", "embeddings"},
		{http.MethodPost, "/api/embeddings", "embeddings"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			status, raw, body := do(t, e.app, tc.method, tc.path, []byte(`{"model":"qwen3:0.6b"}`))
			msg, _ := body["error"].(string)
			if status != http.StatusNotImplemented || len(body) != 1 || !strings.Contains(msg, tc.want) || !strings.Contains(msg, "Ollama server itself") {
				t.Errorf("got %d %s, want 501 {\"error\"} saying %q and naming the Ollama server", status, raw, tc.want)
			}
		})
	}
	if n := len(model.Requests()) + len(model.Shown()); n != 0 {
		t.Errorf("the Ollama server got %d requests, want none", n)
	}
}

// TestOpenWebUIConnection sends the requests Open WebUI's Ollama connection makes, as it makes
// them (a Bearer key, Content-Type: application/json even on a GET): the connection check and the
// version (GET /api/version, whose "x.y.z" it parses as numbers), the model list (GET /api/tags,
// keyed by "model"), the loaded models (GET /api/ps, an admin page), a model's details (POST
// /api/show) and a streamed chat (POST /api/chat with options and keep_alive). Each is served.
func TestOpenWebUIConnection(t *testing.T) {
	model := fakeollama.New(t, selectAdd(true)...)
	model.Models = []string{"qwen3:0.6b"}
	inv := newInventory(t)
	d := server.Deps{Inventory: inv, Model: model.Client(), Auth: authKeys(t), Completer: &fakeCompleter{pieces: []string{"It is ", "5."}},
		Router: router.New(model.Client(), inv, inv, router.Settings{Model: "fake", CallTimeout: 10 * time.Second}, quiet)}
	base := serveOn(t, d, server.Options{Logger: quiet, Model: "fake"})
	send := func(method, path, body string) (int, string, http.Header) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+teamKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
		}
		return resp.StatusCode, b.String(), resp.Header
	}

	status, raw, _ := send(http.MethodGet, "/api/version", "")
	var version struct{ Version string }
	_ = json.Unmarshal([]byte(raw), &version)
	parts := strings.Split(version.Version, ".")
	if status != http.StatusOK || len(parts) != 3 || slices.ContainsFunc(parts, func(p string) bool { _, err := fmt.Sscan(p, new(int)); return err != nil }) {
		t.Errorf("GET /api/version: got %d %s, want a version of three numbers", status, raw)
	}
	status, raw, _ = send(http.MethodGet, "/api/tags", "")
	if status != http.StatusOK || !strings.Contains(raw, `"model":"qwen3:0.6b"`) {
		t.Errorf("GET /api/tags: got %d %s, want qwen3:0.6b keyed by model", status, raw)
	}
	if status, raw, _ = send(http.MethodGet, "/api/ps", ""); status != http.StatusOK || !strings.Contains(raw, `"models":[`) {
		t.Errorf("GET /api/ps: got %d %s, want a list of models", status, raw)
	}
	if status, raw, _ = send(http.MethodPost, "/api/show", `{"model":"qwen3:0.6b"}`); status != http.StatusOK || !strings.Contains(raw, `"capabilities"`) {
		t.Errorf("POST /api/show: got %d %s, want the model's capabilities", status, raw)
	}
	status, raw, h := send(http.MethodPost, "/api/chat", `{"model":"qwen3:0.6b","stream":true,"options":{"temperature":0.8},"keep_alive":"5m",`+
		`"messages":[{"role":"user","content":"what is 2+3?"}]}`)
	lines := strings.Split(strings.TrimSpace(raw), "\n")
	var last ollamaChatBody
	_ = json.Unmarshal([]byte(lines[len(lines)-1]), &last)
	if status != http.StatusOK || h.Get("Content-Type") != "application/x-ndjson" || !last.Done || last.DoneReason != "stop" {
		t.Errorf("POST /api/chat: got %d %q %s, want an NDJSON stream ending done", status, h.Get("Content-Type"), raw)
	}
}

// TestUnroutedPathsSpeakTheirAPIsDialect: a path under /api/ that no door serves (a newer Ollama
// endpoint, a typo) is answered in Ollama's error shape, as docs/api.md says of every error on
// /api/; one under /v1/chat/ in OpenAI's.
func TestUnroutedPathsSpeakTheirAPIsDialect(t *testing.T) {
	e := newChatEnv(t, fakeollama.New(t), &fakeCompleter{}, nil, server.Options{})
	for _, tc := range []struct {
		method, path string
		ollama       bool
	}{
		{http.MethodGet, "/api/nothing-here", true},
		{http.MethodPost, "/api/chat/extra", true},
		{http.MethodPost, "/v1/chat/completion", false},
	} {
		t.Run(tc.path, func(t *testing.T) {
			status, raw, body := do(t, e.app, tc.method, tc.path, []byte(`{}`))
			if status != http.StatusNotFound {
				t.Fatalf("got %d %s, want 404", status, raw)
			}
			msg, isString := body["error"].(string)
			obj, isObject := body["error"].(map[string]any)
			switch {
			case tc.ollama && (!isString || msg == "" || len(body) != 1):
				t.Errorf("got %s, want Ollama's {\"error\": \"message\"}", raw)
			case !tc.ollama && (!isObject || obj["type"] == nil):
				t.Errorf("got %s, want OpenAI's {\"error\": {\"message\", \"type\", ...}}", raw)
			}
		})
	}
}
