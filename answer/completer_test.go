package answer

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/internal/fakeollama"
	"toolrouter/internal/fakeopenai"
	"toolrouter/provider"
)

// TestCompleter drives the chat completions' completer over real provider clients and fake
// Ollama and OpenAI-compatible servers: the naming rule, what each provider is sent, the answer
// streamed and bounded, and a missing model.
func TestCompleter(t *testing.T) {
	five := 5
	tests := []struct {
		name       string
		model      string
		ollama     fakeollama.Reply
		openai     fakeopenai.Reply
		wantServer string // "ollama" or "remote": which fake was called
		wantModel  string // the model it was sent
		wantText   string
		wantCalls  int
		wantFinish string
		wantErr    error
		wantStats  provider.Stats
	}{
		{"bare name goes to the router's provider", "qwen2.5:7b", fakeollama.Reply{Content: "It is 5.", PromptTokens: 9, CachedTokens: &five, CompletionTokens: 4,
			LoadDuration: time.Millisecond, PrefillDuration: 2 * time.Millisecond, DecodeDuration: 6 * time.Millisecond, TotalDuration: 10 * time.Millisecond}, fakeopenai.Reply{},
			"ollama", "qwen2.5:7b", "It is 5.", 0, "stop", nil,
			provider.Stats{PromptTokens: 9, DecodeTokens: 4, TotalMS: 10, Breakdown: provider.Breakdown{LoadMS: 1, PrefillMS: 2, DecodeMS: 6, RestMS: 1, UncachedTokens: 4}}},
		{"a slash without a provider is the router's", "hf.co/org/model:Q4", fakeollama.Reply{Content: "ok"}, fakeopenai.Reply{},
			"ollama", "hf.co/org/model:Q4", "ok", 0, "stop", nil, provider.Stats{}},
		{"provider/model selects the provider", "remote/gpt-4o-mini", fakeollama.Reply{}, fakeopenai.Reply{Content: "Five.", PromptTokens: 12, CompletionTokens: 2},
			"remote", "gpt-4o-mini", "Five.", 0, "stop", nil, provider.Stats{PromptTokens: 12, DecodeTokens: 2, Breakdown: provider.Breakdown{UncachedTokens: 12}}},
		{"tool calls come back", "remote/gpt-4o-mini", fakeollama.Reply{},
			fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{ID: "call_9", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
			"remote", "gpt-4o-mini", "", 1, "tool_calls", nil, provider.Stats{}},
		{"a model the provider lacks", "nope", fakeollama.Reply{Status: http.StatusNotFound, Error: `model "nope" not found, try pulling it first`}, fakeopenai.Reply{},
			"ollama", "nope", "", 0, "", ErrUnknownModel, provider.Stats{}},
		{"an answer over the bound", "remote/gpt-4o-mini", fakeollama.Reply{}, fakeopenai.Reply{Flood: 1 << 20},
			"remote", "gpt-4o-mini", "", 0, "", provider.ErrResponseTooLarge, provider.Stats{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ollama := fakeollama.New(t, tc.ollama)
			remote := fakeopenai.New(t, tc.openai)
			u, _ := url.Parse(ollama.URL)
			limit := provider.WithMaxResponseBytes(64 << 10)
			c := testCompleter(map[string]Provider{
				"ollama": {Client: provider.NewOllama(u, nil, limit), Ollama: true},
				"remote": {Client: provider.NewOpenAI(remote.BaseURL(), "", nil, limit)},
			}, 64<<10)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var streamed strings.Builder
			out, err := c.Complete(ctx, CompletionRequest{Model: tc.model, Messages: []api.Message{{Role: "user", Content: "2+3?"}},
				Options: map[string]any{"temperature": 0.5}}, func(d Delta) { streamed.WriteString(d.Text) })
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("got error %v, want %v", err, tc.wantErr)
			}
			switch tc.wantServer {
			case "ollama":
				reqs := ollama.Requests()
				if len(reqs) != 1 || reqs[0].Model != tc.wantModel || len(remote.Requests()) != 0 {
					t.Fatalf("got %d Ollama requests (%+v) and %d remote ones, want one for %s", len(reqs), reqs, len(remote.Requests()), tc.wantModel)
				}
				r := reqs[0]
				if r.Options["num_ctx"] != 8192.0 || r.Options["temperature"] != 0.5 || r.Truncate == nil || *r.Truncate || r.KeepAlive == nil {
					t.Errorf("got options %v truncate %v keep_alive %v, want num_ctx 8192, temperature 0.5, no truncation and keep_alive", r.Options, r.Truncate, r.KeepAlive)
				}
			case "remote":
				reqs := remote.Requests()
				if len(reqs) != 1 || reqs[0].Body.Model != tc.wantModel || len(ollama.Requests()) != 0 {
					t.Fatalf("got %d remote requests and %d Ollama ones, want one remote for %s", len(reqs), len(ollama.Requests()), tc.wantModel)
				}
				if b := reqs[0].Body; b.Temperature == nil || *b.Temperature != 0.5 || strings.Contains(string(reqs[0].Raw), "num_ctx") {
					t.Errorf("got request %s, want temperature 0.5 and no Ollama-only option", reqs[0].Raw)
				}
			}
			if err != nil {
				return
			}
			if out.Text != tc.wantText || streamed.String() != tc.wantText || len(out.ToolCalls) != tc.wantCalls || out.FinishReason != tc.wantFinish {
				t.Errorf("got text %q (streamed %q) %d calls finish %q, want %q %d %q", out.Text, streamed.String(), len(out.ToolCalls), out.FinishReason, tc.wantText, tc.wantCalls, tc.wantFinish)
			}
			if out.Stats != tc.wantStats {
				t.Errorf("got stats %+v, want %+v", out.Stats, tc.wantStats)
			}
			if tc.wantCalls > 0 {
				if tc := out.ToolCalls[0]; tc.ID != "call_9" || tc.Function.Name != "get_weather" {
					t.Errorf("got tool call %+v, want call_9 get_weather", tc)
				}
			}
		})
	}
}

// TestCompleterCheck: a chat completion's model is checked before the request is routed. An
// Ollama provider is asked (/api/show) for any name, configured or not, and its "found" is
// trusted for modelFoundTTL; an OpenAI-compatible provider's names are taken as they are.
func TestCompleterCheck(t *testing.T) {
	tests := []struct {
		name      string
		model     string
		down      bool // the Ollama server does not answer
		wantErr   error
		wantOther bool     // an error that is not ErrUnknownModel
		wantShown []string // what Ollama was asked, over two checks a second apart
	}{
		{"the configured model", "qwen2.5:7b", false, nil, false, []string{"qwen2.5:7b"}},
		{"a pulled model that is not configured", "llama3.1", false, nil, false, []string{"llama3.1"}},
		{"a model Ollama lacks", "nope", false, ErrUnknownModel, false, []string{"nope", "nope"}},
		{"an unknown provider's prefix is an Ollama name", "elsewhere/gpt-4o", false, ErrUnknownModel, false, []string{"elsewhere/gpt-4o", "elsewhere/gpt-4o"}},
		{"ollama/ names the Ollama provider", "ollama/llama3.1:latest", false, nil, false, []string{"llama3.1:latest"}},
		{"an OpenAI-compatible provider's model is not asked", "remote/gpt-4o-mini", false, nil, false, nil},
		{"Ollama down", "qwen2.5:7b", true, nil, true, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ollama := fakeollama.New(t)
			ollama.Models = []string{"qwen2.5:7b", "llama3.1:latest"}
			u, _ := url.Parse(ollama.URL)
			c := testCompleter(map[string]Provider{
				"ollama": {Client: provider.NewOllama(u, nil), Show: api.NewClient(u, http.DefaultClient), Ollama: true},
				"remote": {Client: provider.NewOpenAI("http://127.0.0.1:1/v1", "", nil)},
			}, 0)
			now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			c.now = func() time.Time { return now }
			if tc.down {
				ollama.Close()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for i := range 2 {
				err := c.Check(ctx, tc.model)
				switch {
				case tc.wantOther && (err == nil || errors.Is(err, ErrUnknownModel)):
					t.Fatalf("check %d: got %v, want an error other than ErrUnknownModel", i, err)
				case !tc.wantOther && (!errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil)):
					t.Fatalf("check %d: got %v, want %v", i, err, tc.wantErr)
				}
				now = now.Add(time.Second)
			}
			if got := ollama.Shown(); strings.Join(got, ",") != strings.Join(tc.wantShown, ",") {
				t.Errorf("got Ollama asked about %q, want %q", got, tc.wantShown)
			}
			if len(ollama.Requests()) != 0 {
				t.Errorf("got %d chat requests, want none: a check makes no model call", len(ollama.Requests()))
			}
		})
	}
}

// TestCompleterCheckExpires: a found model is asked about again once modelFoundTTL is over, and
// a model removed meanwhile is then unknown.
func TestCompleterCheckExpires(t *testing.T) {
	ollama := fakeollama.New(t)
	ollama.Models = []string{"qwen2.5:7b"}
	u, _ := url.Parse(ollama.URL)
	c := testCompleter(map[string]Provider{"ollama": {Client: provider.NewOllama(u, nil), Show: api.NewClient(u, http.DefaultClient), Ollama: true}}, 0)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return now }
	ctx := context.Background()
	if err := c.Check(ctx, "qwen2.5:7b"); err != nil {
		t.Fatalf("got %v, want the model found", err)
	}
	ollama.Models = nil // removed
	now = now.Add(modelFoundTTL - time.Second)
	if err := c.Check(ctx, "qwen2.5:7b"); err != nil {
		t.Fatalf("within the TTL: got %v, want the cached answer", err)
	}
	now = now.Add(2 * time.Second)
	if err := c.Check(ctx, "qwen2.5:7b"); !errors.Is(err, ErrUnknownModel) {
		t.Fatalf("after the TTL: got %v, want ErrUnknownModel", err)
	}
	if n := len(ollama.Shown()); n != 2 {
		t.Errorf("got Ollama asked %d times, want 2", n)
	}
}

// testCompleter is the completer over providers as the default configuration sets it: the
// router's provider "ollama", its num_ctx 8192 and a keep_alive.
func testCompleter(providers map[string]Provider, maxResponse int) *ProviderCompleter {
	return NewCompleter(CompleterOptions{Providers: providers, Fallback: "ollama", NumCtx: 8192, KeepAlive: 5 * time.Minute, MaxResponseBytes: maxResponse})
}
