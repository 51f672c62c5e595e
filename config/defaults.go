package config

import (
	"time"

	"toolrouter/approval"
	"toolrouter/console"
	"toolrouter/council"
	"toolrouter/inventory"
	"toolrouter/inventory/builtin"
	"toolrouter/limits"
	"toolrouter/provider"
	"toolrouter/router"
	"toolrouter/usage"
)

// Default returns the built-in defaults: a configuration that runs with
// nothing installed but Ollama, with the built-in calculator and clock
// servers. It is the one place a default value is written; the parts that
// take settings (router.New, council.New, server.New) fill a zero field from
// it. Each call returns fresh maps.
func Default() Config {
	return Config{
		Listen: "127.0.0.1:8090",
		Ollama: Ollama{
			Host:      "http://127.0.0.1:11434",
			Model:     "qwen2.5:7b",
			KeepAlive: Duration(10 * time.Minute),
			Timeout:   Duration(30 * time.Second),
			// A few times the largest sane answer: a tool selection or arguments are a few KiB,
			// a council answer some tens.
			MaxResponseBytes: provider.DefaultMaxResponseBytes,
			Options:          router.DefaultOptions(),
		},
		Router: Router{
			RepairAttempts:   router.DefaultRepairAttempts,
			SelectTimeout:    Duration(router.DefaultPhaseTimeout),
			ArgumentsTimeout: Duration(router.DefaultPhaseTimeout),
			ExecuteTimeout:   Duration(router.DefaultPhaseTimeout),
			OnModelFailure:   router.DefaultOnModelFailure,
			MaxQueryBytes:    router.DefaultMaxQueryBytes,
			MaxResultBytes:   router.DefaultMaxResultBytes,
			MaxHistory:       router.DefaultMaxHistory,
			Mode:             router.DefaultMode,
			Reasoning:        router.DefaultReasoning,
			MaxToolCalls:     router.DefaultMaxToolCalls,
			ParallelCalls:    router.DefaultParallelCalls,
			Deadline:         Duration(router.DefaultDeadline),
			ContextReserve:   router.DefaultContextReserve,
			SharedPrefix:     true,
			Provider:         DefaultProvider,
		},
		Log:        Log{Requests: RequestLogInfo},
		Trajectory: Trajectory{MaxBytes: 64 << 20, MaxFiles: 5, QueueSize: 1024},
		Retrieval: Retrieval{Enabled: true, MaxSearches: 1, SearchWhenWeak: true, LearnExamples: true, ExamplesPerTool: 20, GeneratePerMinute: 30, GenerateMax: 1000,
			Match: Match{Loose: false, Abbreviations: true, Dates: true, Derivations: true, Bigrams: true, Related: true, Values: true}},
		MCPServer: MCPServer{ExposeInventory: false, SessionIdleTTL: Duration(30 * time.Minute),
			MaxSessions: 1000, MaxSessionsPerIdentity: 100},
		HTTP: HTTP{
			BodyLimit:       1 << 20,
			ReadTimeout:     Duration(10 * time.Second),
			WriteTimeout:    Duration(120 * time.Second),
			RequestTimeout:  Duration(120 * time.Second),
			ShutdownTimeout: Duration(10 * time.Second),
			AllowedOrigins:  []string{},
			AllowedHosts:    []string{},
		},
		Providers: map[string]Provider{
			DefaultProvider: {Type: ProviderOllama},
		},
		Council: Council{
			Members:            []Member{},
			Chairman:           withName(defaultMember(), "chairman"),
			PeerReview:         true,
			Quorum:             2,
			MaxEvidenceBytes:   council.DefaultMaxEvidenceBytes,
			StreamDeliberation: true,
		},
		Metrics: Metrics{Enabled: true},
		UI:      UI{Enabled: true, RecentRequests: 100, RecentRequestsBytes: console.DefaultRecentBytes},
		Limits:  Limits{OnRedisDown: limits.DefaultOnRedisDown, Replicas: 1, RedisTimeout: Duration(limits.DefaultRedisTimeout)},
		// inventory.DefaultChecks, router.DefaultAutoExecute say why they are what they are,
		// and approval.DefaultShare.
		Safety: Safety{Checks: inventory.DefaultChecks(), AutoExecute: router.DefaultAutoExecute, ApprovalTTL: Duration(15 * time.Minute),
			MaxHeldPerIdentity: approval.DefaultShare.Calls, MaxHeldBytesPerIdentity: approval.DefaultShare.Bytes,
			MaxHeldArgumentBytes: approval.DefaultShare.ArgumentBytes},
		Usage: Usage{
			Path:          "toolrouter-usage.db",
			QueueSize:     usage.DefaultQueueSize,
			BatchSize:     usage.DefaultBatchSize,
			FlushInterval: Duration(usage.DefaultFlushInterval),
			WriteTimeout:  Duration(usage.DefaultWriteTimeout),
			Retention:     Duration(usage.DefaultRetention),
		},
		Servers: map[string]Server{
			"calculator": builtinServer("calculator"),
			"clock":      builtinServer("clock"),
		},
	}
}

// defaultServer holds what a server gets for the keys it does not set: the inventory's defaults.
func defaultServer() Server { return inventory.DefaultServerConfig() }

// defaultMember holds what a council member gets for the keys it does not
// set; its name defaults to its model.
func defaultMember() Member {
	return Member{Provider: DefaultProvider, Timeout: Duration(60 * time.Second)}
}

// builtinServer is the default configuration of the named built-in server.
func builtinServer(name string) Server {
	s := defaultServer()
	enabled := true
	s.Purpose, s.Transport, s.Enabled, s.Builtin = builtin.Purpose(name), TransportBuiltin, &enabled, name
	return s
}

func withName(m Member, name string) Member {
	m.Name = name
	return m
}

// knownBuiltins lists the built-in servers a server with transport "builtin"
// may name.
func knownBuiltins() []string { return builtin.Names() }

// applyEntryDefaults gives every server and council member in raw, the merged
// configuration, the defaults of the keys it does not set: defaultServer's
// timeouts and bounds; for a built-in server, its built-in's name (the server's own
// name; the inventory gives a built-in without a purpose its built-in's
// purpose); defaultMember's provider and timeout, and the member's
// model as its name. The chairman gets its defaults from Default, like every
// other single key.
func applyEntryDefaults(raw map[string]any) {
	ds := defaultServer()
	servers, _ := raw["servers"].(map[string]any)
	for name, v := range servers {
		s, ok := v.(map[string]any)
		if !ok {
			continue // decode reports the type error
		}
		setMissing(s, "connect_timeout", ds.ConnectTimeout.String())
		setMissing(s, "call_timeout", ds.CallTimeout.String())
		setMissing(s, "max_schema_bytes", ds.MaxSchemaBytes)
		setMissing(s, "max_schema_depth", ds.MaxSchemaDepth)
		setMissing(s, "max_message_bytes", ds.MaxMessageBytes)
		setMissing(s, "list_ttl_min", ds.ListTTLMin.String())
		setMissing(s, "list_ttl_max", ds.ListTTLMax.String())
		if s["transport"] == string(TransportBuiltin) {
			setEmpty(s, "builtin", name)
		}
	}
	dm := defaultMember()
	council, _ := raw["council"].(map[string]any)
	members, _ := council["members"].([]any)
	for _, v := range members {
		m, ok := v.(map[string]any)
		if !ok {
			continue // decode reports the type error
		}
		setMissing(m, "provider", dm.Provider)
		setMissing(m, "timeout", dm.Timeout.String())
		setEmpty(m, "name", m["model"])
	}
}

// setMissing sets m[key] to v when m has no such key.
func setMissing(m map[string]any, key string, v any) {
	if _, ok := m[key]; !ok {
		m[key] = v
	}
}

// setEmpty sets m[key] to v when m has no such key or it holds "".
func setEmpty(m map[string]any, key string, v any) {
	switch m[key] {
	case nil, "":
		m[key] = v
	}
}
