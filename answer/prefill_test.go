package answer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/types/model"

	"toolrouter/internal/fakeollama"
	"toolrouter/provider"
)

// TestCompleterPrefill: a chat completion whose response_format fixes the answer's text but for
// its values is answered value by value on an Ollama provider, the keys and punctuation written by
// the completer and streamed with the values, and the usage counting the whole answer; every other
// case is the one whole call it was before.
func TestCompleterPrefill(t *testing.T) {
	const (
		lead   = "<think>\n\n</think>\n\n"
		answer = `{"city":"Paris","n":3}`
		fixed  = `{"type":"object","properties":{"city":{"type":"string","maxLength":20},"n":{"type":"integer"}},"required":["city","n"]}`
	)
	off, thinks := false, []model.Capability{model.CapabilityCompletion, model.CapabilityThinking}
	// wide has a property more than the continued values' bound: one call each would be too many.
	var props, required []string
	for i := range maxContinuedValues + 1 {
		props = append(props, fmt.Sprintf(`"p%d":{"type":"integer"}`, i))
		required = append(required, fmt.Sprintf(`"p%d"`, i))
	}
	wide := `{"type":"object","properties":{` + strings.Join(props, ",") + `},"required":[` + strings.Join(required, ",") + `]}`
	tests := []struct {
		name         string
		prefill      bool
		format       string
		think        *api.ThinkValue
		capabilities []model.Capability
		noContinue   bool
		options      map[string]any
		reply        fakeollama.Reply
		// wantPrefixes are the answers so far the calls continued ("" for a whole answer).
		wantPrefixes []string
		wantPrompt   int
		wantDecode   int
		wantFinish   string
	}{
		{name: "a format fixed but for its values is continued", prefill: true, format: fixed, think: &api.ThinkValue{Value: off},
			reply:        fakeollama.Reply{Content: answer, PromptTokens: 40},
			wantPrefixes: []string{`{"city":`, `{"city":"Paris","n":`},
			// The first call's prompt holds the first key (8 bytes, a token a byte); the
			// completion is the rest: the last prompt's growth over the first (12), the last value
			// (1) and the closing brace (1). Together, the request's 40 and the answer's 22.
			wantPrompt: 48, wantDecode: 14, wantFinish: "stop"},
		{name: "think unset on a model that does not think is continued", prefill: true, format: fixed,
			capabilities: []model.Capability{model.CapabilityCompletion},
			reply:        fakeollama.Reply{Content: answer, PromptTokens: 40},
			wantPrefixes: []string{`{"city":`, `{"city":"Paris","n":`}, wantPrompt: 48, wantDecode: 14, wantFinish: "stop"},
		{name: "think unset on a model that thinks is whole", prefill: true, format: fixed, capabilities: thinks,
			reply: fakeollama.Reply{Content: answer, PromptTokens: 40, CompletionTokens: 9}, wantPrefixes: []string{""}, wantPrompt: 40, wantDecode: 9, wantFinish: "stop"},
		{name: "prefill off is whole", format: fixed, think: &api.ThinkValue{Value: off},
			reply: fakeollama.Reply{Content: answer, PromptTokens: 40, CompletionTokens: 9}, wantPrefixes: []string{""}, wantPrompt: 40, wantDecode: 9, wantFinish: "stop"},
		{name: "an object wider than the bound is whole", prefill: true, format: wide, think: &api.ThinkValue{Value: off},
			reply: fakeollama.Reply{Content: answer, PromptTokens: 40, CompletionTokens: 9}, wantPrefixes: []string{""}, wantPrompt: 40, wantDecode: 9, wantFinish: "stop"},
		{name: "an optional property is whole", prefill: true, think: &api.ThinkValue{Value: off},
			format: `{"type":"object","properties":{"city":{"type":"string"},"n":{"type":"integer"}},"required":["city"]}`,
			reply:  fakeollama.Reply{Content: answer, PromptTokens: 40, CompletionTokens: 9}, wantPrefixes: []string{""}, wantPrompt: 40, wantDecode: 9, wantFinish: "stop"},
		{name: "a template that does not continue is whole", prefill: true, format: fixed, think: &api.ThinkValue{Value: off}, noContinue: true,
			reply: fakeollama.Reply{Content: answer, PromptTokens: 40, CompletionTokens: 9}, wantPrefixes: []string{""}, wantPrompt: 40, wantDecode: 9, wantFinish: "stop"},
		{name: "max_tokens is whole", prefill: true, format: fixed, think: &api.ThinkValue{Value: off}, options: map[string]any{"num_predict": 50},
			reply: fakeollama.Reply{Content: answer, PromptTokens: 40, CompletionTokens: 9}, wantPrefixes: []string{""}, wantPrompt: 40, wantDecode: 9, wantFinish: "stop"},
		{name: "thinking on is whole", prefill: true, format: fixed, think: &api.ThinkValue{Value: "high"},
			reply: fakeollama.Reply{Content: answer, PromptTokens: 40, CompletionTokens: 9}, wantPrefixes: []string{""}, wantPrompt: 40, wantDecode: 9, wantFinish: "stop"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := fakeollama.New(t, tc.reply)
			fake.Lead, fake.CountPrefix, fake.NoContinue, fake.Capabilities = lead, true, tc.noContinue, tc.capabilities
			fake.Models = []string{"m"}
			u, _ := url.Parse(fake.URL)
			c := NewCompleter(CompleterOptions{Providers: map[string]Provider{
				"ollama": {Client: provider.NewOllama(u, nil), Show: api.NewClient(u, http.DefaultClient), Ollama: true}},
				Fallback: "ollama", NumCtx: 8192, Prefill: tc.prefill})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var deltas []string
			out, err := c.Complete(ctx, CompletionRequest{Model: "m", Messages: []api.Message{{Role: "user", Content: "Where?"}},
				Format: json.RawMessage(tc.format), Think: tc.think, Options: tc.options}, func(d Delta) { deltas = append(deltas, d.Text) })
			if err != nil {
				t.Fatal(err)
			}
			if out.Text != answer || strings.Join(deltas, "") != answer || out.FinishReason != tc.wantFinish {
				t.Errorf("got text %q, deltas %q, finish %q; want %q streamed whole, finish %q", out.Text, deltas, out.FinishReason, answer, tc.wantFinish)
			}
			var prefixes []string
			for _, r := range fake.Requests() {
				if r.DebugRenderOnly {
					continue
				}
				last := r.Messages[len(r.Messages)-1]
				if last.Role != "assistant" {
					prefixes = append(prefixes, "")
					if string(r.Format) != tc.format {
						t.Errorf("whole answer asked with format %s, want the request's %s", r.Format, tc.format)
					}
					continue
				}
				if !strings.HasPrefix(last.Content, lead) {
					t.Errorf("continuation %q does not start with the template's lead %q", last.Content, lead)
				}
				prefixes = append(prefixes, strings.TrimPrefix(last.Content, lead))
			}
			if !slices.Equal(prefixes, tc.wantPrefixes) {
				t.Errorf("got calls continuing %q, want %q", prefixes, tc.wantPrefixes)
			}
			if out.Stats.PromptTokens != tc.wantPrompt || out.Stats.DecodeTokens != tc.wantDecode {
				t.Errorf("got %d prompt and %d completion tokens, want %d and %d", out.Stats.PromptTokens, out.Stats.DecodeTokens, tc.wantPrompt, tc.wantDecode)
			}
			if len(tc.wantPrefixes) > 1 && len(deltas) != len(tc.wantPrefixes)+1 {
				t.Errorf("got deltas %q, want one per value with the text forced before it, then the closing brace", deltas)
			}
		})
	}
}

// TestCompleterPrefillNotContinued: a server whose template renders as continuing but whose answer
// to a continuation is not one is answered whole, nothing of the continuation streamed, and the
// model's later requests are whole from the start.
func TestCompleterPrefillNotContinued(t *testing.T) {
	const other = `{"other":1}`
	fake := fakeollama.New(t, fakeollama.Reply{Content: other, PromptTokens: 30, CompletionTokens: 5},
		fakeollama.Reply{Content: other, PromptTokens: 30, CompletionTokens: 5})
	u, _ := url.Parse(fake.URL)
	c := NewCompleter(CompleterOptions{Providers: map[string]Provider{"ollama": {Client: provider.NewOllama(u, nil), Ollama: true}},
		Fallback: "ollama", NumCtx: 8192, Prefill: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	off := false
	for i, wantCalls := range []int{2, 1} {
		var deltas []string
		out, err := c.Complete(ctx, CompletionRequest{Model: "m", Messages: []api.Message{{Role: "user", Content: "Where?"}},
			Format: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`), Think: &api.ThinkValue{Value: off}},
			func(d Delta) { deltas = append(deltas, d.Text) })
		if err != nil {
			t.Fatal(err)
		}
		if out.Text != other || strings.Join(deltas, "") != other {
			t.Errorf("request %d: got text %q, deltas %q; want the whole answer %q, streamed alone", i, out.Text, deltas, other)
		}
		calls := 0
		for _, r := range fake.Requests() {
			if !r.DebugRenderOnly {
				calls++
			}
		}
		if i == 0 && calls != wantCalls || i == 1 && calls != 3 {
			t.Errorf("request %d: got %d model calls in all, want %d more", i, calls, wantCalls)
		}
	}
}

// TestCompleterPrefillBounded: ollama.max_response_bytes bounds the continued answer whole, the
// forced text included.
func TestCompleterPrefillBounded(t *testing.T) {
	fake := fakeollama.New(t, fakeollama.Reply{Content: `{"city":"Paris","n":3}`})
	u, _ := url.Parse(fake.URL)
	c := NewCompleter(CompleterOptions{Providers: map[string]Provider{"ollama": {Client: provider.NewOllama(u, nil), Ollama: true}},
		Fallback: "ollama", NumCtx: 8192, Prefill: true, MaxResponseBytes: 12})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	off := false
	_, err := c.Complete(ctx, CompletionRequest{Model: "m", Messages: []api.Message{{Role: "user", Content: "Where?"}},
		Format: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"n":{"type":"integer"}},"required":["city","n"]}`),
		Think:  &api.ThinkValue{Value: off}}, nil)
	if !errors.Is(err, provider.ErrResponseTooLarge) {
		t.Fatalf("got error %v, want %v", err, provider.ErrResponseTooLarge)
	}
}
