package config

import (
	"reflect"
	"strings"
	"testing"
)

const councilFile = `{
  "providers": {
    "openai": {"type": "openai", "base_url": "https://api.openai.com/v1", "api_key_env": "TEST_OPENAI_KEY"},
    "vllm": {"type": "openai", "base_url": "http://gpu:8000/v1"}
  },
  "council": {
    "members": [
      {"name": "gpt", "provider": "openai", "model": "gpt-4o-mini", "timeout": "20s",
       "options": {"temperature": 0.3, "num_predict": 512}, "price_prompt_per_mtok": 0.15, "price_completion_per_mtok": 0.6},
      {"model": "qwen2.5:7b"},
      {"name": "local", "provider": "vllm", "model": "meta-llama/Llama-3.1-8B-Instruct"}
    ],
    "chairman": {"provider": "openai", "model": "gpt-4o"},
    "stage_timeout": "90s"
  }
}`

func TestDefaultCouncilDisabled(t *testing.T) {
	c := Default()
	if c.Council.Enabled() {
		t.Error("the default council is enabled, want it disabled (no members)")
	}
	p, ok := c.Provider(c.Router.Provider)
	if !ok || p.Type != ProviderOllama || p.BaseURL != c.Ollama.Host {
		t.Errorf("router provider: got %+v (%v), want ollama at ollama.host", p, ok)
	}
}

func TestLoadCouncil(t *testing.T) {
	clearEnv(t)
	t.Setenv("TEST_OPENAI_KEY", "sk-test-not-real")
	c, err := Load(writeFile(t, councilFile), nil)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := Council{
		Members: []Member{
			{Name: "gpt", Provider: "openai", Model: "gpt-4o-mini", Timeout: d("20s"),
				Options: map[string]any{"temperature": 0.3, "num_predict": 512}, PricePromptPerMTok: 0.15, PriceCompletionPerMTok: 0.6},
			{Name: "qwen2.5:7b", Provider: "ollama", Model: "qwen2.5:7b", Timeout: defaultMember().Timeout},
			{Name: "local", Provider: "vllm", Model: "meta-llama/Llama-3.1-8B-Instruct", Timeout: defaultMember().Timeout},
		},
		Chairman:     Member{Name: "chairman", Provider: "openai", Model: "gpt-4o", Timeout: defaultMember().Timeout},
		PeerReview:   true,
		Quorum:       2,
		StageTimeout: d("90s"), MaxEvidenceBytes: 16384, StreamDeliberation: true,
	}
	if !reflect.DeepEqual(c.Council, want) {
		t.Errorf("council:\ngot  %+v\nwant %+v", c.Council, want)
	}
	wantProviders := map[string]Provider{
		"ollama": {Type: ProviderOllama},
		"openai": {Type: ProviderOpenAI, BaseURL: "https://api.openai.com/v1", APIKeyEnv: "TEST_OPENAI_KEY"},
		"vllm":   {Type: ProviderOpenAI, BaseURL: "http://gpu:8000/v1"},
	}
	if !reflect.DeepEqual(c.Providers, wantProviders) {
		t.Errorf("providers:\ngot  %+v\nwant %+v", c.Providers, wantProviders)
	}
}

func TestLoadCouncilEnv(t *testing.T) {
	clearEnv(t)
	t.Setenv("TEST_OPENAI_KEY", "sk-test-not-real")
	for k, v := range map[string]string{
		"TOOLROUTER_COUNCIL__PEER_REVIEW":                     "false",
		"TOOLROUTER_COUNCIL__QUORUM":                          "3",
		"TOOLROUTER_COUNCIL__CHAIRMAN__MODEL":                 "gpt-4.1",
		"TOOLROUTER_COUNCIL__CHAIRMAN__OPTIONS__TEMPERATURE":  "0.2",
		"TOOLROUTER_PROVIDERS__VLLM__BASE_URL":                "http://other:8000/v1",
		"TOOLROUTER_PROVIDERS__GROQ__TYPE":                    "openai",
		"TOOLROUTER_PROVIDERS__GROQ__BASE_URL":                "https://api.groq.com/openai/v1",
		"TOOLROUTER_PROVIDERS__GROQ__API_KEY_ENV":             "TEST_OPENAI_KEY",
		"TOOLROUTER_ROUTER__PROVIDER":                         "groq",
		"TOOLROUTER_OLLAMA__HOST":                             "http://gpu-box:11434",
		"TOOLROUTER_COUNCIL__STAGE_TIMEOUT":                   "45",
		"TOOLROUTER_COUNCIL__CHAIRMAN__PRICE_PROMPT_PER_MTOK": "2.5",
		"TOOLROUTER_COUNCIL__STREAM_DELIBERATION":             "false",
		"TOOLROUTER_COUNCIL__REASONING_NAMES":                 "true",
	} {
		t.Setenv(k, v)
	}
	c, err := Load(writeFile(t, councilFile), nil)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	co := c.Council
	if co.PeerReview || co.Quorum != 3 || co.Chairman.Model != "gpt-4.1" || co.Chairman.Provider != "openai" ||
		co.Chairman.Options["temperature"] != 0.2 || co.StageTimeout != d("45s") || co.Chairman.PricePromptPerMTok != 2.5 || len(co.Members) != 3 ||
		co.StreamDeliberation || !co.ReasoningNames {
		t.Errorf("council: got %+v, want the environment's values over the file's", co)
	}
	if got := c.Providers["vllm"].BaseURL; got != "http://other:8000/v1" {
		t.Errorf("providers.vllm.base_url: got %q, want the environment's", got)
	}
	if p, ok := c.Provider(c.Router.Provider); !ok || p.BaseURL != "https://api.groq.com/openai/v1" || p.APIKeyEnv != "TEST_OPENAI_KEY" {
		t.Errorf("router provider: got %+v, want groq from the environment", p)
	}
	if p, _ := c.Provider("ollama"); p.BaseURL != "http://gpu-box:11434" {
		t.Errorf("the ollama provider follows ollama.host: got %q", p.BaseURL)
	}
}

// TestLoadRejectsLiteralKeys: a key in the file, the environment or a member is refused with a
// pointer to api_key_env, and the key's value is never echoed.
func TestLoadRejectsLiteralKeys(t *testing.T) {
	const secret = "sk-live-0123456789abcdefSECRET"
	tests := []struct {
		name string
		file string
		env  map[string]string
		want []string
	}{
		{
			name: "api_key in a provider",
			file: `{"providers": {"openai": {"type": "openai", "base_url": "https://api.openai.com/v1", "api_key": "` + secret + `"}}}`,
			want: []string{`key "providers.openai.api_key" is not allowed`, `"providers.openai.api_key_env"`},
		},
		{
			name: "api key from the environment",
			env:  map[string]string{"TOOLROUTER_PROVIDERS__OPENAI__API_KEY": secret},
			want: []string{"TOOLROUTER_PROVIDERS__OPENAI__API_KEY", `key "providers.openai.api_key" is not allowed`},
		},
		{
			name: "token in a council member",
			file: `{"council": {"members": [{"model": "m", "token": "` + secret + `"}]}}`,
			want: []string{`key "council.members[0].token" is not allowed`, "api_key_env"},
		},
		{
			name: "the key put in api_key_env",
			file: `{"providers": {"openai": {"type": "openai", "base_url": "https://api.openai.com/v1", "api_key_env": "` + secret + `"}}}`,
			want: []string{"providers.openai.api_key_env: must be the name of an environment variable holding the key"},
		},
		{
			name: "unknown key in a council member",
			file: `{"council": {"members": [{"model": "m"}, {"modle": "m"}]}}`,
			want: []string{`unknown key "council.members[1].modle"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			path := ""
			if tc.file != "" {
				path = writeFile(t, tc.file)
			}
			_, err := Load(path, nil)
			if err == nil {
				t.Fatal("Load: got nil error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "SECRET") {
				t.Errorf("the error shows the key: %q", err)
			}
		})
	}
}

func TestValidateCouncil(t *testing.T) {
	t.Setenv("TEST_OPENAI_KEY", "sk-test-not-real")
	t.Setenv("TEST_UNSET_KEY", "")
	enabled := func(c *Config) {
		c.Providers["openai"] = Provider{Type: ProviderOpenAI, BaseURL: "https://api.openai.com/v1", APIKeyEnv: "TEST_OPENAI_KEY"}
		c.Council.Members = []Member{
			{Name: "a", Provider: "ollama", Model: "qwen2.5:7b", Timeout: d("30s")},
			{Name: "b", Provider: "openai", Model: "gpt-4o-mini", Timeout: d("30s")},
		}
		c.Council.Chairman = Member{Name: "chairman", Provider: "openai", Model: "gpt-4o", Timeout: d("30s")}
	}
	tests := []validationCase{
		{"router provider unknown", func(c *Config) { c.Router.Provider = "nope" }, "router.provider", `router.provider: unknown provider "nope", want one of "ollama"`},
		{"provider type", func(c *Config) { c.Providers["x"] = Provider{Type: "anthropic", BaseURL: "https://h"} }, "providers.x.type", `must be "ollama" or "openai", got "anthropic"`},
		{"provider name", func(c *Config) { c.Providers["Open.AI"] = Provider{Type: ProviderOllama} }, "providers.Open.AI", `invalid provider name "Open.AI"`},
		{"openai without base_url", func(c *Config) { c.Providers["x"] = Provider{Type: ProviderOpenAI} }, "providers.x.base_url", `required for type "openai"`},
		{"bad base_url", func(c *Config) { c.Providers["x"] = Provider{Type: ProviderOpenAI, BaseURL: "api.openai.com"} }, "providers.x.base_url", `must be an absolute http or https URL`},
		{"ollama with a key", func(c *Config) { c.Providers["ollama"] = Provider{Type: ProviderOllama, APIKeyEnv: "X"} }, "providers.ollama.api_key_env", `not allowed with type "ollama"`},
		{"key-looking api_key_env", func(c *Config) {
			c.Providers["x"] = Provider{Type: ProviderOpenAI, BaseURL: "https://h/v1", APIKeyEnv: "AbCdEf0123456789GhIjKlMnOp"}
		}, "providers.x.api_key_env", "never the key itself"},
		{"used key unset", func(c *Config) {
			enabled(c)
			p := c.Providers["openai"]
			p.APIKeyEnv = "TEST_UNSET_KEY"
			c.Providers["openai"] = p
		}, "providers.openai.api_key_env", "environment variable TEST_UNSET_KEY is not set (provider used by council.members[1])"},
		{"member provider unknown", func(c *Config) { enabled(c); c.Council.Members[0].Provider = "nope" }, "council.members[0].provider", `unknown provider "nope"`},
		{"member model empty", func(c *Config) { enabled(c); c.Council.Members[1].Model = "" }, "council.members[1].model", "must not be empty"},
		{"member timeout", func(c *Config) { enabled(c); c.Council.Members[1].Timeout = 0 }, "council.members[1].timeout", "must be > 0, got 0s"},
		{"member name", func(c *Config) { enabled(c); c.Council.Members[0].Name = "" }, "council.members[0].name", `invalid name ""`},
		{"duplicate names", func(c *Config) { enabled(c); c.Council.Members[1].Name = "a" }, "council.members[1].name", `name "a" is already used by council.members[0]`},
		{"chairman named like a member", func(c *Config) { enabled(c); c.Council.Chairman.Name = "b" }, "council.chairman.name", `already used by council.members[1]`},
		{"chairman model", func(c *Config) { enabled(c); c.Council.Chairman.Model = "" }, "council.chairman.model", "must not be empty"},
		{"negative price", func(c *Config) { enabled(c); c.Council.Members[0].PriceCompletionPerMTok = -1 }, "council.members[0].price_completion_per_mtok", "must be >= 0"},
		{"quorum above members", func(c *Config) { enabled(c); c.Council.Quorum = 3 }, "council.quorum", "must be between 1 and the number of members (2), got 3"},
		{"quorum zero", func(c *Config) { enabled(c); c.Council.Quorum = 0 }, "council.quorum", "got 0"},
		{"stage timeout", func(c *Config) { enabled(c); c.Council.StageTimeout = d("-1s") }, "council.stage_timeout", "must be >= 0"},
	}
	checkValidation(t, tests)
	t.Run("valid council", func(t *testing.T) {
		c := Default()
		enabled(&c)
		if err := c.Validate(); err != nil {
			t.Errorf("Validate(): got %v, want nil", err)
		}
	})
	t.Run("disabled council is not checked", func(t *testing.T) {
		c := Default()
		c.Council.Quorum = 9
		c.Council.Chairman.Model = ""
		if err := c.Validate(); err != nil {
			t.Errorf("Validate(): got %v, want nil", err)
		}
	})
}
