// Package config loads toolrouter's configuration and validates it once at
// start-up.
//
// Configuration is layered with koanf; later layers win:
//
//  1. built-in defaults (Default), with ollama.host from OLLAMA_HOST when it is set,
//  2. a JSON config file (config.json by default, -config FILE), whose paths
//     (fileRelativeKeys, servers_from, servers.NAME.cwd and .command) are
//     relative to its directory,
//  3. the servers of the MCP clients' files that servers_from and -mcp-config
//     name (package mcpconfig),
//  4. environment variables prefixed TOOLROUTER_, with "__" separating
//     nesting levels and names lowercased, e.g. TOOLROUTER_OLLAMA__HOST,
//     TOOLROUTER_ROUTER__REPAIR_ATTEMPTS=3,
//     TOOLROUTER_SERVERS__CLOCK__ENABLED=false,
//  5. command-line flags the user actually set, passed to Load as koanf
//     keys ("ollama.host", "listen", ...).
//
// Every ollama.host and "ollama" provider base_url is read in the forms
// OLLAMA_HOST takes ("host", ":port", "[::1]:11434", "https://h/prefix") and
// kept as an absolute URL. A server's key is its id, derived from the name the
// configuration gives it (mcpconfig.ServerID: "GitHub" is "github"), the name
// kept as its DisplayName; the config file's servers' url, headers and env
// have their ${env:VAR} and ${VAR} expanded.
//
// Maps are merged key by key, so the built-in servers calculator and clock
// are always present unless a later layer disables them with
// "enabled": false.
//
// Every default value is written once, in Default; a server or council
// member gets the defaults of the keys it does not set in one function next
// to it. The parts that take settings (router.New, council.New, server.New)
// fill a zero field from Default. A built-in server's purpose is its package's
// (builtin.Purpose).
//
// Unknown keys in the file, the environment or the flags are rejected so
// that typos do not go unnoticed; only servers.<name>.env,
// servers.<name>.headers, ollama.options and the options of council members
// are free-form. A key that would hold a secret (api_key, token, ...) is
// refused with a pointer to providers.<name>.api_key_env (or, under auth, to
// auth.keys[N].sha256 and .env): secrets are read from the environment
// variable named there, never from configuration. The environment variables
// that auth.keys[*].env name hold API keys, not settings, so the environment
// layer skips them even when they start with TOOLROUTER_.
//
// The flat callers access lists are gone: a configuration that still has
// callers is refused with the orgs that replace them (access.CallersError).
//
// Council members (a list) come from the config file; each gets provider
// "ollama", timeout 60s and its model as its name unless it sets them. The
// provider "ollama" always exists and, without a base_url, follows
// ollama.host.
//
// # Timeouts
//
// Timeouts nest: each bounds a part of the one above it, so an inner timeout
// longer than its outer one would never take effect. Validate refuses that,
// naming both keys:
//
//	http.write_timeout >= http.request_timeout
//	    a streamed response is written within one write deadline
//	http.request_timeout >= router.deadline
//	    the whole HTTP request (for /v1/answer, the council too) contains the routing
//	router.deadline >= router.select_timeout, router.arguments_timeout, router.execute_timeout
//	    one routing request (every round) contains each phase and tool call
//	router.select_timeout, router.arguments_timeout >= ollama.timeout
//	    a phase contains its model calls (phase 2 also its repairs)
//	http.request_timeout >= council.stage_timeout, council.members[*].timeout, council.chairman.timeout
//	    when the council is enabled
//
// A tool call runs for at most min(router.execute_timeout,
// servers.NAME.call_timeout): the server's own timeout may only lower the
// router's, so it is not ordered against it. servers.NAME.connect_timeout
// bounds connecting to a server, outside any request. The defaults are
// 120s >= 60s >= 30s (each phase and tool call) >= 30s (one model call).
package config

import (
	"path"
	"slices"

	"toolrouter/access"
	"toolrouter/auth"
	"toolrouter/inventory"
	"toolrouter/limits"
	"toolrouter/router"
)

// DefaultPath is the config file toolrouter reads when -config is not given.
const DefaultPath = "config.json"

// EnvPrefix is the prefix of environment variables that override the
// configuration.
const EnvPrefix = "TOOLROUTER_"

// Config is toolrouter's whole configuration.
type Config struct {
	Listen string `koanf:"listen" json:"listen"`
	Ollama Ollama `koanf:"ollama" json:"ollama"`
	Router Router `koanf:"router" json:"router"`
	HTTP   HTTP   `koanf:"http" json:"http"`
	// Trajectory is the optional log of routing steps for fine-tuning.
	Trajectory Trajectory `koanf:"trajectory" json:"trajectory"`
	// Retrieval ranks the tools for each query when the inventory is too large to show whole.
	Retrieval Retrieval         `koanf:"retrieval" json:"retrieval"`
	Servers   map[string]Server `koanf:"servers" json:"servers"`
	// ServersFrom are MCP clients' files whose servers are served too (Claude Desktop, Cursor,
	// Windsurf, Claude Code, VS Code; see package mcpconfig), relative to the config file.
	ServersFrom []string `koanf:"servers_from" json:"servers_from,omitempty"`
	// Inputs are values for the ${input:ID} variables of VS Code's files, by input id; a password
	// input is read only from its environment variable (mcpconfig.InputEnv).
	Inputs map[string]string `koanf:"inputs" json:"inputs,omitempty"`
	// Providers are the model servers the router and the council use, by name.
	Providers map[string]Provider `koanf:"providers" json:"providers"`
	// Council is the council of models that synthesises answers; no members disables it.
	Council Council `koanf:"council" json:"council"`
	// Auth is caller authentication: API keys, JWTs, admins and whether requests without a
	// credential are served (see package auth).
	Auth auth.Config `koanf:"auth" json:"auth"`
	// Orgs is the org/team/agent hierarchy and the tools each level may use (see package access);
	// none: every identity may use every tool. It replaces the flat callers lists, which Load
	// refuses with the orgs to paste instead.
	Orgs access.Orgs `koanf:"orgs" json:"orgs,omitempty"`
	// Log configures what toolrouter logs beside its own events.
	Log Log `koanf:"log" json:"log"`
	// Limits are the rate limits' settings: those of requests without a credential, and where
	// the counters live (in process, or in Redis shared by every replica). Each org, team and
	// agent sets its own limits in orgs.
	Limits Limits `koanf:"limits" json:"limits"`
	// Usage is the per-request usage records (see package usage).
	Usage Usage `koanf:"usage" json:"usage"`
	// Metrics is the Prometheus metrics endpoint.
	Metrics Metrics `koanf:"metrics" json:"metrics"`
	// MCPServer configures toolrouter as an MCP server (/mcp and `toolrouter mcp`).
	MCPServer MCPServer `koanf:"mcp_server" json:"mcp_server"`
	// UI is the operator console served at /ui (see package console).
	UI UI `koanf:"ui" json:"ui"`
	// Safety is what the inventory does about changed and poisoned tool definitions.
	Safety Safety `koanf:"safety" json:"safety"`
}

// UI configures the operator console, /ui: pages served by the binary itself over the API.
type UI struct {
	// Enabled serves the console at /ui, and its recent requests at /ui/api/requests.
	Enabled bool `koanf:"enabled" json:"enabled"`
	// RecentRequests is how many of the last request reports the console keeps in memory for
	// its recent requests page (admins only), each whole: 0 keeps none.
	RecentRequests int `koanf:"recent_requests" json:"recent_requests"`
	// RecentRequestsBytes bounds the bytes those reports hold together (as their JSON); the
	// oldest are dropped to stay under it.
	RecentRequestsBytes int `koanf:"recent_requests_bytes" json:"recent_requests_bytes"`
}

// MaxRecentRequests bounds ui.recent_requests: each report is kept whole, tool results included.
const MaxRecentRequests = 10000

// MinResultBytes is the least router.max_result_bytes: a result's text must keep a readable head
// and tail.
const MinResultBytes = 1 << 10

// Metrics configures GET /metrics, the Prometheus metrics.
type Metrics struct {
	// Enabled serves GET /metrics on the API's listener (to admins only when callers
	// authenticate).
	Enabled bool `koanf:"enabled" json:"enabled"`
	// Listen, if not "", also serves /metrics, without authentication, on a listener of its own
	// ("127.0.0.1:9090"), for a scraper on a network the API's callers do not reach.
	Listen string `koanf:"listen" json:"listen"`
}

// MCPServer configures toolrouter as an MCP server: the tools route and answer always, and the
// caller's inventory when ExposeInventory is set.
type MCPServer struct {
	// ExposeInventory lists each tool the caller may use beside route and answer, under an
	// MCP-safe name, called through the same access list, schema validation and timeouts as a
	// routed call.
	ExposeInventory bool `koanf:"expose_inventory" json:"expose_inventory"`
	// SessionIdleTTL ends an /mcp session nobody has used for this long, as a DELETE would:
	// a client that leaves without one does not hold the session's memory for ever.
	SessionIdleTTL Duration `koanf:"session_idle_ttl" json:"session_idle_ttl"`
	// MaxSessions bounds the /mcp sessions open at once, all identities together; an initialize
	// over it is refused (429 too_many_sessions).
	MaxSessions int `koanf:"max_sessions" json:"max_sessions"`
	// MaxSessionsPerIdentity bounds the /mcp sessions one identity has open at once.
	MaxSessionsPerIdentity int `koanf:"max_sessions_per_identity" json:"max_sessions_per_identity"`
}

// Log configures the request log.
type Log struct {
	// Requests is the level of the one line logged per request, once it has ended: "info",
	// "debug" or "off". Readiness probes are logged at debug (none when off); a request that
	// failed on the server's side (a 5xx) is logged at warn whatever this says.
	Requests RequestLog `koanf:"requests" json:"requests"`
}

// RequestLog is the level of the request log (log.requests).
type RequestLog string

// Values of RequestLog.
const (
	RequestLogInfo  RequestLog = "info"
	RequestLogDebug RequestLog = "debug"
	RequestLogOff   RequestLog = "off"
)

// Limits configures rate limiting (see package limits).
type Limits struct {
	// Anonymous are the limits of requests served without a credential (auth.Anonymous).
	Anonymous access.Limits `koanf:"anonymous" json:"anonymous"`
	// RedisURL, when set, keeps the counters in Redis ("redis://host:6379/0", "rediss://..."),
	// so that every replica shares one budget; "" keeps them in process.
	RedisURL string `koanf:"redis_url" json:"redis_url"`
	// OnRedisDown says what admission does while Redis does not answer within RedisTimeout.
	OnRedisDown RedisDown `koanf:"on_redis_down" json:"on_redis_down"`
	// Replicas is how many replicas share the Redis budget: with Redis down and OnRedisDown
	// "local", each enforces its share, every limit divided by Replicas.
	Replicas int `koanf:"replicas" json:"replicas"`
	// RedisTimeout bounds each Redis round trip.
	RedisTimeout Duration `koanf:"redis_timeout" json:"redis_timeout"`
}

// RedisDown is what rate limiting does while Redis is down (limits.on_redis_down): package
// limits'.
type RedisDown = limits.RedisDown

// Values of RedisDown.
const (
	RedisLocal    = limits.RedisLocal
	RedisFailOpen = limits.RedisFailOpen
	RedisClosed   = limits.RedisClosed
)

// Ollama configures the model server and the model used for routing.
type Ollama struct {
	// Host is the base URL of the Ollama server.
	Host string `koanf:"host" json:"host"`
	// Model is the model name, e.g. "qwen2.5:7b".
	Model string `koanf:"model" json:"model"`
	// KeepAlive is passed to Ollama as keep_alive: how long the model stays
	// loaded. Negative keeps it loaded forever, 0 unloads it at once.
	KeepAlive Duration `koanf:"keep_alive" json:"keep_alive"`
	// Timeout bounds a single model call.
	Timeout Duration `koanf:"timeout" json:"timeout"`
	// MaxResponseBytes bounds one model answer (its text, thinking, tool calls and logprobs,
	// summed over a stream) from any provider, the council's members included: reading stops past it and the
	// call fails as a model failure. One line of a response may be twice as long plus 64 KiB.
	MaxResponseBytes int `koanf:"max_response_bytes" json:"max_response_bytes"`
	// Options are passed to Ollama as model options. Whole numbers are
	// normalised to int, other numbers to float64; numeric and boolean
	// strings from the environment are converted.
	Options map[string]any `koanf:"options" json:"options"`
}

// Router configures query routing.
type Router struct {
	// RepairAttempts is how many times invalid tool arguments are sent back
	// to the model for repair (0..10).
	RepairAttempts int `koanf:"repair_attempts" json:"repair_attempts"`
	// SelectTimeout bounds phase 1, choosing a tool.
	SelectTimeout Duration `koanf:"select_timeout" json:"select_timeout"`
	// ArgumentsTimeout bounds phase 2, producing arguments, including repairs.
	ArgumentsTimeout Duration `koanf:"arguments_timeout" json:"arguments_timeout"`
	// ExecuteTimeout caps a tool call; a server's call_timeout may lower it.
	ExecuteTimeout Duration `koanf:"execute_timeout" json:"execute_timeout"`
	// OnModelFailure says what to do when the model fails: answer with no
	// tool or fail the request.
	OnModelFailure Failure `koanf:"on_model_failure" json:"on_model_failure"`
	// MaxQueryBytes is the largest accepted query.
	MaxQueryBytes int `koanf:"max_query_bytes" json:"max_query_bytes"`
	// MaxHistory is the largest number of history messages used.
	MaxHistory int `koanf:"max_history" json:"max_history"`
	// MaxResultBytes bounds a tool result's text and its structured content's JSON, each apart,
	// before anything keeps, logs, shows or returns them (router.Result's bound).
	MaxResultBytes int `koanf:"max_result_bytes" json:"max_result_bytes"`
	// Think lets a thinking model (qwen3, say) think before its phase-1 and phase-2 answers.
	// Off (the default), Ollama applies the format schema from the first token; on, only after
	// the thinking ends, and the answer takes longer.
	Think bool `koanf:"think" json:"think"`
	// SharedPrefix opens each phase-2 prompt with phase 1's system prompt, so a model server
	// with one cache slot keeps the inventory's prefill between the phases.
	SharedPrefix bool `koanf:"shared_prefix" json:"shared_prefix"`
	// Prefill writes the parts of a constrained answer its schema fixes (keys, punctuation) as
	// the start of the model's turn, so the model decodes only the values it decides. Unset, it
	// is on when the router's provider is Ollama and off for OpenAI-compatible servers (not all
	// continue a final assistant message, and each continuation is a billed call there); see
	// PrefillOn.
	Prefill *bool `koanf:"prefill" json:"prefill,omitempty"`
	// Mode is "two_phase" (selection then arguments, constrained JSON) or
	// "native" (Ollama's tools field and tool_calls loop).
	Mode Mode `koanf:"mode" json:"mode"`
	// Reasoning is what phase 1 writes besides its decision: "none" (no reasoning field; the
	// decision fields come first), "brief" (one sentence of at most 160 characters before the
	// decision) or "full" (up to 600 characters of reasoning first, and a task per call). See
	// docs/configuration.md for the cost of each.
	Reasoning Reasoning `koanf:"reasoning" json:"reasoning"`
	// MinConfidence, when above 0, is the lowest confidence (0..1, from the model's own token
	// probabilities, which Ollama sends) at which phase 1's choice of tools is followed; below it
	// the round makes no call and the outcome is degraded "low_confidence". 0 (the default) turns
	// the check off. It needs two-phase mode and an Ollama provider.
	MinConfidence float64 `koanf:"min_confidence" json:"min_confidence"`
	// MaxToolCalls is the ceiling on tool calls per request (1..32); a
	// request may lower it, never raise it.
	MaxToolCalls int `koanf:"max_tool_calls" json:"max_tool_calls"`
	// ParallelCalls bounds how many calls of one round run at once (1..32).
	ParallelCalls int `koanf:"parallel_calls" json:"parallel_calls"`
	// Deadline bounds a whole routing request, all rounds included; a
	// request may lower it.
	Deadline Duration `koanf:"deadline" json:"deadline"`
	// ContextReserve is the number of tokens of num_ctx kept free for the
	// model's answer when earlier results are trimmed to fit.
	ContextReserve int `koanf:"context_reserve" json:"context_reserve"`
	// Provider names the provider (a key of providers) serving the
	// tool-calling model ollama.model; "ollama" by default.
	Provider string `koanf:"provider" json:"provider"`
}

// PrefillOn is router.prefill for the router's provider: as set, else on for Ollama.
func (c Config) PrefillOn() bool {
	if c.Router.Prefill != nil {
		return *c.Router.Prefill
	}
	p, _ := c.Provider(c.Router.Provider)
	return p.Type == ProviderOllama
}

// Mode is the routing mode (router.mode), Reasoning what phase 1 writes besides its decision
// (router.reasoning): package router's.
type (
	Mode      = router.Mode
	Reasoning = router.Reasoning
)

// Values of Reasoning.
const (
	ReasoningNone  = router.ReasoningNone
	ReasoningBrief = router.ReasoningBrief
	ReasoningFull  = router.ReasoningFull
)

// Reasonings are the values of Reasoning, the fewest tokens first.
var Reasonings = router.Reasonings

// Values of Mode.
const (
	ModeTwoPhase = router.TwoPhase
	ModeNative   = router.Native
)

// Retrieval configures the shortlist: when the tools a caller may use do not fit the phase-1
// prompt budget, phase 1 is shown the best-ranked tools that do (BM25F over names, purposes,
// descriptions, parameters and examples; optionally fused with embeddings).
type Retrieval struct {
	// Enabled turns ranking on; off, phase 1 always shows every tool (and a prompt over the
	// window is refused).
	Enabled bool `koanf:"enabled" json:"enabled"`
	// PromptBudget is the tokens phase 1 may spend on its tool list; 0 is half of
	// ollama.options.num_ctx minus router.context_reserve.
	PromptBudget int `koanf:"prompt_budget" json:"prompt_budget"`
	// MaxSearches is how many times per request phase 1 may ask to search beyond the
	// shortlist (0..4); each search takes one call of router.max_tool_calls.
	MaxSearches int `koanf:"max_searches" json:"max_searches"`
	// SearchWhenWeak makes phase 1 search before it may answer "no tool" when the shortlist
	// rests on little: ranked lexically, with fewer than half of the query's words in any
	// tool's text (a question in another language than the tools', say). Needs MaxSearches.
	SearchWhenWeak bool `koanf:"search_when_weak" json:"search_when_weak"`
	// EmbedModel, when set, is an Ollama embedding model (e.g. "nomic-embed-text") whose
	// ranking is fused with BM25F; without it, or while it is down, ranking is lexical.
	EmbedModel string `koanf:"embed_model" json:"embed_model,omitempty"`
	// VectorCache is the file of cached tool vectors ("": beside the examples file, or in
	// memory when there is none).
	VectorCache string `koanf:"vector_cache" json:"vector_cache,omitempty"`
	// LearnExamples keeps the query of each request that was not degraded as an example of
	// every tool that answered it without error: in ExamplesPath, or in memory when there is
	// none; at most ExamplesPerTool per tool either way.
	LearnExamples bool `koanf:"learn_examples" json:"learn_examples"`
	// ExamplesFile keeps learned examples ("": examples.jsonl beside trajectory.path).
	ExamplesFile string `koanf:"examples_file" json:"examples_file,omitempty"`
	// ExamplesPerTool bounds the learned examples of one tool (the oldest go first).
	ExamplesPerTool int `koanf:"examples_per_tool" json:"examples_per_tool"`
	// Pinned are tools always shown to phase 1, first, whatever the query: patterns as access
	// lists take them ("calculator.*", "clock.current_time", "fs"). A pinned tool counts against
	// PromptBudget; pinned tools that do not fit it stop the start.
	Pinned []string `koanf:"pinned" json:"pinned,omitempty"`
	// GenerateExamples, when above 0, has the router's model write this many questions a user
	// might ask for each tool, once per tool definition and model, in the background; they are
	// ranked as configured examples are, and kept beside the examples file.
	GenerateExamples int `koanf:"generate_examples" json:"generate_examples"`
	// GeneratePerMinute paces those model calls; GenerateMax caps them per process run.
	GeneratePerMinute int `koanf:"generate_per_minute" json:"generate_per_minute"`
	GenerateMax       int `koanf:"generate_max" json:"generate_max"`
	// Match says how a query's words meet a tool's beyond their stems (retrieve.Matching).
	Match Match `koanf:"match" json:"match"`
}

// Match lists the ways a query's words meet a tool's beyond their stems.
type Match struct {
	// Loose: a looser stem of a tool name's words ("discovered" finds get_discoverer); off by
	// default, since it did not pay on the benchmark's held-out parts.
	Loose bool `koanf:"loose" json:"loose"`
	// Abbreviations: a tool name's short words as abbreviations ("calculate" finds calc_*).
	Abbreviations bool `koanf:"abbreviations" json:"abbreviations"`
	// Dates: a query that asks for or names a date meets the word "date".
	Dates bool `koanf:"dates" json:"dates"`
	// Derivations: derivational suffixes stripped ("calculation", "calculator" → calcul).
	Derivations bool `koanf:"derivations" json:"derivations"`
	// Bigrams: scripts written without spaces (Chinese, Japanese, Thai) matched by pairs of
	// characters.
	Bigrams bool `koanf:"bigrams" json:"bigrams"`
	// Related: a query word's derivationally related nouns and verbs from WordNet
	// ("multiplication" finds multiply), at a third of a word's weight.
	Related bool `koanf:"related" json:"related"`
	// Values: a question's values (a URL, a date, a unit, an amount of money, …) meet the tools
	// whose parameters take them (retrieve.Matching.NoValues).
	Values bool `koanf:"values" json:"values"`
}

// GeneratedPath is where generated examples are kept: generated_examples.jsonl beside the examples
// file, else beside the vector cache; "" (in memory) when neither is set.
func (c Config) GeneratedPath() string {
	for _, p := range []string{c.ExamplesPath(), c.Retrieval.VectorCache} {
		if p != "" {
			return path.Join(path.Dir(p), "generated_examples.jsonl")
		}
	}
	return ""
}

// ExamplesPath is where learned examples are kept: examples_file, or examples.jsonl beside the
// trajectory log; "" when neither is set.
func (c Config) ExamplesPath() string {
	switch {
	case c.Retrieval.ExamplesFile != "":
		return c.Retrieval.ExamplesFile
	case c.Trajectory.Path != "":
		return path.Join(path.Dir(c.Trajectory.Path), "examples.jsonl")
	}
	return ""
}

// Trajectory configures the optional JSON Lines log of routing steps.
type Trajectory struct {
	// Path is the file to write; empty disables the log.
	Path string `koanf:"path" json:"path"`
	// MaxBytes rotates the file when it would grow past this size.
	MaxBytes int64 `koanf:"max_bytes" json:"max_bytes"`
	// MaxFiles is how many rotated files are kept.
	MaxFiles int `koanf:"max_files" json:"max_files"`
	// QueueSize is how many records wait for the writer before new ones are dropped.
	QueueSize int `koanf:"queue_size" json:"queue_size"`
}

// Usage configures the usage records: one per served request (who, which endpoint, the tools
// and models it called, tokens and durations), written off the request path in batches.
type Usage struct {
	// Path is the SQLite database file. Given in the config file, a relative path is taken from
	// the file's directory, and the default (not given) is beside the file too; given in the
	// environment or a flag, or without a config file, it is relative to the working directory.
	// "" turns usage records off unless PostgresURL is set.
	Path string `koanf:"path" json:"path"`
	// PostgresURL, when set, writes to this PostgreSQL database instead of Path, so that many
	// replicas share one set of records. Its password comes from PGPASSWORD or a password file,
	// never from configuration.
	PostgresURL string `koanf:"postgres_url" json:"postgres_url"`
	// QueueSize is how many records wait for the writer; a record that finds the queue full is
	// dropped and counted.
	QueueSize int `koanf:"queue_size" json:"queue_size"`
	// BatchSize is the most records written in one transaction.
	BatchSize int `koanf:"batch_size" json:"batch_size"`
	// FlushInterval is the longest a record waits in the queue before its batch is written.
	FlushInterval Duration `koanf:"flush_interval" json:"flush_interval"`
	// WriteTimeout bounds one batch's transaction.
	WriteTimeout Duration `koanf:"write_timeout" json:"write_timeout"`
	// Retention is how long records are kept; 0 keeps them forever.
	Retention Duration `koanf:"retention" json:"retention"`
}

// Enabled reports whether usage records are kept.
func (u Usage) Enabled() bool { return u.Path != "" || u.PostgresURL != "" }

// HTTP configures toolrouter's HTTP server.
type HTTP struct {
	// BodyLimit is the largest accepted request body in bytes.
	BodyLimit    int      `koanf:"body_limit" json:"body_limit"`
	ReadTimeout  Duration `koanf:"read_timeout" json:"read_timeout"`
	WriteTimeout Duration `koanf:"write_timeout" json:"write_timeout"`
	// RequestTimeout bounds a whole /v1/route request.
	RequestTimeout  Duration `koanf:"request_timeout" json:"request_timeout"`
	ShutdownTimeout Duration `koanf:"shutdown_timeout" json:"shutdown_timeout"`
	// AllowedOrigins are the browser origins ("https://app.example.com") whose requests are
	// served; a request with any other Origin header is refused (403).
	AllowedOrigins []string `koanf:"allowed_origins" json:"allowed_origins"`
	// AllowedHosts are the Host headers served beside the listen address's own (and, on
	// loopback or every interface, localhost, 127.0.0.1 and [::1] with its port): "name:port",
	// or "name" for that name on any port. A request for any other host is refused (403), which
	// defeats DNS rebinding; /healthz answers any host.
	AllowedHosts []string `koanf:"allowed_hosts" json:"allowed_hosts"`
}

// Failure is the policy when the model fails (router.on_model_failure): package router's.
type Failure = router.FailureMode

// Values of Failure.
const (
	// FailNoTool answers as if no tool matched.
	FailNoTool = router.NoTool
	// FailError fails the request.
	FailError = router.Fail
)

// Transport is how toolrouter talks to an MCP server (package inventory's).
type Transport = inventory.Transport

// Values of Transport.
const (
	TransportBuiltin        = inventory.TransportBuiltin
	TransportStdio          = inventory.TransportStdio
	TransportStreamableHTTP = inventory.TransportStreamableHTTP
	TransportSSE            = inventory.TransportSSE
)

// transports lists the valid transports.
func transports() []Transport { return inventory.Transports() }

// ProviderType is the wire protocol of a model provider.
type ProviderType string

// Values of ProviderType.
const (
	// ProviderOllama is Ollama's /api/chat.
	ProviderOllama ProviderType = "ollama"
	// ProviderOpenAI is any OpenAI-compatible /chat/completions endpoint.
	ProviderOpenAI ProviderType = "openai"
)

// DefaultProvider is the provider that is always configured: Ollama at
// ollama.host.
const DefaultProvider = "ollama"

// Provider configures one model server; its name is its key in
// Config.Providers.
type Provider struct {
	Type ProviderType `koanf:"type" json:"type"`
	// BaseURL is the server's API base URL: for "openai" the URL that
	// /chat/completions is appended to ("https://api.openai.com/v1"); for
	// "ollama" the server's URL, empty meaning ollama.host.
	BaseURL string `koanf:"base_url" json:"base_url"`
	// APIKeyEnv names the environment variable holding the API key ("openai"
	// only). The key itself never goes in configuration.
	APIKeyEnv string `koanf:"api_key_env" json:"api_key_env,omitempty"`
}

// Provider returns the named provider with its base URL resolved (an
// "ollama" provider without one gets ollama.host).
func (c Config) Provider(name string) (Provider, bool) {
	p, ok := c.Providers[name]
	if ok && p.Type == ProviderOllama && p.BaseURL == "" {
		p.BaseURL = c.Ollama.Host
	}
	return p, ok
}

// Council configures the council of models (see package council).
type Council struct {
	// Members answer in parallel; empty disables the council. Lists come
	// from the config file only.
	Members []Member `koanf:"members" json:"members"`
	// Chairman writes the final answer from the members' answers.
	Chairman Member `koanf:"chairman" json:"chairman"`
	// PeerReview runs the anonymised ranking stage.
	PeerReview bool `koanf:"peer_review" json:"peer_review"`
	// Quorum is how many members must answer for the council to go on.
	Quorum int `koanf:"quorum" json:"quorum"`
	// StageTimeout bounds each stage as a whole; 0 leaves only the
	// members' timeouts and the request's.
	StageTimeout Duration `koanf:"stage_timeout" json:"stage_timeout"`
	// MaxEvidenceBytes bounds each tool result shown to the council, or to a chat completion's
	// model (head and tail kept);
	// a negative value shows results whole.
	MaxEvidenceBytes int `koanf:"max_evidence_bytes" json:"max_evidence_bytes"`
	// StreamDeliberation shows stages 1 and 2 as reasoning (reasoning_content) in a streamed chat
	// completion of model "council", before the chairman's answer; a request's
	// reasoning_effort "none" turns it off for that request.
	StreamDeliberation bool `koanf:"stream_deliberation" json:"stream_deliberation"`
	// ReasoningNames names the members in that reasoning; otherwise they are their answers'
	// anonymous labels ("Response B").
	ReasoningNames bool `koanf:"reasoning_names" json:"reasoning_names"`
}

// Enabled reports whether the council has members.
func (c Council) Enabled() bool { return len(c.Members) > 0 }

// Member configures one council member or the chairman.
type Member struct {
	// Name identifies the member in results and logs; it defaults to the
	// model.
	Name string `koanf:"name" json:"name"`
	// Provider is a key of providers; "ollama" by default.
	Provider string `koanf:"provider" json:"provider"`
	// Model is the model id at the provider.
	Model string `koanf:"model" json:"model"`
	// Timeout bounds each call to the member (default 60s).
	Timeout Duration `koanf:"timeout" json:"timeout"`
	// Options are model options in Ollama's names (temperature, top_p,
	// seed, num_predict, stop, ...); free-form.
	Options map[string]any `koanf:"options" json:"options,omitempty"`
	// PricePromptPerMTok and PriceCompletionPerMTok, in dollars per million
	// tokens, give each call a cost.
	PricePromptPerMTok     float64 `koanf:"price_prompt_per_mtok" json:"price_prompt_per_mtok,omitempty"`
	PriceCompletionPerMTok float64 `koanf:"price_completion_per_mtok" json:"price_completion_per_mtok,omitempty"`
}

// Server configures one MCP server (package inventory's ServerConfig); its id is its key in
// Config.Servers: Load derives it from the name the configuration gives (mcpconfig.ServerID) and
// keeps the name as DisplayName.
type Server = inventory.ServerConfig

// ToolFilter selects a server's tools and holds single tools' settings (servers.NAME.tools).
type ToolFilter = inventory.ToolFilter

// EnabledServers returns the sorted names of the enabled servers.
func (c Config) EnabledServers() []string {
	names := make([]string, 0, len(c.Servers))
	for name, s := range c.Servers {
		if s.IsEnabled() {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}
