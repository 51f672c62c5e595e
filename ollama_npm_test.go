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

	"toolrouter/access"
	"toolrouter/auth"
	"toolrouter/internal/npmservers"
)

// ollamaClientRun is what examples/npm/ollama-client.mjs reports.
type ollamaClientRun struct {
	List []string
	Show struct {
		Capabilities []string
		Details      map[string]any
	}
	Version string
	PS      []any
	Chat    struct {
		Content, Role, DoneReason, Mode string
		Done                            bool
		PromptEvalCount, EvalCount      int
	}
	Stream struct {
		Content, DoneReason string
		Parts               int
		Done                bool
	}
	Tools struct {
		Calls []struct {
			ID       string
			Function struct {
				Name      string
				Arguments json.RawMessage
			}
		}
		DoneReason string
	}
	RoundTrip struct {
		Content string
		Done    bool
	}
	Pull, BadRequest, Unauthenticated ollamaClientError
}

type ollamaClientError struct {
	Thrown        bool
	Name, Message string
	Status        int
}

// langChainRun is what examples/npm/langchain-ollama.mjs reports.
type langChainRun struct {
	Invoke struct {
		Content, DoneReason string
		Usage               struct {
			Total int `json:"total_tokens"`
		}
	}
	BindTools struct {
		Calls []struct {
			Name, ID string
			Args     map[string]any
		}
	}
}

// TestOllamaClient drives the real command line's Ollama API with the official ollama npm client
// (examples/npm/ollama-client.mjs) and LangChain's ChatOllama (examples/npm/langchain-ollama.mjs),
// each pointed at toolrouter as at an Ollama server: list, show, version, ps, a routed chat
// streamed and not, a chat with the client's tools and a tool-result round trip, a refused pull,
// a bad request and a wrong key as the client's ResponseError; ChatOllama's invoke and bindTools.
// The routing and answering model is a fake Ollama.
func TestOllamaClient(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil && os.Getenv("CI") == "true" {
		t.Fatal("node not found, and CI=true: the ollama npm client test must run")
	}
	dir := npmservers.Dir(t) // skips without node, installs examples/npm's packages
	for _, pkg := range []string{"ollama", filepath.Join("@langchain", "ollama")} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("the %s npm package is not installed in %s: %v", pkg, dir, err)
			}
			t.Skipf("the %s npm package is not installed in %s (npm ci there installs it): %v", pkg, dir, err)
		}
	}

	const answer = routedAnswer
	model := npmClientsModel(t) // the client's get_weather through the two phases

	key, err := auth.NewKey("npm", auth.Identity{Org: access.DefaultOrg})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TOOLROUTER_TEST_OLLAMA_KEY", key.Key)
	entry := key.Entry
	entry.SHA256, entry.Env = "", "TOOLROUTER_TEST_OLLAMA_KEY"
	path := writeConfig(t, map[string]any{"auth": map[string]any{"keys": []auth.Key{entry}}})
	base := serve(t, "-config", path, "-ollama", model.URL, "-model", "fake")

	node := func(script string, v any) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, script))
		cmd.Env = append(os.Environ(), "TOOLROUTER_HOST="+base, "TOOLROUTER_API_KEY="+key.Key)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.Output()
		if err != nil {
			t.Fatalf("node %s: %v\n%s", script, err, stderr.String())
		}
		t.Logf("%s report: %s", script, stdout)
		if err := json.Unmarshal(stdout, v); err != nil {
			t.Fatalf("decoding %s's report %s: %v", script, stdout, err)
		}
	}

	var run ollamaClientRun
	node("ollama-client.mjs", &run)
	if got := strings.Join(run.List, ","); got != "fake,llama3.1:8b" {
		t.Errorf("list: got %s, want fake,llama3.1:8b (what /v1/models lists)", got)
	}
	if !slices.Contains(run.Show.Capabilities, "completion") || run.Show.Details["family"] != "fake" {
		t.Errorf("show: got %+v, want the model's capabilities and the fake's details", run.Show)
	}
	if run.Version == "" || run.PS == nil {
		t.Errorf("version %q, ps %v: want a version and a (possibly empty) list", run.Version, run.PS)
	}
	if c := run.Chat; c.Content != answer || c.Role != "assistant" || !c.Done || c.DoneReason != "stop" || c.Mode != "routed" ||
		c.PromptEvalCount < 50 || c.EvalCount < 9 {
		t.Errorf("chat: got %+v, want the routed answer %q, done by stop, with the tokens", c, answer)
	}
	if s := run.Stream; s.Content != answer || !s.Done || s.DoneReason != "stop" || s.Parts < 3 {
		t.Errorf("stream: got %+v, want %q in several parts, done by stop", s, answer)
	}
	// The phases chose get_weather and wrote its arguments; the shape is Ollama's.
	if len(run.Tools.Calls) != 1 || run.Tools.DoneReason != "stop" {
		t.Errorf("tools: got %+v, want one tool call, done by stop", run.Tools)
	}
	for _, c := range run.Tools.Calls {
		var a map[string]any
		if c.ID == "" || c.Function.Name != "get_weather" || json.Unmarshal(c.Function.Arguments, &a) != nil || a["city"] != "Paris" {
			t.Errorf("tools: got call %+v, want an id, get_weather and {\"city\": \"Paris\"}", c)
		}
	}
	if r := run.RoundTrip; !r.Done || r.Content != "It is sunny in Paris." {
		t.Errorf("round trip: got %+v, want the model's answer from the tool's result", r)
	}
	for _, tc := range []struct {
		name   string
		got    ollamaClientError
		status int
		want   string
	}{
		{"pull", run.Pull, 501, "Ollama server itself"},
		{"no messages", run.BadRequest, 400, "messages is required"},
		{"wrong key", run.Unauthenticated, 401, "key"},
	} {
		if g := tc.got; !g.Thrown || g.Name != "ResponseError" || g.Status != tc.status || !strings.Contains(g.Message, tc.want) {
			t.Errorf("%s: got %+v, want a ResponseError with status %d saying %q", tc.name, g, tc.status, tc.want)
		}
	}

	var lc langChainRun
	node("langchain-ollama.mjs", &lc)
	if lc.Invoke.Content != answer || lc.Invoke.DoneReason != "stop" || lc.Invoke.Usage.Total == 0 {
		t.Errorf("ChatOllama invoke: got %+v, want %q, done by stop, with usage", lc.Invoke, answer)
	}
	if len(lc.BindTools.Calls) == 0 {
		t.Errorf("ChatOllama bindTools: got no tool calls, want get_weather's")
	}
	for _, c := range lc.BindTools.Calls {
		if c.Name != "get_weather" || c.Args["city"] != "Paris" {
			t.Errorf("ChatOllama bindTools: got call %+v, want get_weather with its arguments", c)
		}
	}
}
