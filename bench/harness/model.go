package harness

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/bench/report"
	"toolrouter/config"
	"toolrouter/router"
)

// NativeReady says whether the router's native mode (Ollama's own tool calling) is benchmarked;
// set it to false to list the native rows as not available (before the router had the mode, it
// was the one line to flip).
const NativeReady = true

// nativeSettings returns the settings of the native router, and whether it exists yet.
func nativeSettings(s router.Settings) (router.Settings, bool) {
	s.Mode = router.Native
	return s, NativeReady
}

// Settings returns the router settings the benchmark uses for a model: the sidecar's built-in
// defaults (config.Default), so the rows measure the router as shipped.
func Settings(model string) router.Settings {
	d := config.Default()
	return router.Settings{
		Model:            model,
		KeepAlive:        d.Ollama.KeepAlive.D(),
		Options:          d.Ollama.Options,
		CallTimeout:      d.Ollama.Timeout.D(),
		SelectTimeout:    d.Router.SelectTimeout.D(),
		ArgumentsTimeout: d.Router.ArgumentsTimeout.D(),
		ExecuteTimeout:   d.Router.ExecuteTimeout.D(),
		RepairAttempts:   d.Router.RepairAttempts,
		OnModelFailure:   router.FailureMode(d.Router.OnModelFailure),
		Prefill:          d.PrefillOn(),
		Renders:          true, // the benchmark's model server is Ollama
	}
}

// Client returns an Ollama client for base with a keep-alive transport like the sidecar's.
func Client(base string) (*api.Client, error) {
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("model server URL %q: want http://host:port", base)
	}
	return api.NewClient(u, &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}}), nil
}

// Prober is what the model-server probe needs; *api.Client satisfies it.
type Prober interface {
	List(ctx context.Context) (*api.ListResponse, error)
	Chat(ctx context.Context, req *api.ChatRequest, fn api.ChatResponseFunc) error
}

// ProbeTimeouts bound the probe's two steps. Chat covers loading the model into memory, which on
// a CPU-only host takes tens of seconds.
type ProbeTimeouts struct {
	List, Chat time.Duration
	// NumCtx, when above 0, is the test chat's num_ctx: the window the run loads the model with,
	// so that a shared server does not load it twice (0: the server's default).
	NumCtx int
}

// Probe says whether the model can be measured: the server lists the model, and then one tiny
// chat with that model succeeds (a server that lists its models can still fail every chat: out
// of memory, a broken model file). It returns "" when both succeed, else the reason the model
// rows are skipped.
func Probe(ctx context.Context, p Prober, base, model string, to ProbeTimeouts) string {
	lctx, cancel := context.WithTimeout(ctx, to.List)
	list, err := p.List(lctx)
	cancel()
	if err != nil {
		return "no model server at " + base
	}
	listed := false
	for _, m := range list.Models {
		listed = listed || m.Name == model || m.Model == model || m.Name == model+":latest"
	}
	if !listed {
		return fmt.Sprintf("model %s is not pulled at %s (ollama pull %s)", model, base, model)
	}
	cctx, cancel := context.WithTimeout(ctx, to.Chat)
	defer cancel()
	stream := false
	req := &api.ChatRequest{
		Model:    model,
		Messages: []api.Message{{Role: "user", Content: "Reply with the single word: ready"}},
		Stream:   &stream,
		Options:  map[string]any{"num_predict": 8, "temperature": 0},
	}
	if to.NumCtx > 0 {
		req.Options["num_ctx"] = to.NumCtx
	}
	done := false
	err = p.Chat(cctx, req, func(r api.ChatResponse) error {
		done = done || r.Done
		return nil
	})
	switch {
	case err != nil:
		return fmt.Sprintf("model %s at %s failed a test chat: %v", model, base, err)
	case !done:
		return fmt.Sprintf("model %s at %s did not finish a test chat", model, base)
	}
	return ""
}

// PlumbingNote describes the fake model's rows wherever they are shown.
const PlumbingNote = "The fake model answers a request's first selection (or native tool-call turn) with the first " +
	"tool it is offered and any later one with no tool, and writes the smallest arguments the schema allows; it reads " +
	"no label. These rows check that queries, tools, MCP calls and handlers are wired; they measure no model."

// RandomWeightsNote describes a random-weight model's rows wherever they are shown.
const RandomWeightsNote = report.RandomWeightsLabel + ": the model's weights are random (scripts/real-ollama's tiny " +
	"models), so its answers mean nothing. These rows check that cases reach the model and the tools and that usage is " +
	"counted (shape, model calls, prompt tokens); they measure no model."
