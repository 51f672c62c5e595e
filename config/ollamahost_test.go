package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ollama/ollama/envconfig"
)

// TestMain runs the package's tests without the OLLAMA_HOST of the shell they are started from:
// Load reads it, and the tests that expect the default address would see the developer's server.
func TestMain(m *testing.M) {
	os.Unsetenv(OllamaHostEnv)
	os.Exit(m.Run())
}

// TestOllamaURLMatchesOllama: every form Ollama's client accepts in OLLAMA_HOST means the same
// server to toolrouter as to Ollama's own envconfig.Host.
func TestOllamaURLMatchesOllama(t *testing.T) {
	for _, s := range []string{
		"", "   ", "localhost", "example.com", "10.0.0.5", "127.0.0.1:11434", "example.com:8080", ":11434", ":8080",
		"http://localhost", "https://example.com", "http://example.com:8080", "https://example.com:8443",
		"[::1]", "[::1]:11434", "::1", "http://[::1]", "https://[::1]:8443", "[fe80::1]:11434",
		"example.com/ollama", "example.com:8080/ollama", "https://example.com/api/ollama", "http://[::1]:11434/prefix/x",
		"ollama.com", "https://ollama.com", "0.0.0.0", "0.0.0.0:11434", "http://", "unix://x", "  http://h:1  ",
	} {
		t.Run(s, func(t *testing.T) {
			t.Setenv("OLLAMA_HOST", s)
			want := envconfig.Host()
			got, err := ollamaURL(s)
			if err != nil {
				t.Fatalf("ollamaURL(%q): %v, want %s", s, err, want)
			}
			if got.String() != want.String() {
				t.Errorf("ollamaURL(%q): got %s, want %s (envconfig.Host)", s, got, want)
			}
		})
	}
}

func TestOllamaURLBeyondOllama(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{in: "https://user:p%40ss@ollama.example.com/v1", want: "https://user:p%40ss@ollama.example.com:443/v1"},
		{in: "localhost:99999", err: `invalid port "99999"`},
		{in: "http://h:port", err: `invalid port "port"`},
	} {
		got, err := ollamaURL(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ollamaURL(%q): got %v, %v; want error %q", tc.in, got, err, tc.err)
		case tc.err == "" && (err != nil || got.String() != tc.want):
			t.Errorf("ollamaURL(%q): got %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

// TestOllamaHostPrecedence: -ollama > TOOLROUTER_OLLAMA__HOST > the config file > OLLAMA_HOST >
// the default, each in any of Ollama's forms.
func TestOllamaHostPrecedence(t *testing.T) {
	dir := t.TempDir()
	withHost := filepath.Join(dir, "with.json")
	if err := os.WriteFile(withHost, []byte(`{"ollama": {"host": "file-host"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	without := filepath.Join(dir, "without.json")
	if err := os.WriteFile(without, []byte(`{"listen": "127.0.0.1:1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, file, flag, toolrouterEnv, ollamaEnv, want string
	}{
		{name: "default", file: without, want: "http://127.0.0.1:11434"},
		{name: "OLLAMA_HOST over the default", file: without, ollamaEnv: "gpu-box", want: "http://gpu-box:11434"},
		{name: "OLLAMA_HOST with quotes and a port only", file: without, ollamaEnv: `":9000"`, want: "http://:9000"},
		{name: "config file over OLLAMA_HOST", file: withHost, ollamaEnv: "gpu-box", want: "http://file-host:11434"},
		{name: "TOOLROUTER_OLLAMA__HOST over the file", file: withHost, ollamaEnv: "gpu-box", toolrouterEnv: "[::1]:8080", want: "http://[::1]:8080"},
		{name: "flag over everything", file: withHost, ollamaEnv: "gpu-box", toolrouterEnv: "env-host", flag: "https://flag-host/ollama", want: "https://flag-host:443/ollama"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("OLLAMA_HOST", tc.ollamaEnv)
			if tc.toolrouterEnv != "" {
				t.Setenv("TOOLROUTER_OLLAMA__HOST", tc.toolrouterEnv)
			}
			flags := map[string]any{}
			if tc.flag != "" {
				flags["ollama.host"] = tc.flag
			}
			c, err := Load(tc.file, flags)
			if err != nil {
				t.Fatal(err)
			}
			if c.Ollama.Host != tc.want {
				t.Errorf("ollama.host: got %q, want %q", c.Ollama.Host, tc.want)
			}
			if p, _ := c.Provider(DefaultProvider); p.BaseURL != tc.want {
				t.Errorf("the ollama provider: got %q, want %q", p.BaseURL, tc.want)
			}
		})
	}
}

func TestOllamaHostErrorsNameTheSource(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.json")
	if err := os.WriteFile(file, []byte(`{"providers": {"gpu": {"type": "ollama", "base_url": "gpu:70000"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OLLAMA_HOST", "box:nope")
	_, err := Load(file, nil)
	for _, want := range []string{`ollama.host: invalid port "nope"`, "set by environment variable OLLAMA_HOST", `providers.gpu.base_url: invalid port "70000"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want an error containing %q", err, want)
		}
	}
}
