package council_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"

	"toolrouter/config"
	"toolrouter/council"
	"toolrouter/provider"
)

// Example shows the wiring from configuration: one client per provider, a ChatModel per member,
// the council, and one run with the router's tool calls as evidence.
func Example() {
	cfg, err := config.Load("", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	hc := &http.Client{}
	clients := map[string]provider.Chatter{}
	for name := range cfg.Providers {
		p, _ := cfg.Provider(name) // base URL resolved: "ollama" follows ollama.host
		switch p.Type {
		case config.ProviderOllama:
			u, err := url.Parse(p.BaseURL)
			if err != nil {
				fmt.Println(err)
				return
			}
			clients[name] = provider.NewOllama(u, hc)
		case config.ProviderOpenAI:
			clients[name] = provider.NewOpenAI(p.BaseURL, os.Getenv(p.APIKeyEnv), hc)
		}
	}
	_ = clients[cfg.Router.Provider] // the router's Chatter: router.New(clients[cfg.Router.Provider], …)

	member := func(m config.Member) council.Member {
		return council.Member{
			Name: m.Name, ModelID: m.Model, Timeout: m.Timeout.D(),
			Model: provider.ChatModel{Client: clients[m.Provider], Model: m.Model, Options: m.Options},
			Price: council.Price{PromptPerMTok: m.PricePromptPerMTok, CompletionPerMTok: m.PriceCompletionPerMTok},
		}
	}
	if !cfg.Council.Enabled() {
		fmt.Println("no council configured")
		return
	}
	var members []council.Member
	for _, m := range cfg.Council.Members {
		members = append(members, member(m))
	}
	c := council.New(members, member(cfg.Council.Chairman), council.Options{
		PeerReview: cfg.Council.PeerReview, Quorum: cfg.Council.Quorum,
		StageTimeout: cfg.Council.StageTimeout.D(), Logger: slog.Default(),
	})

	// Evidence comes from the router's outcome: one entry per call, Text from result.text,
	// IsError from result.is_error, Error from error.message when the call failed.
	res, err := c.Run(context.Background(), council.Input{
		Query:    "What is 17*23+4^2, and is that a prime?",
		Evidence: []council.Evidence{{Server: "calculator", Tool: "evaluate", Arguments: map[string]any{"expression": "17*23+4^2"}, Text: "407"}},
	}, func(e council.Event) { fmt.Println(e.Type) })
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.AnsweredBy, res.Final)
	// Output: no council configured
}
