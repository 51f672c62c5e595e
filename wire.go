package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/config"
	"toolrouter/council"
	"toolrouter/provider"
	"toolrouter/router"
	"toolrouter/server"
)

// models builds one client per configured provider, then the router's model, the readiness probe
// and the council (nil when none is configured).
func models(cfg config.Config, logger *slog.Logger) (router.Chatter, server.ModelProbe, *council.Council, error) {
	hc := &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}}
	clients := map[string]provider.Chatter{}
	var probe server.ModelProbe
	for name := range cfg.Providers {
		p, _ := cfg.Provider(name)
		switch p.Type {
		case config.ProviderOllama:
			u, err := url.Parse(p.BaseURL)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("providers.%s.base_url: %w", name, err)
			}
			o := provider.NewOllama(u, hc)
			clients[name] = o
			if name == cfg.Router.Provider {
				probe = o
			}
		case config.ProviderOpenAI:
			clients[name] = provider.NewOpenAI(p.BaseURL, os.Getenv(p.APIKeyEnv), hc)
		}
	}
	if probe == nil {
		probe = unprobed{provider: cfg.Router.Provider, model: cfg.Ollama.Model}
	}
	if !cfg.Council.Enabled() {
		return clients[cfg.Router.Provider], probe, nil, nil
	}
	member := func(m config.Member) council.Member {
		return council.Member{
			Name: m.Name, ModelID: m.Model, Timeout: m.Timeout.D(),
			Model: provider.ChatModel{Client: clients[m.Provider], Model: m.Model, Options: m.Options},
			Price: council.Price{PromptPerMTok: m.PricePromptPerMTok, CompletionPerMTok: m.PriceCompletionPerMTok},
		}
	}
	members := make([]council.Member, 0, len(cfg.Council.Members))
	for _, m := range cfg.Council.Members {
		members = append(members, member(m))
	}
	c := council.New(members, member(cfg.Council.Chairman), council.Options{
		PeerReview: cfg.Council.PeerReview, Quorum: cfg.Council.Quorum,
		StageTimeout: cfg.Council.StageTimeout.D(), MaxEvidenceBytes: cfg.Council.MaxEvidenceBytes, Logger: logger,
	})
	return clients[cfg.Router.Provider], probe, c, nil
}

// unprobed stands in for the readiness probe of a router model behind an OpenAI-compatible
// endpoint, which has no portable "is this model loaded" call: it reports the model present.
type unprobed struct{ provider, model string }

func (u unprobed) List(context.Context) (*api.ListResponse, error) {
	return &api.ListResponse{Models: []api.ListModelResponse{{Name: u.model, Model: u.model}}}, nil
}
