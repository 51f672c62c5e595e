package provider_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/internal/fakeollama"
	"toolrouter/internal/fakeopenai"
	"toolrouter/provider"
)

func intPtr(n int) *int { return &n }

// TestStatsOf: the final message's metrics split into load, prefill, decode and the rest, and
// the prompt's uncached tokens, with and without the server's cached count.
func TestStatsOf(t *testing.T) {
	tests := []struct {
		name string
		m    api.Metrics
		want provider.Stats
	}{
		{"cached count", api.Metrics{PromptEvalCount: 100, PromptEvalCachedCount: intPtr(60), EvalCount: 7,
			LoadDuration: 5 * time.Millisecond, PromptEvalDuration: 20 * time.Millisecond, EvalDuration: 50 * time.Millisecond, TotalDuration: 80 * time.Millisecond},
			provider.Stats{PromptTokens: 100, DecodeTokens: 7, TotalMS: 80,
				Breakdown: provider.Breakdown{LoadMS: 5, PrefillMS: 20, DecodeMS: 50, RestMS: 5, UncachedTokens: 40}}},
		{"no cached count: every prompt token uncached", api.Metrics{PromptEvalCount: 100, EvalCount: 7, TotalDuration: 1500 * time.Microsecond},
			provider.Stats{PromptTokens: 100, DecodeTokens: 7, TotalMS: 1.5, Breakdown: provider.Breakdown{RestMS: 1.5, UncachedTokens: 100}}},
		{"all cached", api.Metrics{PromptEvalCount: 100, PromptEvalCachedCount: intPtr(100)},
			provider.Stats{PromptTokens: 100}},
		{"parts over the total: no negative rest", api.Metrics{PromptEvalDuration: 3 * time.Millisecond, EvalDuration: 4 * time.Millisecond, TotalDuration: 5 * time.Millisecond},
			provider.Stats{TotalMS: 5, Breakdown: provider.Breakdown{PrefillMS: 3, DecodeMS: 4}}},
		{"cached over the prompt: no negative count", api.Metrics{PromptEvalCount: 10, PromptEvalCachedCount: intPtr(12)},
			provider.Stats{PromptTokens: 10}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := provider.StatsOf(tc.m); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestBreakdownAdd: sums add up field by field.
func TestBreakdownAdd(t *testing.T) {
	var b provider.Breakdown
	b.Add(provider.Breakdown{LoadMS: 1, PrefillMS: 2, DecodeMS: 3, RestMS: 4, UncachedTokens: 5})
	b.Add(provider.Breakdown{LoadMS: 10, PrefillMS: 20, DecodeMS: 30, RestMS: 40, UncachedTokens: 50})
	if want := (provider.Breakdown{LoadMS: 11, PrefillMS: 22, DecodeMS: 33, RestMS: 44, UncachedTokens: 55}); b != want {
		t.Errorf("got %+v, want %+v", b, want)
	}
}

// TestCall runs one model call through the real Ollama client against scripted server behaviours.
func TestCall(t *testing.T) {
	lps := []api.Logprob{
		{TokenLogprob: api.TokenLogprob{Token: "hel", Logprob: -0.1}, TopLogprobs: []api.TokenLogprob{{Token: "hel", Logprob: -0.1}, {Token: "hi", Logprob: -2.5}}},
		{TokenLogprob: api.TokenLogprob{Token: "lo", Logprob: -0.2}},
		{TokenLogprob: api.TokenLogprob{Token: " there", Logprob: -0.3}},
		{TokenLogprob: api.TokenLogprob{Token: ", council", Logprob: -0.4}},
	}
	metrics := fakeollama.Reply{Content: "hello there, council", PromptTokens: 120, CachedTokens: intPtr(100), CompletionTokens: 4,
		LoadDuration: 2 * time.Millisecond, PrefillDuration: 10 * time.Millisecond, DecodeDuration: 30 * time.Millisecond, TotalDuration: 45 * time.Millisecond}
	withLogprobs := metrics
	withLogprobs.Logprobs = lps
	tests := []struct {
		name      string
		reply     fakeollama.Reply
		stream    bool
		logprobs  bool
		max       int
		wantErr   error
		wantText  string
		wantStats provider.Stats
		wantLPs   []api.Logprob
	}{
		{name: "done, non-streaming", reply: metrics, wantText: "hello there, council",
			wantStats: provider.Stats{PromptTokens: 120, DecodeTokens: 4, TotalMS: 45,
				Breakdown: provider.Breakdown{LoadMS: 2, PrefillMS: 10, DecodeMS: 30, RestMS: 3, UncachedTokens: 20}}},
		{name: "done, streaming, no cached count", stream: true, reply: fakeollama.Reply{Content: "hello there, council", PromptTokens: 120, CompletionTokens: 4},
			wantText: "hello there, council", wantStats: provider.Stats{PromptTokens: 120, DecodeTokens: 4, Breakdown: provider.Breakdown{UncachedTokens: 120}}},
		{name: "logprobs over streamed chunks", stream: true, logprobs: true, reply: withLogprobs, wantText: "hello there, council",
			wantStats: provider.StatsOf(api.Metrics{PromptEvalCount: 120, PromptEvalCachedCount: intPtr(100), EvalCount: 4,
				LoadDuration: 2 * time.Millisecond, PromptEvalDuration: 10 * time.Millisecond, EvalDuration: 30 * time.Millisecond, TotalDuration: 45 * time.Millisecond}),
			wantLPs: lps},
		{name: "logprobs in one message", logprobs: true, reply: withLogprobs, wantText: "hello there, council",
			wantStats: provider.StatsOf(api.Metrics{PromptEvalCount: 120, PromptEvalCachedCount: intPtr(100), EvalCount: 4,
				LoadDuration: 2 * time.Millisecond, PromptEvalDuration: 10 * time.Millisecond, EvalDuration: 30 * time.Millisecond, TotalDuration: 45 * time.Millisecond}),
			wantLPs: lps},
		{name: "no done", stream: true, reply: fakeollama.Reply{Content: "partial answer", NoDone: true}, wantErr: provider.ErrNoDone, wantText: "partial answer"},
		{name: "oversize", stream: true, max: 10, reply: fakeollama.Reply{Content: strings.Repeat("x", 100)}, wantErr: provider.ErrResponseTooLarge},
		{name: "oversize in logprobs", logprobs: true, max: 30, reply: fakeollama.Reply{Content: "hi", Logprobs: lps}, wantErr: provider.ErrResponseTooLarge},
		{name: "input too long (Ollama before v0.34)", reply: fakeollama.Reply{Status: http.StatusBadRequest, Error: "the input length exceeds the context length"},
			wantErr: provider.ErrInputTooLong},
		{name: "input too long (llama-server)", reply: fakeollama.Reply{Status: http.StatusBadRequest,
			Error: `{"error":{"code":400,"message":"request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error"}}`},
			wantErr: provider.ErrInputTooLong},
		{name: "another 400", reply: fakeollama.Reply{Status: http.StatusBadRequest, Error: "invalid format"}, wantErr: api.StatusError{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeollama.New(t, tc.reply)
			u, _ := url.Parse(srv.URL)
			stream := tc.stream
			req := &api.ChatRequest{Model: "m", Stream: &stream, Logprobs: tc.logprobs, Messages: []api.Message{{Role: "user", Content: "hi"}}}
			var pieces []string
			got, err := provider.Call(context.Background(), provider.NewOllama(u, nil), req,
				provider.CallOptions{MaxResponseBytes: tc.max, OnText: func(s string) { pieces = append(pieces, s) }})
			switch want := tc.wantErr.(type) {
			case nil:
				if err != nil {
					t.Fatalf("got error %v, want none", err)
				}
			case api.StatusError:
				var se api.StatusError
				if !errors.As(err, &se) || errors.Is(err, provider.ErrInputTooLong) {
					t.Fatalf("got error %v, want the server's StatusError, not ErrInputTooLong", err)
				}
			default:
				if !errors.Is(err, want) {
					t.Fatalf("got error %v, want %v", err, want)
				}
			}
			if got.Text != tc.wantText && tc.wantText != "" {
				t.Errorf("got text %q, want %q", got.Text, tc.wantText)
			}
			if tc.wantErr == nil && strings.Join(pieces, "") != tc.wantText {
				t.Errorf("OnText got %q, want the text %q", pieces, tc.wantText)
			}
			if tc.stream && tc.wantErr == nil && len(pieces) < 2 {
				t.Errorf("OnText got %d pieces, want the stream's pieces", len(pieces))
			}
			if got.Stats != tc.wantStats {
				t.Errorf("got stats %+v, want %+v", got.Stats, tc.wantStats)
			}
			if !reflect.DeepEqual(got.Logprobs, tc.wantLPs) {
				t.Errorf("got logprobs %+v, want %+v", got.Logprobs, tc.wantLPs)
			}
			if tc.wantErr == nil && (got.Model != "m" || got.DoneReason != "stop" || got.Wall <= 0) {
				t.Errorf("got model %q, done reason %q, wall %v; want m, stop and a wall time", got.Model, got.DoneReason, got.Wall)
			}
		})
	}
}

// TestCallContext: a call whose context ends fails with the context's cause, not the transport's
// words.
func TestCallContext(t *testing.T) {
	errGone := errors.New("the client went away")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	srv := fakeollama.NewFunc(t, func(api.ChatRequest) fakeollama.Reply {
		cancel(errGone) // the request has arrived: end it while the server holds it
		return fakeollama.Reply{Hang: true}
	})
	u, _ := url.Parse(srv.URL)
	_, err := provider.Call(ctx, provider.NewOllama(u, nil), &api.ChatRequest{Model: "m"}, provider.CallOptions{})
	if !errors.Is(err, errGone) {
		t.Errorf("got %v, want the context's cause %v", err, errGone)
	}
}

// TestCallInputTooLongOpenAI: an OpenAI-compatible server's context_length_exceeded is the same
// sentinel; another 400 is not.
func TestCallInputTooLongOpenAI(t *testing.T) {
	tests := []struct {
		name string
		code string
		want bool
	}{
		{"context_length_exceeded", "context_length_exceeded", true},
		{"another 400", "invalid_value", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := fakeopenai.New(t, fakeopenai.Reply{Status: http.StatusBadRequest, Error: "too long", ErrorType: "invalid_request_error", ErrorCode: tc.code})
			_, err := provider.Call(context.Background(), provider.NewOpenAI(fake.BaseURL(), "", nil), &api.ChatRequest{Model: "m"}, provider.CallOptions{})
			var ae *provider.APIError
			if got := errors.Is(err, provider.ErrInputTooLong); got != tc.want || !errors.As(err, &ae) {
				t.Errorf("got %v, want ErrInputTooLong %v beside the server's *APIError", err, tc.want)
			}
		})
	}
}
