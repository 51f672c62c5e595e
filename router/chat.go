package router

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/provider"
	"toolrouter/tokens"
)

// reply is one model answer.
type reply struct {
	Text      string
	ToolCalls []api.ToolCall
	// Logprobs are the answer tokens' log probabilities, when complete was asked for them.
	Logprobs []api.Logprob
	// Stats are the call's tokens and server-side times; Duration its wall time.
	Stats    provider.Stats
	Duration time.Duration
	// Estimated is the prompt's estimated tokens; Exceeded says the server counted more (or cut it).
	Estimated int
	Exceeded  bool
	// Calls is the number of model calls the answer took when it is a continued one (prefill.go),
	// whose figures above are their sums; 0 for one call.
	Calls int
	// DoneReason is the server's ("stop", "length", …).
	DoneReason string
}

// chatRequest is a chat request with the values of its pointer fields: stream, truncate and
// shift false, think as configured.
type chatRequest struct {
	req         api.ChatRequest
	stream, off bool
	think       api.ThinkValue
}

// ContextLengther is implemented by model clients that can tell a model's trained context length
// (Ollama's /api/show); the router then never asks for a larger num_ctx.
type ContextLengther interface {
	ContextLength(ctx context.Context, model string) (int, error)
}

// complete sends one non-streaming chat request (format-constrained, or with tools in native mode)
// whose prompt was estimated as est, and returns the answer; topLogprobs > 0 asks for the answer
// tokens' log probabilities with that many alternatives each (0: none). Each call is bounded by
// CallTimeout, and each answer by MaxResponseBytes: past it the call stops reading and fails
// (provider.ErrResponseTooLarge), a model failure. Thinking is off unless configured, and the
// server may neither truncate nor shift the prompt: an overflow is an explicit error
// (*OverWindowError), never a silently cut prompt.
func (r *Router) complete(ctx context.Context, msgs []api.Message, format []byte, tools api.Tools, est tokens.Estimate, topLogprobs int) (reply, error) {
	return r.completeWith(ctx, msgs, format, tools, est, topLogprobs, nil)
}

// completeWith is complete with model options set over the configured ones for this call only
// (a continuation's num_predict and stop).
func (r *Router) completeWith(ctx context.Context, msgs []api.Message, format []byte, tools api.Tools, est tokens.Estimate, topLogprobs int, set map[string]any) (reply, error) {
	if r.set.CallTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.set.CallTimeout)
		defer cancel()
	}
	// The request and the values its pointer fields point at are one allocation.
	cr := &chatRequest{think: api.ThinkValue{Value: r.set.Think}}
	req := &cr.req
	*req = api.ChatRequest{
		Model:    r.set.Model,
		Messages: msgs,
		Stream:   &cr.stream,
		Format:   format,
		Tools:    tools,
		Options:  *r.options.Load(),
		Think:    &cr.think,
		Truncate: &cr.off,
		Shift:    &cr.off,
	}
	if len(set) > 0 {
		req.Options = maps.Clone(req.Options)
		maps.Copy(req.Options, set)
	}
	if topLogprobs > 0 {
		req.Logprobs, req.TopLogprobs = true, topLogprobs
	}
	if r.set.KeepAlive != 0 {
		req.KeepAlive = &api.Duration{Duration: r.set.KeepAlive}
	}
	a, err := provider.Call(ctx, r.chat, req, provider.CallOptions{MaxResponseBytes: r.set.MaxResponseBytes})
	out := reply{Text: a.Text, ToolCalls: a.ToolCalls, Logprobs: a.Logprobs, Stats: a.Stats, Duration: a.Wall, Estimated: est.Tokens,
		DoneReason: a.DoneReason}
	switch {
	case errors.Is(err, provider.ErrInputTooLong):
		r.est.Observe(r.set.Model, est, est.Tokens+1, true)
		w := r.window()
		return out, &OverWindowError{What: "prompt", Estimated: est.Tokens, Limit: w.limit, NumCtx: w.numCtx}
	case err != nil:
		return out, fmt.Errorf("model %s: %w", r.set.Model, err)
	}
	out.Exceeded = r.est.Observe(r.set.Model, est, a.Stats.PromptTokens, a.Stats.PromptTokens >= NumCtx(req.Options))
	return out, nil
}

// contextLength is the num_ctx sent with every call: the configured one, capped at the model's
// trained length once the model client has told it.
func (r *Router) contextLength() int { return NumCtx(*r.options.Load()) }

// learnContextLength asks the model client, at most once a minute until it answers, for the
// model's trained context length, and lowers num_ctx to it when the configured one is larger.
func (r *Router) learnContextLength(ctx context.Context) {
	cl, ok := r.chat.(ContextLengther)
	if !ok || r.trained.Load() != 0 {
		return
	}
	now := time.Now().UnixNano()
	last := r.askedTrained.Load()
	if last != 0 && time.Duration(now-last) < time.Minute || !r.askedTrained.CompareAndSwap(last, now) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	n, err := cl.ContextLength(ctx, r.set.Model)
	if err != nil || n <= 0 {
		r.log.Debug("model context length unknown", "model", r.set.Model, "err", err)
		return
	}
	r.trained.Store(int64(n))
	if cur := r.contextLength(); cur > n {
		opts := maps.Clone(*r.options.Load())
		opts["num_ctx"] = n
		r.options.Store(&opts)
		r.log.Info("num_ctx capped at the model's trained context length", "model", r.set.Model, "configured", cur, "trained", n)
	}
}
