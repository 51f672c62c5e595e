package router_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"toolrouter/internal/fakeollama"
	"toolrouter/provider"
	"toolrouter/router"
)

// phase1Estimate routes once with a roomy window and returns the phase-1 prompt's estimate.
func phase1Estimate(t *testing.T) int {
	t.Helper()
	e := newEnv(t, router.Settings{}, sel("none", false))
	out, err := e.router.Route(context.Background(), router.Request{Query: "hello there"})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Trace) == 0 || out.Trace[0].EstimatedTokens <= 0 {
		t.Fatalf("got trace %+v, want a select step with its estimate", out.Trace)
	}
	return out.Trace[0].EstimatedTokens
}

func TestPromptOverWindowIsNeverSent(t *testing.T) {
	inventory := phase1Estimate(t)
	history := []router.Message{{Role: "user", Content: strings.Repeat("an earlier question ", 100)},
		{Role: "assistant", Content: strings.Repeat("an earlier answer ", 100)}}
	tests := []struct {
		name     string
		mode     router.FailureMode
		history  []router.Message
		numCtx   int
		wantSent bool
	}{
		// The inventory alone is over the window: nothing can be cut, nothing is sent.
		{name: "inventory over", mode: router.NoTool, numCtx: inventory/2 + 100},
		{name: "inventory over, fail mode", mode: router.Fail, numCtx: inventory/2 + 100},
		// The history is cut first: the prompt then fits and is sent.
		{name: "history cut", mode: router.NoTool, history: history, numCtx: inventory + 100 + 64, wantSent: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, router.Settings{OnModelFailure: tc.mode, ContextReserve: 100,
				Options: map[string]any{"num_ctx": tc.numCtx}}, sel("none", false))
			out, err := e.router.Route(context.Background(), router.Request{Query: "hello there", History: tc.history})
			if err != nil {
				t.Fatalf("Route: %v, want no error (an over-window prompt is not a model failure)", err)
			}
			sent := len(e.model.Requests())
			if tc.wantSent {
				if sent != 1 || out.DegradedReason != "" || !out.Trimmed {
					t.Fatalf("got %d requests, degraded %q, trimmed %v; want 1 request after the history was cut", sent, out.Degraded, out.Trimmed)
				}
				if msgs := e.model.Requests()[0].Messages; len(msgs) != 2 {
					t.Errorf("got %d messages sent, want 2 (system and query; history dropped)", len(msgs))
				}
				return
			}
			if sent != 0 {
				t.Fatalf("got %d model requests, want none: the prompt is over the window", sent)
			}
			if out.DegradedReason != router.DegradedPromptOverSize || out.Stopped != router.StopPromptOverWindow || out.UseTool {
				t.Errorf("got reason %q stopped %q use_tool %v, want prompt_over_window", out.DegradedReason, out.Stopped, out.UseTool)
			}
			if !strings.Contains(out.Degraded, "tokens does not fit") {
				t.Errorf("got degraded %q, want the sizes", out.Degraded)
			}
		})
	}
}

// TestServerOverflowIsOverWindow: with truncation off, Ollama answers an over-long prompt with 400
// "the input length exceeds the context length"; that is the same degraded reason.
func TestServerOverflowIsOverWindow(t *testing.T) {
	e := newEnv(t, router.Settings{}, fakeollama.Reply{Status: http.StatusBadRequest, Error: "the input length exceeds the context length"})
	out, err := e.router.Route(context.Background(), router.Request{Query: "hello there"})
	if err != nil {
		t.Fatal(err)
	}
	if out.DegradedReason != router.DegradedPromptOverSize {
		t.Errorf("got degraded %q (%s), want prompt_over_window", out.DegradedReason, out.Degraded)
	}
}

// TestRequestCarriesIntent: every call says think false, truncate false, shift false and num_ctx,
// even when the options set none (Ollama's own default num_ctx differs between versions).
func TestRequestCarriesIntent(t *testing.T) {
	for _, mode := range []router.Mode{router.TwoPhase, router.Native} {
		t.Run(string(mode), func(t *testing.T) {
			e := newEnv(t, router.Settings{Mode: mode}, sel("none", false))
			if _, err := e.router.Route(context.Background(), router.Request{Query: "hello there"}); err != nil {
				t.Fatal(err)
			}
			req := e.model.Requests()[0]
			if req.Think == nil || req.Think.Bool() {
				t.Errorf("got think %v, want false", req.Think)
			}
			if req.Truncate == nil || *req.Truncate || req.Shift == nil || *req.Shift {
				t.Errorf("got truncate %v shift %v, want both false", req.Truncate, req.Shift)
			}
			if n, ok := req.Options["num_ctx"].(float64); !ok || n <= 0 {
				t.Errorf("got num_ctx %v, want it sent", req.Options["num_ctx"])
			}
		})
	}
}

// TestNumCtxCappedAtTrainedLength: through the production Ollama client, the router learns the
// model's trained context length from /api/show and never asks for a larger num_ctx; a smaller
// configured one stays, and a model whose length is not known keeps the configured one.
func TestNumCtxCappedAtTrainedLength(t *testing.T) {
	tests := []struct {
		name       string
		trained    int // what /api/show reports; 0: no context length in model_info
		configured int
		want       float64
	}{
		{"configured over the trained length", 4096, 32768, 4096},
		{"configured under it", 131072, 8192, 8192},
		{"length unknown", 0, 32768, 32768},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			model := fakeollama.New(t, sel("none", false), sel("none", false))
			model.ContextLength = tc.trained
			e := newEnvWith(t, router.Settings{}, model)
			u, _ := url.Parse(model.URL)
			rt := router.New(provider.NewOllama(u, model.Server.Client()), e.inv, e.inv,
				router.Settings{Model: "fake", Options: map[string]any{"num_ctx": tc.configured}}, quiet)
			for range 2 {
				if _, err := rt.Route(context.Background(), router.Request{Query: "hello there"}); err != nil {
					t.Fatal(err)
				}
			}
			for i, req := range model.Requests() {
				if got := req.Options["num_ctx"]; got != tc.want {
					t.Errorf("request %d: got num_ctx %v, want %v", i+1, got, tc.want)
				}
			}
			if got := model.Shown(); len(got) != 1 || got[0] != "fake" {
				t.Errorf("got /api/show asked about %q, want once about fake", got)
			}
		})
	}
}

// TestSharedPrefix: phase 2 opens with phase 1's system prompt when asked to, so the model
// server's cache keeps the inventory's prefill between the phases.
func TestSharedPrefix(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(map[bool]string{false: "own", true: "shared"}[shared], func(t *testing.T) {
			e := newEnv(t, router.Settings{SharedPrefix: shared}, sel("calculator.add", true), args(`{"a": 1, "b": 2}`))
			if _, err := e.router.Route(context.Background(), router.Request{Query: "add 1 and 2"}); err != nil {
				t.Fatal(err)
			}
			reqs := e.model.Requests()
			p1, p2 := reqs[0].Messages, reqs[1].Messages
			gotShared := p2[0].Role == "system" && p2[0].Content == p1[0].Content
			if gotShared != shared {
				t.Errorf("got phase 2 opening with phase 1's system prompt = %v, want %v", gotShared, shared)
			}
			if last := p2[len(p2)-1]; last.Role != "user" || !strings.Contains(last.Content, "Tool: calculator.add") {
				t.Errorf("phase 2's last message is not the arguments prompt: %+v", last)
			}
		})
	}
}
