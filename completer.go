package main

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

	"toolrouter/config"
	"toolrouter/provider"
	"toolrouter/router"
	"toolrouter/server"
)

// completer makes the model calls of POST /v1/chat/completions over the configured providers. A
// model named "PROVIDER/MODEL", where PROVIDER is a key of providers, is MODEL at that provider;
// any other name (slashes included, as in "hf.co/org/model") is a model of the router's provider.
type completer struct {
	clients  map[string]provider.Chatter
	ollama   map[string]bool // providers speaking Ollama's protocol: sent num_ctx and keep_alive
	fallback string          // the router's provider
	// numCtx is the context window an Ollama model is loaded with when the request does not say
	// (the router's ollama.options num_ctx); keepAlive is ollama.keep_alive.
	numCtx      int
	keepAlive   time.Duration
	maxResponse int // ollama.max_response_bytes

	// shows asks each Ollama provider about one model (Check); now is the clock of its cache.
	shows map[string]modelShower
	now   func() time.Time
	mu    sync.Mutex           // guards found
	found map[string]time.Time // "PROVIDER/MODEL" an Ollama provider has: until when that is trusted
}

// modelShower asks an Ollama server about one model (/api/show); *api.Client satisfies it.
type modelShower interface {
	Show(ctx context.Context, req *api.ShowRequest) (*api.ShowResponse, error)
}

// modelFoundTTL is how long an Ollama provider's answer that it has a model is trusted. Only
// "found" is kept: a model pulled after a 404 is found on the next request.
const modelFoundTTL = time.Minute

// newCompleter returns the completer over clients; shows holds an Ollama client for each provider
// of type ollama, to check models before a request is routed (nil: none is checked).
func newCompleter(cfg config.Config, clients map[string]provider.Chatter, shows map[string]modelShower) *completer {
	c := &completer{clients: clients, ollama: map[string]bool{}, fallback: cfg.Router.Provider,
		numCtx: router.NumCtx(cfg.Ollama.Options), keepAlive: cfg.Ollama.KeepAlive.D(), maxResponse: cfg.Ollama.MaxResponseBytes,
		shows: shows, now: time.Now, found: map[string]time.Time{}}
	for name := range clients {
		if p, _ := cfg.Provider(name); p.Type == config.ProviderOllama {
			c.ollama[name] = true
		}
	}
	return c
}

// Check says whether a model name can answer, before the request is routed, so that no tool runs
// for a request that ends in model_not_found. The name is resolved as Complete resolves it; a
// provider that is not configured is unknown. An Ollama provider is asked (/api/show) for any
// name, configured or not, since it serves whatever it has pulled; its "found" is cached for
// modelFoundTTL. An OpenAI-compatible provider's names are taken as they are: it has no portable
// question for one model, and its 404 at the completion is model_not_found too.
func (c *completer) Check(ctx context.Context, name string) error {
	p, model := c.resolve(name)
	if c.clients[p] == nil {
		return fmt.Errorf("model %s: %w: no provider %q", name, server.ErrUnknownModel, p)
	}
	show := c.shows[p]
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
			return fmt.Errorf("model %s: %w: %w", name, server.ErrUnknownModel, err)
		}
		return fmt.Errorf("asking %s for model %s: %w", p, model, err)
	}
	c.mu.Lock()
	c.found[key] = c.now().Add(modelFoundTTL)
	c.mu.Unlock()
	return nil
}

// resolve names the provider and the model a completion's model name stands for.
func (c *completer) resolve(name string) (string, string) {
	if p, m, ok := strings.Cut(name, "/"); ok && m != "" {
		if _, known := c.clients[p]; known {
			return p, m
		}
	}
	return c.fallback, name
}

// Complete streams the answer from the model, passing its text and thinking on as they come, and
// bounds its size (ollama.max_response_bytes). The request's format and think go to the model as
// Ollama's format and think (an OpenAI-compatible provider translates them). Its deadline is the
// request's (http.request_timeout).
func (c *completer) Complete(ctx context.Context, req server.CompletionRequest, onDelta func(server.Delta)) (server.Completion, error) {
	name, model := c.resolve(req.Model)
	client := c.clients[name]
	if client == nil {
		return server.Completion{}, fmt.Errorf("model %s: %w: no provider %q", req.Model, server.ErrUnknownModel, name)
	}
	stream := true
	creq := &api.ChatRequest{Model: model, Messages: req.Messages, Tools: req.Tools, Stream: &stream, Options: maps.Clone(req.Options),
		Format: req.Format, Think: req.Think}
	if creq.Options == nil {
		creq.Options = map[string]any{}
	}
	if c.ollama[name] {
		if _, ok := creq.Options["num_ctx"]; !ok && c.numCtx > 0 {
			creq.Options["num_ctx"] = c.numCtx
		}
		// A conversation over the window is an error, never silently cut.
		off := false
		creq.Truncate, creq.Shift = &off, &off
		if c.keepAlive != 0 {
			creq.KeepAlive = &api.Duration{Duration: c.keepAlive}
		}
	}
	o := provider.CallOptions{MaxResponseBytes: c.maxResponse}
	if onDelta != nil {
		o.OnText = func(s string) { onDelta(server.Delta{Text: s}) }
		o.OnThinking = func(s string) { onDelta(server.Delta{Thinking: s}) }
	}
	a, err := provider.Call(ctx, client, creq, o)
	out := server.Completion{Text: a.Text, Thinking: a.Thinking, ToolCalls: a.ToolCalls, FinishReason: finishReason(a.DoneReason), Stats: a.Stats}
	switch {
	case err != nil && notFound(err):
		return out, fmt.Errorf("model %s: %w: %w", req.Model, server.ErrUnknownModel, err)
	case err != nil:
		return out, fmt.Errorf("model %s: %w", req.Model, err)
	}
	return out, nil
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

// chatModels are the configured models GET /v1/models lists, named as completions take them: the
// router's model, then the council's members and chairman.
func chatModels(cfg config.Config) []server.ModelInfo {
	named := func(p, m string) server.ModelInfo {
		if p == cfg.Router.Provider {
			return server.ModelInfo{ID: m, OwnedBy: p}
		}
		return server.ModelInfo{ID: p + "/" + m, OwnedBy: p}
	}
	out := []server.ModelInfo{named(cfg.Router.Provider, cfg.Ollama.Model)}
	if cfg.Council.Enabled() {
		for _, m := range append(cfg.Council.Members, cfg.Council.Chairman) {
			if m.Model != "" {
				out = append(out, named(m.Provider, m.Model))
			}
		}
	}
	return out
}
