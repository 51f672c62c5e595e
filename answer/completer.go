package answer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/prefill"
	"toolrouter/provider"
)

// Provider is one configured model provider a chat completion may name.
type Provider struct {
	Client provider.Chatter
	// Show, if not nil, asks the provider about one model before a request is routed (an Ollama
	// server's /api/show); nil: its names are taken as they are.
	Show ModelShower
	// Ollama marks a provider speaking Ollama's protocol: it is sent num_ctx and keep_alive, and
	// never a conversation cut to its window.
	Ollama bool
}

// ModelShower asks an Ollama server about one model (/api/show); *api.Client satisfies it.
type ModelShower interface {
	Show(ctx context.Context, req *api.ShowRequest) (*api.ShowResponse, error)
}

// CompleterOptions configure NewCompleter.
type CompleterOptions struct {
	// Providers by name; Fallback is the router's, which answers a name without a provider.
	Providers map[string]Provider
	Fallback  string
	// NumCtx is the context window an Ollama model is loaded with when the request does not say
	// (the router's num_ctx); KeepAlive is ollama.keep_alive; MaxResponseBytes bounds an answer
	// (ollama.max_response_bytes).
	NumCtx           int
	KeepAlive        time.Duration
	MaxResponseBytes int
	// Prefill is router.prefill for the Ollama providers: a response_format whose schema fixes the
	// answer's text but for its values is answered value by value (see prefill.go).
	// ProbeTimeout bounds the probe of a model's template (0: 2 minutes).
	Prefill      bool
	ProbeTimeout time.Duration
}

// ProviderCompleter makes the model calls of chat completions over the configured providers. A
// model named "PROVIDER/MODEL", where PROVIDER is a configured provider, is MODEL at that
// provider; any other name (slashes included, as in "hf.co/org/model") is a model of the
// fallback provider.
type ProviderCompleter struct {
	o CompleterOptions
	// now is the clock of Check's cache.
	now   func() time.Time
	mu    sync.Mutex           // guards found, templates and their thinks
	found map[string]time.Time // "PROVIDER/MODEL" an Ollama provider has: until when that is trusted
	// templates are what is known of continuing answers, by provider, model and think unset.
	templates map[string]*templateState
}

// modelFoundTTL is how long an Ollama provider's answer that it has a model is trusted. Only
// "found" is kept: a model pulled after a 404 is found on the next request.
const modelFoundTTL = time.Minute

// NewCompleter returns the completer over o's providers.
func NewCompleter(o CompleterOptions) *ProviderCompleter {
	return &ProviderCompleter{o: o, now: time.Now, found: map[string]time.Time{}, templates: map[string]*templateState{}}
}

// Check says whether a model name can answer, before the request is routed, so that no tool runs
// for a request that ends in model_not_found. The name is resolved as Complete resolves it; a
// provider that is not configured is unknown. An Ollama provider is asked (/api/show) for any
// name, configured or not, since it serves whatever it has pulled; its "found" is cached for
// modelFoundTTL. An OpenAI-compatible provider's names are taken as they are: it has no portable
// question for one model, and its 404 at the completion is model_not_found too.
func (c *ProviderCompleter) Check(ctx context.Context, name string) error {
	p, model := c.resolve(name)
	if c.o.Providers[p].Client == nil {
		return fmt.Errorf("model %s: %w: no provider %q", name, ErrUnknownModel, p)
	}
	show := c.o.Providers[p].Show
	if show == nil {
		return nil
	}
	key := p + "/" + model
	c.mu.Lock()
	until, ok := c.found[key]
	c.mu.Unlock()
	if ok && c.now().Before(until) {
		return nil
	}
	if _, err := show.Show(ctx, &api.ShowRequest{Model: model}); err != nil {
		if notFound(err) {
			return fmt.Errorf("model %s: %w: %w", name, ErrUnknownModel, err)
		}
		return fmt.Errorf("asking %s for model %s: %w", p, model, err)
	}
	c.mu.Lock()
	c.found[key] = c.now().Add(modelFoundTTL)
	c.mu.Unlock()
	return nil
}

// resolve names the provider and the model a completion's model name stands for.
func (c *ProviderCompleter) resolve(name string) (string, string) {
	if p, m, ok := strings.Cut(name, "/"); ok && m != "" {
		if _, known := c.o.Providers[p]; known {
			return p, m
		}
	}
	return c.o.Fallback, name
}

// Complete streams the answer from the model, passing its text and thinking on as they come, and
// bounds its size (ollama.max_response_bytes). The request's format and think go to the model as
// Ollama's format and think (an OpenAI-compatible provider translates them). Its deadline is the
// request's (http.request_timeout).
func (c *ProviderCompleter) Complete(ctx context.Context, req CompletionRequest, onDelta func(Delta)) (Completion, error) {
	name, model := c.resolve(req.Model)
	client := c.o.Providers[name].Client
	if client == nil {
		return Completion{}, fmt.Errorf("model %s: %w: no provider %q", req.Model, ErrUnknownModel, name)
	}
	stream := true
	creq := &api.ChatRequest{Model: model, Messages: req.Messages, Tools: req.Tools, Stream: &stream, Options: maps.Clone(req.Options),
		Format: req.Format, Think: req.Think}
	if creq.Options == nil {
		creq.Options = map[string]any{}
	}
	if c.o.Providers[name].Ollama {
		if _, ok := creq.Options["num_ctx"]; !ok && c.o.NumCtx > 0 {
			creq.Options["num_ctx"] = c.o.NumCtx
		}
		// A conversation over the window is an error, never silently cut.
		off := false
		creq.Truncate, creq.Shift = &off, &off
		if req.KeepAlive != nil {
			creq.KeepAlive = &api.Duration{Duration: req.KeepAlive.Duration}
		} else if c.o.KeepAlive != 0 {
			creq.KeepAlive = &api.Duration{Duration: c.o.KeepAlive}
		}
	}
	o := provider.CallOptions{MaxResponseBytes: c.o.MaxResponseBytes}
	if onDelta != nil {
		o.OnText = func(s string) { onDelta(Delta{Text: s}) }
		o.OnThinking = func(s string) { onDelta(Delta{Thinking: s}) }
	}
	a, err := c.call(ctx, name, client, creq, o)
	out := Completion{Text: a.Text, Thinking: a.Thinking, ToolCalls: a.ToolCalls, FinishReason: finishReason(a.DoneReason), Stats: a.Stats}
	switch {
	case err != nil && notFound(err):
		return out, fmt.Errorf("model %s: %w: %w", req.Model, ErrUnknownModel, err)
	case err != nil:
		return out, fmt.Errorf("model %s: %w", req.Model, err)
	}
	return out, nil
}

// call makes the model call of a completion: continued value by value when prefill applies
// (continuedValues), else whole. A continuation the server does not follow before any of it was
// sent turns prefill off for that model and is answered whole, its calls' costs added.
func (c *ProviderCompleter) call(ctx context.Context, p string, client provider.Chatter, req *api.ChatRequest, o provider.CallOptions) (provider.Answer, error) {
	values, ok := c.continuedValues(p, req)
	if !ok {
		return provider.Call(ctx, client, req, o)
	}
	lead, ok := c.lead(ctx, p, req)
	if !ok {
		return provider.Call(ctx, client, req, o)
	}
	a, err := completeContinued(ctx, client, req, lead, values, o)
	if !errors.Is(err, prefill.ErrNotContinued) || errors.Is(err, errStreamed) || ctx.Err() != nil {
		return a, err
	}
	c.template(p, req.Model, req.Think == nil).Stop()
	whole, err := provider.Call(ctx, client, req, o)
	whole.Stats.TotalMS += a.Stats.TotalMS
	whole.Stats.Breakdown.Add(a.Stats.Breakdown)
	whole.Wall += a.Wall
	return whole, err
}

// finishReason is OpenAI's finish_reason for a provider's done reason.
func finishReason(done string) string {
	switch done {
	case "length", "tool_calls", "content_filter":
		return done
	}
	return "stop"
}

// notFound reports whether a provider answered 404: the model is not there.
func notFound(err error) bool {
	var se api.StatusError
	var ae *provider.APIError
	return errors.As(err, &se) && se.StatusCode == http.StatusNotFound ||
		errors.As(err, &ae) && ae.StatusCode == http.StatusNotFound
}
