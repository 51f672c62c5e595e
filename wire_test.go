package main

import (
	"strings"
	"testing"

	"toolrouter/config"
)

func TestChatModels(t *testing.T) {
	cfg := config.Default()
	cfg.Providers["remote"] = config.Provider{Type: config.ProviderOpenAI, BaseURL: "http://127.0.0.1:1/v1"}
	cfg.Council.Members = []config.Member{{Name: "a", Provider: "ollama", Model: "llama3.1:8b"}, {Name: "b", Provider: "remote", Model: "gpt-4o-mini"}}
	cfg.Council.Chairman = config.Member{Name: "chair", Provider: "remote", Model: "gpt-4o"}
	var got []string
	for _, m := range chatModels(cfg) {
		got = append(got, m.ID+"@"+m.OwnedBy)
	}
	want := "qwen2.5:7b@ollama,llama3.1:8b@ollama,remote/gpt-4o-mini@remote,remote/gpt-4o@remote"
	if strings.Join(got, ",") != want {
		t.Errorf("got %s, want %s", strings.Join(got, ","), want)
	}
}
