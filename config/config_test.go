package config

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	kjson "github.com/knadh/koanf/parsers/json"
)

// clearEnv removes every TOOLROUTER_ variable for the duration of the test.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, EnvPrefix) {
			t.Setenv(k, "") // restores the old value after the test
			os.Unsetenv(k)
		}
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func ptr[T any](v T) *T { return &v }

func d(s string) Duration {
	v, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return Duration(v)
}

func TestDefaultIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v, want nil", err)
	}
}

func TestDefaultReturnsFreshMaps(t *testing.T) {
	a := Default()
	a.Ollama.Options["seed"] = 1
	delete(a.Servers, "clock")
	b := Default()
	if got := b.Ollama.Options["seed"]; got != 42 {
		t.Errorf("seed after mutating an earlier Default(): got %v, want 42", got)
	}
	if _, ok := b.Servers["clock"]; !ok {
		t.Errorf("clock after mutating an earlier Default(): got missing, want present")
	}
}

func TestLoadDefaults(t *testing.T) {
	clearEnv(t)
	got, err := Load("", nil)
	if err != nil {
		t.Fatalf("Load(\"\", nil): %v", err)
	}
	if want := Default(); !reflect.DeepEqual(got, want) {
		t.Errorf("Load(\"\", nil):\ngot  %+v\nwant %+v", got, want)
	}
}

func TestConfigJSONMatchesDefault(t *testing.T) {
	clearEnv(t)
	const path = "../config.json"
	t.Run("Load", func(t *testing.T) {
		got, err := Load(path, nil)
		if err != nil {
			t.Fatalf("Load(%q): %v", path, err)
		}
		if want := besideFile(t, path); !reflect.DeepEqual(got, want) {
			t.Errorf("Load(%q):\ngot  %+v\nwant %+v", path, got, want)
		}
	})
	t.Run("complete without defaults", func(t *testing.T) {
		// The committed file alone, without the defaults layer, must be
		// the whole default configuration.
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := kjson.Parser().Unmarshal(b)
		if err != nil {
			t.Fatal(err)
		}
		if u := unknownKeys(raw); len(u) > 0 {
			t.Fatalf("unknown keys: got %v, want none", u)
		}
		got, err := decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		// ollama.host is the one key the file leaves out: written there, it would hide
		// OLLAMA_HOST, which comes under the file.
		if got.Ollama.Host != "" {
			t.Errorf("config.json sets ollama.host %q; leave it out so that OLLAMA_HOST applies", got.Ollama.Host)
		}
		got.Ollama.Host = Default().Ollama.Host
		if want := Default(); !reflect.DeepEqual(got, want) {
			t.Errorf("decode(config.json):\ngot  %+v\nwant %+v", got, want)
		}
	})
}

func TestDefaultJSONRoundTrip(t *testing.T) {
	clearEnv(t)
	b, err := json.MarshalIndent(Default(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, string(b))
	got, err := Load(path, nil)
	if err != nil {
		t.Fatalf("Load(marshalled Default()): %v", err)
	}
	if want := besideFile(t, path); !reflect.DeepEqual(got, want) {
		t.Errorf("Load(marshalled Default()):\ngot  %+v\nwant %+v", got, want)
	}
}

func TestLoadFile(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		check func(t *testing.T, c Config)
	}{
		{
			name: "scalars override defaults",
			file: `{"listen": ":9000", "ollama": {"model": "llama3.2:3b", "keep_alive": "-1s"}, "router": {"repair_attempts": 5, "on_model_failure": "fail"}}`,
			check: func(t *testing.T, c Config) {
				want := Default()
				want.Usage.Path = c.Usage.Path // beside the file (TestUsagePath)
				want.Listen = ":9000"
				want.Ollama.Model = "llama3.2:3b"
				want.Ollama.KeepAlive = d("-1s")
				want.Router.RepairAttempts = 5
				want.Router.OnModelFailure = FailError
				if !reflect.DeepEqual(c, want) {
					t.Errorf("got  %+v\nwant %+v", c, want)
				}
			},
		},
		{
			name: "options merge key by key",
			file: `{"ollama": {"options": {"temperature": 0.2, "top_k": 20}}}`,
			check: func(t *testing.T, c Config) {
				want := map[string]any{"temperature": 0.2, "num_ctx": 8192, "seed": 42, "top_k": 20}
				if !reflect.DeepEqual(c.Ollama.Options, want) {
					t.Errorf("options: got %#v, want %#v", c.Ollama.Options, want)
				}
			},
		},
		{
			name: "durations as strings and seconds",
			file: `{"ollama": {"timeout": 25, "keep_alive": 0}, "http": {"request_timeout": "2m", "read_timeout": 1.5}}`,
			check: func(t *testing.T, c Config) {
				for _, tc := range []struct {
					key       string
					got, want Duration
				}{
					{"ollama.timeout", c.Ollama.Timeout, d("25s")},
					{"ollama.keep_alive", c.Ollama.KeepAlive, 0},
					{"http.request_timeout", c.HTTP.RequestTimeout, d("2m")},
					{"http.read_timeout", c.HTTP.ReadTimeout, d("1.5s")},
				} {
					if tc.got != tc.want {
						t.Errorf("%s: got %v, want %v", tc.key, tc.got, tc.want)
					}
				}
			},
		},
		{
			name: "new servers get default timeouts and keep built-ins",
			file: `{"servers": {
				"fs": {"purpose": "files", "transport": "stdio", "command": "mcp-fs", "args": ["--root", "/tmp"], "env": {"API_KEY": "k"}, "tools": {"allow": ["read_*"], "deny": ["read_secret"]}},
				"web": {"purpose": "web", "transport": "streamable-http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}, "call_timeout": "5s"},
				"calc2": {"transport": "builtin", "builtin": "calculator"},
				"clock": {"enabled": false}
			}}`,
			check: func(t *testing.T, c Config) {
				want := Default()
				want.Servers["clock"] = withBounds(Server{
					Purpose: want.Servers["clock"].Purpose, Transport: TransportBuiltin, Enabled: ptr(false), Builtin: "clock",
					ConnectTimeout: defaultServer().ConnectTimeout, CallTimeout: defaultServer().CallTimeout,
				})
				want.Servers["fs"] = withBounds(Server{
					Purpose: "files", Transport: TransportStdio, Command: "mcp-fs", Args: []string{"--root", "/tmp"},
					Env:            map[string]string{"API_KEY": "k"},
					ConnectTimeout: defaultServer().ConnectTimeout, CallTimeout: defaultServer().CallTimeout,
					Tools: ToolFilter{Allow: []string{"read_*"}, Deny: []string{"read_secret"}},
				})
				want.Servers["web"] = withBounds(Server{
					Purpose: "web", Transport: TransportStreamableHTTP, URL: "https://example.com/mcp",
					Headers:        map[string]string{"Authorization": "Bearer x"},
					ConnectTimeout: defaultServer().ConnectTimeout, CallTimeout: d("5s"),
				})
				want.Servers["calc2"] = withBounds(Server{
					Transport: TransportBuiltin, Builtin: "calculator",
					ConnectTimeout: defaultServer().ConnectTimeout, CallTimeout: defaultServer().CallTimeout,
				})
				if !reflect.DeepEqual(c.Servers, want.Servers) {
					t.Errorf("servers:\ngot  %+v\nwant %+v", c.Servers, want.Servers)
				}
				if got, want := c.EnabledServers(), []string{"calc2", "calculator", "fs", "web"}; !slices.Equal(got, want) {
					t.Errorf("EnabledServers(): got %v, want %v", got, want)
				}
			},
		},
		{
			name: "builtin defaults to the server name",
			file: `{"servers": {"clock": {"builtin": ""}, "calculator": {"transport": "builtin", "builtin": null}}}`,
			check: func(t *testing.T, c Config) {
				for _, name := range []string{"clock", "calculator"} {
					if got := c.Servers[name].Builtin; got != name {
						t.Errorf("servers.%s.builtin: got %q, want %q", name, got, name)
					}
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			c, err := Load(writeFile(t, tt.file), nil)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			tt.check(t, c)
		})
	}
}

func TestLoadEnv(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		check func(t *testing.T, c Config)
	}{
		{
			name: "nested string",
			env:  map[string]string{"TOOLROUTER_OLLAMA__HOST": "http://x:11434"},
			check: func(t *testing.T, c Config) {
				if got, want := c.Ollama.Host, "http://x:11434"; got != want {
					t.Errorf("ollama.host: got %q, want %q", got, want)
				}
			},
		},
		{
			name: "int from string",
			env:  map[string]string{"TOOLROUTER_ROUTER__REPAIR_ATTEMPTS": "3", "TOOLROUTER_HTTP__BODY_LIMIT": "2048"},
			check: func(t *testing.T, c Config) {
				if got, want := c.Router.RepairAttempts, 3; got != want {
					t.Errorf("router.repair_attempts: got %d, want %d", got, want)
				}
				if got, want := c.HTTP.BodyLimit, 2048; got != want {
					t.Errorf("http.body_limit: got %d, want %d", got, want)
				}
			},
		},
		{
			name: "metrics off",
			env:  map[string]string{"TOOLROUTER_METRICS__ENABLED": "false"},
			check: func(t *testing.T, c Config) {
				if got, want := c.Metrics, (Metrics{Enabled: false}); got != want {
					t.Errorf("metrics: got %+v, want %+v", got, want)
				}
			},
		},
		{
			name: "metrics on a listener of its own",
			env:  map[string]string{"TOOLROUTER_METRICS__LISTEN": "127.0.0.1:9464"},
			check: func(t *testing.T, c Config) {
				if got, want := c.Metrics, (Metrics{Enabled: true, Listen: "127.0.0.1:9464"}); got != want {
					t.Errorf("metrics: got %+v, want %+v", got, want)
				}
			},
		},
		{
			name: "bool from string disables a server",
			env:  map[string]string{"TOOLROUTER_SERVERS__CLOCK__ENABLED": "false"},
			check: func(t *testing.T, c Config) {
				if c.Servers["clock"].IsEnabled() {
					t.Errorf("servers.clock.enabled: got true, want false")
				}
				if got, want := c.EnabledServers(), []string{"calculator"}; !slices.Equal(got, want) {
					t.Errorf("EnabledServers(): got %v, want %v", got, want)
				}
				if got, want := c.Servers["clock"].Transport, TransportBuiltin; got != want {
					t.Errorf("servers.clock.transport: got %q, want %q (kept from defaults)", got, want)
				}
			},
		},
		{
			name: "durations from strings",
			env: map[string]string{
				"TOOLROUTER_OLLAMA__TIMEOUT":                   "25s",
				"TOOLROUTER_OLLAMA__KEEP_ALIVE":                "-1",
				"TOOLROUTER_ROUTER__SELECT_TIMEOUT":            "50",
				"TOOLROUTER_SERVERS__CALCULATOR__CALL_TIMEOUT": "1m30s",
			},
			check: func(t *testing.T, c Config) {
				for _, tc := range []struct {
					key       string
					got, want Duration
				}{
					{"ollama.timeout", c.Ollama.Timeout, d("25s")},
					{"ollama.keep_alive", c.Ollama.KeepAlive, d("-1s")},
					{"router.select_timeout", c.Router.SelectTimeout, d("50s")},
					{"servers.calculator.call_timeout", c.Servers["calculator"].CallTimeout, d("90s")},
				} {
					if tc.got != tc.want {
						t.Errorf("%s: got %v, want %v", tc.key, tc.got, tc.want)
					}
				}
			},
		},
		{
			name: "options converted from strings",
			env: map[string]string{
				"TOOLROUTER_OLLAMA__OPTIONS__TEMPERATURE": "0.5",
				"TOOLROUTER_OLLAMA__OPTIONS__NUM_CTX":     "4096",
				"TOOLROUTER_OLLAMA__OPTIONS__LOW_VRAM":    "true",
			},
			check: func(t *testing.T, c Config) {
				want := map[string]any{"temperature": 0.5, "num_ctx": 4096, "seed": 42, "low_vram": true}
				if !reflect.DeepEqual(c.Ollama.Options, want) {
					t.Errorf("options: got %#v, want %#v", c.Ollama.Options, want)
				}
			},
		},
		{
			name: "new server from env keeps case of env and header names",
			env: map[string]string{
				"TOOLROUTER_SERVERS__FS__TRANSPORT":           "stdio",
				"TOOLROUTER_SERVERS__FS__COMMAND":             "mcp-fs",
				"TOOLROUTER_SERVERS__FS__ENV__API_KEY":        "k",
				"TOOLROUTER_SERVERS__WEB__TRANSPORT":          "sse",
				"TOOLROUTER_SERVERS__WEB__URL":                "http://h/sse",
				"TOOLROUTER_SERVERS__WEB__HEADERS__X-Api-Key": "v",
			},
			check: func(t *testing.T, c Config) {
				fs := c.Servers["fs"]
				if fs.Command != "mcp-fs" || fs.Transport != TransportStdio {
					t.Errorf("servers.fs: got command %q transport %q, want mcp-fs stdio", fs.Command, fs.Transport)
				}
				if got, want := fs.Env, map[string]string{"API_KEY": "k"}; !reflect.DeepEqual(got, want) {
					t.Errorf("servers.fs.env: got %v, want %v", got, want)
				}
				if got, want := fs.ConnectTimeout, defaultServer().ConnectTimeout; got != want {
					t.Errorf("servers.fs.connect_timeout: got %v, want %v", got, want)
				}
				if got, want := c.Servers["web"].Headers, map[string]string{"X-Api-Key": "v"}; !reflect.DeepEqual(got, want) {
					t.Errorf("servers.web.headers: got %v, want %v", got, want)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			c, err := Load("", nil)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			tt.check(t, c)
		})
	}
}

func TestLayerPrecedence(t *testing.T) {
	file := `{"ollama": {"model": "file-model", "host": "http://file:11434"}, "listen": "127.0.0.1:1111"}`
	tests := []struct {
		name                string
		env                 map[string]string
		flags               map[string]any
		wantModel, wantHost string
		wantListen          string
		wantTimeout         Duration
		wantRepair          int
	}{
		{
			name:      "file over defaults",
			wantModel: "file-model", wantHost: "http://file:11434", wantListen: "127.0.0.1:1111",
			wantTimeout: d("30s"), wantRepair: 2,
		},
		{
			name:      "env over file",
			env:       map[string]string{"TOOLROUTER_OLLAMA__MODEL": "env-model", "TOOLROUTER_ROUTER__REPAIR_ATTEMPTS": "4"},
			wantModel: "env-model", wantHost: "http://file:11434", wantListen: "127.0.0.1:1111",
			wantTimeout: d("30s"), wantRepair: 4,
		},
		{
			name:      "flags over env",
			env:       map[string]string{"TOOLROUTER_OLLAMA__MODEL": "env-model", "TOOLROUTER_LISTEN": "127.0.0.1:2222"},
			flags:     map[string]any{"ollama.model": "flag-model", "listen": "127.0.0.1:3333", "ollama.timeout": 5 * time.Second, "router.repair_attempts": 7},
			wantModel: "flag-model", wantHost: "http://file:11434", wantListen: "127.0.0.1:3333",
			wantTimeout: d("5s"), wantRepair: 7,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			c, err := Load(writeFile(t, file), tt.flags)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if c.Ollama.Model != tt.wantModel {
				t.Errorf("ollama.model: got %q, want %q", c.Ollama.Model, tt.wantModel)
			}
			if c.Ollama.Host != tt.wantHost {
				t.Errorf("ollama.host: got %q, want %q", c.Ollama.Host, tt.wantHost)
			}
			if c.Listen != tt.wantListen {
				t.Errorf("listen: got %q, want %q", c.Listen, tt.wantListen)
			}
			if c.Ollama.Timeout != tt.wantTimeout {
				t.Errorf("ollama.timeout: got %v, want %v", c.Ollama.Timeout, tt.wantTimeout)
			}
			if c.Router.RepairAttempts != tt.wantRepair {
				t.Errorf("router.repair_attempts: got %d, want %d", c.Router.RepairAttempts, tt.wantRepair)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []validationCase{
		{"listen without port", func(c *Config) { c.Listen = "localhost" }, "listen", `listen: must be host:port, got "localhost"`},
		{"listen bad port", func(c *Config) { c.Listen = "localhost:http" }, "listen", `listen: port must be a number from 0 to 65535, got "http"`},
		{"listen port too large", func(c *Config) { c.Listen = ":70000" }, "listen", `listen: port must be a number from 0 to 65535, got "70000"`},
		{"metrics listen without port", func(c *Config) { c.Metrics.Listen = "localhost" }, "metrics.listen", `metrics.listen: must be host:port, got "localhost"`},
		{"metrics listen while disabled", func(c *Config) { c.Metrics.Enabled, c.Metrics.Listen = false, "127.0.0.1:9464" }, "metrics.listen", `metrics.listen: is set but metrics.enabled is false: set one or the other`},
		{"metrics listen is listen", func(c *Config) { c.Metrics.Listen = c.Listen }, "metrics.listen", `metrics.listen: must differ from listen ("127.0.0.1:8090"), which serves /metrics already`},
		{"ollama host not a URL", func(c *Config) { c.Ollama.Host = "127.0.0.1:11434" }, "ollama.host", `ollama.host: must be an absolute http or https URL, got "127.0.0.1:11434"`},
		{"ollama host bad scheme", func(c *Config) { c.Ollama.Host = "ftp://h" }, "ollama.host", `ollama.host: must be an absolute http or https URL, got "ftp://h"`},
		{"ollama model empty", func(c *Config) { c.Ollama.Model = " " }, "ollama.model", `ollama.model: must not be empty`},
		{"limits anonymous negative", func(c *Config) { c.Limits.Anonymous.TokensPerMinute = -5 }, "limits.anonymous.tokens_per_minute", `limits.anonymous.tokens_per_minute: must be >= 0 (0: no limit), got -5`},
		{"limits redis url scheme", func(c *Config) { c.Limits.RedisURL = "http://u:hunter2@h:6379" }, "limits.redis_url", `limits.redis_url: must be a redis://, rediss:// or unix:// URL, got "http://u:REDACTED@h:6379"`},
		{"limits redis url no host", func(c *Config) { c.Limits.RedisURL = "redis:///0" }, "limits.redis_url", `limits.redis_url: has no host: want redis://HOST:PORT[/DB], got "redis:///0"`},
		{"limits on_redis_down", func(c *Config) { c.Limits.OnRedisDown = "open" }, "limits.on_redis_down", `limits.on_redis_down: must be "local", "fail_open" or "closed", got "open"`},
		{"limits replicas zero", func(c *Config) { c.Limits.Replicas = 0 }, "limits.replicas", `limits.replicas: must be >= 1 (the replicas sharing limits.redis_url), got 0`},
		{"limits redis timeout zero", func(c *Config) { c.Limits.RedisTimeout = 0 }, "limits.redis_timeout", `limits.redis_timeout: must be > 0, got 0s`},
		{"ollama timeout zero", func(c *Config) { c.Ollama.Timeout = 0 }, "ollama.timeout", `ollama.timeout: must be > 0, got 0s`},
		{"mcp session idle ttl zero", func(c *Config) { c.MCPServer.SessionIdleTTL = 0 }, "mcp_server.session_idle_ttl", `mcp_server.session_idle_ttl: must be > 0, got 0s`},
		{"mcp max sessions zero", func(c *Config) { c.MCPServer.MaxSessions = 0 }, "mcp_server.max_sessions", `mcp_server.max_sessions: must be > 0, got 0`},
		{"mcp max sessions per identity over the total", func(c *Config) { c.MCPServer.MaxSessionsPerIdentity = 1001 }, "mcp_server.max_sessions_per_identity", `mcp_server.max_sessions_per_identity: must be > 0 and at most mcp_server.max_sessions (1000), got 1001`},
		{"max response bytes zero", func(c *Config) { c.Ollama.MaxResponseBytes = 0 }, "ollama.max_response_bytes", `ollama.max_response_bytes: must be between 1 and 268435456, got 0`},
		{"max response bytes huge", func(c *Config) { c.Ollama.MaxResponseBytes = 1 << 40 }, "ollama.max_response_bytes", `ollama.max_response_bytes: must be between 1 and 268435456, got 1099511627776`},
		{"origin with a path", func(c *Config) { c.HTTP.AllowedOrigins = []string{"https://app.example.com/"} }, "http.allowed_origins[0]", `http.allowed_origins[0]: must be an origin as browsers send it, scheme://host[:port] in lower case (e.g. "https://app.example.com"), got "https://app.example.com/"`},
		{"origin wildcard", func(c *Config) { c.HTTP.AllowedOrigins = []string{"https://ok.example", "*"} }, "http.allowed_origins[1]", `http.allowed_origins[1]: must be an origin as browsers send it, scheme://host[:port] in lower case (e.g. "https://app.example.com"), got "*"`},
		{"origin upper case", func(c *Config) { c.HTTP.AllowedOrigins = []string{"https://App.example.com"} }, "http.allowed_origins[0]", `http.allowed_origins[0]: must be an origin as browsers send it, scheme://host[:port] in lower case (e.g. "https://app.example.com"), got "https://App.example.com"`},
		{"repair attempts negative", func(c *Config) { c.Router.RepairAttempts = -1 }, "router.repair_attempts", `router.repair_attempts: must be between 0 and 10, got -1`},
		{"repair attempts too many", func(c *Config) { c.Router.RepairAttempts = 11 }, "router.repair_attempts", `router.repair_attempts: must be between 0 and 10, got 11`},
		{"select timeout", func(c *Config) { c.Router.SelectTimeout = d("-1s") }, "router.select_timeout", `router.select_timeout: must be > 0, got -1s`},
		{"arguments timeout", func(c *Config) { c.Router.ArgumentsTimeout = 0 }, "router.arguments_timeout", `router.arguments_timeout: must be > 0, got 0s`},
		{"execute timeout", func(c *Config) { c.Router.ExecuteTimeout = 0 }, "router.execute_timeout", `router.execute_timeout: must be > 0, got 0s`},
		{"log requests", func(c *Config) { c.Log.Requests = "warn" }, "log.requests", `log.requests: must be "info", "debug" or "off", got "warn"`},
		{"on model failure", func(c *Config) { c.Router.OnModelFailure = "x" }, "router.on_model_failure", `router.on_model_failure: must be "no_tool" or "fail", got "x"`},
		{"max query bytes", func(c *Config) { c.Router.MaxQueryBytes = 0 }, "router.max_query_bytes", `router.max_query_bytes: must be > 0, got 0`},
		{"max history", func(c *Config) { c.Router.MaxHistory = -1 }, "router.max_history", `router.max_history: must be >= 0, got -1`},
		{"reasoning unknown", func(c *Config) { c.Router.Reasoning = "short" }, "router.reasoning", `router.reasoning: must be one of ["none" "brief" "full"], got "short"`},
		{"min confidence 1", func(c *Config) { c.Router.MinConfidence = 1 }, "router.min_confidence", `router.min_confidence: must be at least 0 and below 1 (0: off), got 1`},
		{"min confidence native", func(c *Config) { c.Router.MinConfidence, c.Router.Mode = 0.5, ModeNative }, "router.min_confidence", `router.min_confidence: needs router.mode "two_phase"`},
		{"min confidence openai", func(c *Config) {
			c.Providers["gw"] = Provider{Type: ProviderOpenAI, BaseURL: "http://127.0.0.1:4000/v1"}
			c.Router.Provider, c.Router.MinConfidence = "gw", 0.5
		}, "router.min_confidence", `router.min_confidence: needs an Ollama provider for the router: provider "gw" (openai) sends no logprobs`},
		{"body limit", func(c *Config) { c.HTTP.BodyLimit = 0 }, "http.body_limit", `http.body_limit: must be > 0, got 0`},
		{"read timeout", func(c *Config) { c.HTTP.ReadTimeout = 0 }, "http.read_timeout", `http.read_timeout: must be > 0, got 0s`},
		{"write timeout", func(c *Config) { c.HTTP.WriteTimeout = 0 }, "http.write_timeout", `http.write_timeout: must be > 0, got 0s`},
		{"request timeout", func(c *Config) { c.HTTP.RequestTimeout = 0 }, "http.request_timeout", `http.request_timeout: must be > 0, got 0s`},
		{"shutdown timeout", func(c *Config) { c.HTTP.ShutdownTimeout = 0 }, "http.shutdown_timeout", `http.shutdown_timeout: must be > 0, got 0s`},
		{"server name uppercase", func(c *Config) { c.Servers["Calc"] = c.Servers["calculator"]; delete(c.Servers, "calculator") }, "servers.Calc", `servers.Calc: invalid server id "Calc"`},
		{"server name with dot", func(c *Config) { c.Servers["my.calc"] = c.Servers["calculator"] }, "servers.my.calc", `servers.my.calc: invalid server id "my.calc"`},
		{"server id too long", func(c *Config) { c.Servers[strings.Repeat("a", 65)] = c.Servers["calculator"] }, "servers." + strings.Repeat("a", 65), `invalid server id`},
		{"transport unknown", func(c *Config) { setServer(c, "x", Server{Transport: "http"}) }, "servers.x.transport", `servers.x.transport: must be one of "builtin", "stdio", "streamable-http", "sse", got "http"`},
		{"transport empty", func(c *Config) { setServer(c, "x", Server{}) }, "servers.x.transport", `servers.x.transport: must be one of "builtin", "stdio", "streamable-http", "sse", got ""`},
		{"builtin unknown", func(c *Config) { setServer(c, "calc", Server{Transport: TransportBuiltin, Builtin: "weather"}) }, "servers.calc.builtin", `servers.calc.builtin: unknown built-in "weather", want one of calculator, clock`},
		{"builtin defaults to unknown name", func(c *Config) { setServer(c, "calc", Server{Transport: TransportBuiltin}) }, "servers.calc.builtin", `servers.calc.builtin: unknown built-in "calc"`},
		{"builtin with url", func(c *Config) { s := c.Servers["clock"]; s.URL = "http://h"; c.Servers["clock"] = s }, "servers.clock.url", `servers.clock.url: not allowed with transport "builtin"`},
		{"builtin with command", func(c *Config) { s := c.Servers["clock"]; s.Command = "x"; c.Servers["clock"] = s }, "servers.clock.command", `servers.clock.command: not allowed with transport "builtin"`},
		{"stdio without command", func(c *Config) { setServer(c, "fs", Server{Transport: TransportStdio}) }, "servers.fs.command", `servers.fs.command: required for transport "stdio"`},
		{"stdio with url", func(c *Config) { setServer(c, "fs", Server{Transport: TransportStdio, Command: "fs", URL: "http://h"}) }, "servers.fs.url", `servers.fs.url: not allowed with transport "stdio"`},
		{"stdio with headers", func(c *Config) {
			setServer(c, "fs", Server{Transport: TransportStdio, Command: "fs", Headers: map[string]string{"a": "b"}})
		}, "servers.fs.headers", `servers.fs.headers: not allowed with transport "stdio"`},
		{"stdio with builtin", func(c *Config) {
			setServer(c, "fs", Server{Transport: TransportStdio, Command: "fs", Builtin: "clock"})
		}, "servers.fs.builtin", `servers.fs.builtin: not allowed with transport "stdio"`},
		{"http without url", func(c *Config) { setServer(c, "web", Server{Transport: TransportStreamableHTTP}) }, "servers.web.url", `servers.web.url: required for transport "streamable-http"`},
		{"sse relative url", func(c *Config) { setServer(c, "web", Server{Transport: TransportSSE, URL: "/sse"}) }, "servers.web.url", `servers.web.url: must be an absolute http or https URL, got "/sse"`},
		{"url credentials not echoed", func(c *Config) {
			setServer(c, "web", Server{Transport: TransportSSE, URL: "ftp://u:pw-secret@h/?token=tk"})
		},
			"servers.web.url", `servers.web.url: must be an absolute http or https URL, got "ftp://u:REDACTED@h/?token=REDACTED"`},
		{"secrets names no header", func(c *Config) {
			setServer(c, "web", Server{Transport: TransportSSE, URL: "http://h/sse", Headers: map[string]string{"X-Tenant": "t"}, Secrets: []string{"x-tenant", "X-Other"}})
		}, "servers.web.secrets[1]", `servers.web.secrets[1]: "X-Other" is neither a header nor an env variable of the server`},
		{"schema depth zero", func(c *Config) { s := c.Servers["clock"]; s.MaxSchemaDepth = 0; c.Servers["clock"] = s },
			"servers.clock.max_schema_depth", `servers.clock.max_schema_depth: must be > 0, got 0`},
		{"http with command", func(c *Config) {
			setServer(c, "web", Server{Transport: TransportSSE, URL: "http://h/sse", Command: "x"})
		}, "servers.web.command", `servers.web.command: not allowed with transport "sse"`},
		{"http with env", func(c *Config) {
			setServer(c, "web", Server{Transport: TransportStreamableHTTP, URL: "http://h/mcp", Env: map[string]string{"A": "b"}})
		}, "servers.web.env", `servers.web.env: not allowed with transport "streamable-http"`},
		{"connect timeout", func(c *Config) { s := c.Servers["clock"]; s.ConnectTimeout = 0; c.Servers["clock"] = s }, "servers.clock.connect_timeout", `servers.clock.connect_timeout: must be > 0, got 0s`},
		{"call timeout", func(c *Config) { s := c.Servers["clock"]; s.CallTimeout = d("-1s"); c.Servers["clock"] = s }, "servers.clock.call_timeout", `servers.clock.call_timeout: must be > 0, got -1s`},
		{"bad allow pattern", func(c *Config) {
			s := c.Servers["clock"]
			s.Tools.Allow = []string{"now", "a["}
			c.Servers["clock"] = s
		}, "servers.clock.tools.allow[1]", `servers.clock.tools.allow[1]: invalid glob pattern "a["`},
		{"empty deny pattern", func(c *Config) { s := c.Servers["clock"]; s.Tools.Deny = []string{""}; c.Servers["clock"] = s }, "servers.clock.tools.deny[0]", `servers.clock.tools.deny[0]: must not be empty`},
	}
	checkValidation(t, tests)
}

// validationCase is one invalid configuration: what to change in Default(), and the key and
// message Validate must report.
type validationCase struct {
	name    string
	mutate  func(c *Config)
	wantKey string
	wantMsg string
}

// checkValidation requires each case to fail validation with a *FieldError for its key and its
// message.
func checkValidation(t *testing.T, tests []validationCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.mutate(&c)
			err := c.Validate()
			if err == nil {
				t.Fatalf("Validate(): got nil, want error containing %q", tt.wantMsg)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Validate(): got %q, want it to contain %q", err, tt.wantMsg)
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Validate(): got %T, want a *FieldError inside", err)
			}
			if fe.Key != tt.wantKey {
				t.Errorf("FieldError.Key: got %q, want %q", fe.Key, tt.wantKey)
			}
		})
	}
}

func setServer(c *Config, name string, s Server) {
	s.ConnectTimeout = defaultServer().ConnectTimeout
	s.CallTimeout = defaultServer().CallTimeout
	c.Servers[name] = withBounds(s)
}

// withBounds gives s the default schema and message bounds.
func withBounds(s Server) Server {
	d := defaultServer()
	s.MaxSchemaBytes, s.MaxSchemaDepth, s.MaxMessageBytes = d.MaxSchemaBytes, d.MaxSchemaDepth, d.MaxMessageBytes
	s.ListTTLMin, s.ListTTLMax = d.ListTTLMin, d.ListTTLMax
	return s
}

func TestValidateCollectsAllSorted(t *testing.T) {
	c := Default()
	c.Router.OnModelFailure = "x"
	c.Listen = "nope"
	c.Ollama.Model = ""
	c.Servers["web"] = Server{Transport: TransportSSE}
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate(): got nil, want errors")
	}
	var keys []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var fe *FieldError
		if !errors.As(e, &fe) {
			t.Fatalf("got %T, want *FieldError", e)
		}
		keys = append(keys, fe.Key)
	}
	want := []string{"listen", "ollama.model", "router.on_model_failure", "servers.web.call_timeout", "servers.web.connect_timeout",
		"servers.web.list_ttl_max", "servers.web.list_ttl_min", "servers.web.max_message_bytes", "servers.web.max_schema_bytes", "servers.web.max_schema_depth", "servers.web.url"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys: got %v, want %v", keys, want)
	}
	if got, want := len(strings.Split(err.Error(), "\n")), len(want); got != want {
		t.Errorf("lines: got %d, want %d", got, want)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		file  string // "" = no file
		env   map[string]string
		flags map[string]any
		want  []string // substrings of the error
	}{
		{name: "unknown top-level key in file", file: `{"olama": {"host": "http://h:1"}}`, want: []string{`unknown key "olama"`}},
		{name: "unknown nested key in file", file: `{"ollama": {"hots": "http://h:1"}, "router": {"repair_attemps": 1}}`, want: []string{`unknown key "ollama.hots"`, `unknown key "router.repair_attemps"`}},
		{name: "unknown server key in file", file: `{"servers": {"fs": {"transport": "stdio", "comand": "x"}}}`, want: []string{`unknown key "servers.fs.comand"`}},
		{name: "unknown tools key in file", file: `{"servers": {"clock": {"tools": {"allowed": ["x"]}}}}`, want: []string{`unknown key "servers.clock.tools.allowed"`}},
		{name: "unknown env key", env: map[string]string{"TOOLROUTER_OLAMA__HOST": "http://h:1"}, want: []string{`TOOLROUTER_OLAMA__HOST: unknown key "olama"`}},
		{name: "unknown flag key", flags: map[string]any{"ollama.hots": "x"}, want: []string{`flags: unknown key "ollama.hots"`}},
		{name: "invalid JSON", file: `{"listen": }`, want: []string{"config.json"}},
		{name: "int that is not a number", env: map[string]string{"TOOLROUTER_ROUTER__REPAIR_ATTEMPTS": "many"}, want: []string{"repair_attempts"}},
		{name: "bool that is not a bool", env: map[string]string{"TOOLROUTER_SERVERS__CLOCK__ENABLED": "nah"}, want: []string{"enabled"}},
		{name: "duration that is not a duration", env: map[string]string{"TOOLROUTER_OLLAMA__TIMEOUT": "fast"}, want: []string{"timeout", `invalid duration "fast"`}},
		{name: "validation error from env", env: map[string]string{"TOOLROUTER_ROUTER__ON_MODEL_FAILURE": "x"}, want: []string{"invalid configuration", `router.on_model_failure: must be "no_tool" or "fail", got "x"`}},
		{name: "validation error from file", file: `{"servers": {"web": {"transport": "sse"}}}`, want: []string{`servers.web.url: required for transport "sse"`}},
		{name: "validation error from flags", flags: map[string]any{"router.repair_attempts": 11}, want: []string{`router.repair_attempts: must be between 0 and 10, got 11`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			path := ""
			if tt.file != "" {
				path = writeFile(t, tt.file)
			}
			_, err := Load(path, tt.flags)
			if err == nil {
				t.Fatalf("Load: got nil error, want one containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Load: got %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestLoadFreeFormMaps(t *testing.T) {
	clearEnv(t)
	file := `{"ollama": {"options": {"anything": [1, 2]}}, "servers": {"fs": {"transport": "stdio", "command": "x", "env": {"Whatever_Name": "1"}}}}`
	c, err := Load(writeFile(t, file), nil)
	if err != nil {
		t.Fatalf("Load: got %v, want nil (free-form maps accept any key)", err)
	}
	if got, want := c.Servers["fs"].Env["Whatever_Name"], "1"; got != want {
		t.Errorf("servers.fs.env.Whatever_Name: got %q, want %q", got, want)
	}
}

func TestLoadMissingFile(t *testing.T) {
	clearEnv(t)
	path := filepath.Join(t.TempDir(), "nope.json")
	_, err := Load(path, nil)
	if err == nil {
		t.Fatal("Load(missing file): got nil error, want one")
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("Load(missing file): got %q, want it to name %q", err, path)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(missing file): got %v, want errors.Is fs.ErrNotExist", err)
	}
}

func TestDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    Duration
		wantErr bool
	}{
		{in: `"30s"`, want: d("30s")},
		{in: `"1m30s"`, want: d("90s")},
		{in: `"-1s"`, want: d("-1s")},
		{in: `"0"`, want: 0},
		{in: `"15"`, want: d("15s")},
		{in: `15`, want: d("15s")},
		{in: `0.25`, want: d("250ms")},
		{in: `"soon"`, wantErr: true},
		{in: `""`, wantErr: true},
		{in: `true`, wantErr: true},
		{in: `1e300`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var got Duration
			err := json.Unmarshal([]byte(tt.in), &got)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Unmarshal(%s): got error %v, want error %v", tt.in, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("Unmarshal(%s): got %v, want %v", tt.in, got, tt.want)
			}
		})
	}
	t.Run("marshal", func(t *testing.T) {
		b, err := json.Marshal(struct{ T Duration }{d("90s")})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(b), `{"T":"1m30s"}`; got != want {
			t.Errorf("Marshal: got %s, want %s", got, want)
		}
		if got, want := d("2s").D(), 2*time.Second; got != want {
			t.Errorf("D(): got %v, want %v", got, want)
		}
	})
}

func TestToolFilterPermits(t *testing.T) {
	tests := []struct {
		name   string
		filter ToolFilter
		tool   string
		want   bool
	}{
		{"empty filter permits all", ToolFilter{}, "anything", true},
		{"allow exact", ToolFilter{Allow: []string{"now"}}, "now", true},
		{"allow excludes others", ToolFilter{Allow: []string{"now"}}, "convert", false},
		{"allow glob", ToolFilter{Allow: []string{"read_*"}}, "read_file", true},
		{"deny exact", ToolFilter{Deny: []string{"delete"}}, "delete", false},
		{"deny leaves others", ToolFilter{Deny: []string{"delete"}}, "read", true},
		{"deny wins over allow", ToolFilter{Allow: []string{"*"}, Deny: []string{"write_*"}}, "write_file", false},
		{"glob class", ToolFilter{Allow: []string{"get_[ab]"}}, "get_b", true},
		{"bad pattern matches nothing", ToolFilter{Allow: []string{"a["}}, "a", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.filter.Permits(tt.tool); got != tt.want {
				t.Errorf("Permits(%q): got %v, want %v", tt.tool, got, tt.want)
			}
		})
	}
}

func TestHelpers(t *testing.T) {
	c := Default()
	c.Servers["slow"] = Server{Transport: TransportStdio, Command: "x", CallTimeout: d("1m")}
	c.Servers["fast"] = Server{Transport: TransportStdio, Command: "x", CallTimeout: d("5s"), Enabled: ptr(true)}
	c.Servers["off"] = Server{Transport: TransportStdio, Command: "x", Enabled: ptr(false)}
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"EnabledServers", c.EnabledServers(), []string{"calculator", "clock", "fast", "slow"}},
		{"BuiltinName default", Server{}.BuiltinName("clock"), "clock"},
		{"BuiltinName explicit", Server{Builtin: "calculator"}.BuiltinName("calc"), "calculator"},
		{"IsEnabled nil", Server{}.IsEnabled(), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !reflect.DeepEqual(tt.got, tt.want) {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}
