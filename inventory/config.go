package inventory

import (
	"path"
	"time"

	"toolrouter/config/duration"
)

// This file holds the inventory's configuration types and their defaults; package config loads
// them from the configuration file and assembles them with the other packages'.

// Transport is how toolrouter talks to an MCP server.
type Transport string

// Values of Transport.
const (
	TransportBuiltin        Transport = "builtin"
	TransportStdio          Transport = "stdio"
	TransportStreamableHTTP Transport = "streamable-http"
	TransportSSE            Transport = "sse"
)

// Transports lists the valid transports.
func Transports() []Transport {
	return []Transport{TransportBuiltin, TransportStdio, TransportStreamableHTTP, TransportSSE}
}

// ServerConfig configures one MCP server (servers.NAME); package config loads it, with the name
// as its key in Config.Servers.
type ServerConfig struct {
	// DisplayName is the server's name as configured ("GitHub") when it differs from its id;
	// Source is the MCP client's file it was read from ("" for the config file and the
	// environment). Load sets both.
	DisplayName string `koanf:"-" json:"-"`
	Source      string `koanf:"-" json:"-"`
	// Purpose tells the model what the server's tools are for.
	Purpose   string    `koanf:"purpose" json:"purpose"`
	Transport Transport `koanf:"transport" json:"transport"`
	// Enabled is nil or true for an enabled server; see IsEnabled.
	Enabled *bool `koanf:"enabled" json:"enabled,omitempty"`
	// Builtin names the built-in server for transport "builtin"; Load sets
	// it to the server's name when empty.
	Builtin string `koanf:"builtin" json:"builtin,omitempty"`

	// Command, Args, Env and Cwd start a "stdio" server.
	Command string            `koanf:"command" json:"command,omitempty"`
	Args    []string          `koanf:"args" json:"args,omitempty"`
	Env     map[string]string `koanf:"env" json:"env,omitempty"`
	Cwd     string            `koanf:"cwd" json:"cwd,omitempty"`

	// URL and Headers reach a "streamable-http" or "sse" server.
	URL     string            `koanf:"url" json:"url,omitempty"`
	Headers map[string]string `koanf:"headers" json:"headers,omitempty"`
	// Secrets names the headers (any case) and environment variables whose values are
	// credentials, besides those named like one (Authorization, X-Api-Key, *_TOKEN, ...) and those
	// read from a variable named like one (${env:GITHUB_TOKEN}) or a password input, which Load
	// adds: their values are masked wherever they appear and refused in tool arguments.
	Secrets []string `koanf:"secrets" json:"secrets,omitempty"`

	// ConnectTimeout bounds start, initialize and the first tools/list.
	ConnectTimeout duration.Duration `koanf:"connect_timeout" json:"connect_timeout"`
	// CallTimeout bounds one tool call (further capped by
	// router.execute_timeout).
	CallTimeout duration.Duration `koanf:"call_timeout" json:"call_timeout"`

	// MaxSchemaBytes and MaxSchemaDepth bound each tool's input schema (its
	// size, and its nesting of JSON objects and arrays); a tool over either
	// is left out of the inventory with the reason.
	MaxSchemaBytes int `koanf:"max_schema_bytes" json:"max_schema_bytes"`
	MaxSchemaDepth int `koanf:"max_schema_depth" json:"max_schema_depth"`
	// MaxMessageBytes bounds one message from the server (a stdio line, an
	// HTTP response body, an SSE event); a server that sends a larger one is
	// restarted.
	MaxMessageBytes int `koanf:"max_message_bytes" json:"max_message_bytes"`

	// ListTTLMin and ListTTLMax bound the time to live a server gives its tool list
	// (2026-07-28): the inventory lists the tools again when it passes, no sooner than
	// ListTTLMin and no later than ListTTLMax after the listing.
	ListTTLMin duration.Duration `koanf:"list_ttl_min" json:"list_ttl_min"`
	ListTTLMax duration.Duration `koanf:"list_ttl_max" json:"list_ttl_max"`

	// Tools filters the server's tools.
	Tools ToolFilter `koanf:"tools" json:"tools,omitzero"`

	// Examples are queries each tool answers, by tool name (without the server): retrieval
	// ranks a tool higher for queries like them.
	Examples map[string][]string `koanf:"examples" json:"examples,omitempty"`
	// Pinned puts every tool of the server a caller may use first in every phase-1 shortlist
	// (see Retrieval.Pinned).
	Pinned bool `koanf:"pinned" json:"pinned,omitempty"`
}

// ToolFilter selects tools by unqualified name (Allow, Deny: exact names or
// path.Match glob patterns) and holds single tools' settings (Tools).
type ToolFilter struct {
	Allow []string `koanf:"allow" json:"allow,omitempty"`
	Deny  []string `koanf:"deny" json:"deny,omitempty"`
	// Tools are the settings of single tools, by tool name: every key of servers.NAME.tools
	// but allow and deny (servers.NAME.tools.TOOL.annotations).
	Tools map[string]ToolSettings `koanf:",remain" json:"-"`
}

// Permits reports whether tool passes the filter: a tool matching Deny is
// refused, otherwise it must match Allow unless Allow is empty.
func (f ToolFilter) Permits(tool string) bool {
	if matchAny(f.Deny, tool) {
		return false
	}
	return len(f.Allow) == 0 || matchAny(f.Allow, tool)
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if p == name {
			return true
		}
		if ok, err := path.Match(p, name); err == nil && ok {
			return true
		}
	}
	return false
}

// IsEnabled reports whether the server is enabled (Enabled nil or true).
func (s ServerConfig) IsEnabled() bool { return s.Enabled == nil || *s.Enabled }

// BuiltinName returns the built-in the server names, or name (the
// server's key) when Builtin is empty.
func (s ServerConfig) BuiltinName(name string) string {
	if s.Builtin != "" {
		return s.Builtin
	}
	return name
}

// DefaultServerConfig is what a server gets for the keys it does not set.
func DefaultServerConfig() ServerConfig {
	return ServerConfig{
		ConnectTimeout: duration.Duration(20 * time.Second), CallTimeout: duration.Duration(30 * time.Second),
		MaxSchemaBytes: 256 << 10, MaxSchemaDepth: 64, MaxMessageBytes: 16 << 20,
		ListTTLMin: duration.Duration(30 * time.Second), ListTTLMax: duration.Duration(time.Hour),
	}
}

// Checks are the checks the inventory runs on each listing of a server (configuration safety.pin,
// safety.scan, safety.pins): pins against rug pulls and the scan for poisoned descriptions.
type Checks struct {
	// Pin is what a tool whose definition (name, title, description, input schema, annotations)
	// differs from its pin gets: "off" (not checked), "warn" (logged, counted and reported; the
	// tool is still offered) or "quarantine" (neither offered nor callable until approved). A
	// tool's pin is the SHA-256 of its definition when first seen, kept in the usage database
	// (in memory when usage is off), or the one Pins gives.
	Pin PinPolicy `koanf:"pin" json:"pin"`
	// Scan is what a tool whose texts hold instructions aimed at the model gets: "off", "warn"
	// (logged and reported), "strip" (the offending text is cut before the model sees it) or
	// "quarantine" (held back until approved).
	Scan ScanPolicy `koanf:"scan" json:"scan"`
	// Pins are the expected pins of tools, by server id then tool name (64 lowercase hex digits,
	// as GET /v1/inventory shows each tool's "pin"). A pin given here is compared with instead of
	// the recorded one, and only a change here lifts its quarantine.
	Pins map[string]map[string]string `koanf:"pins" json:"pins,omitempty"`
}

// DefaultChecks are the checks of a configuration that sets none. Warn, not quarantine: servers
// change their tools legitimately (an upgrade rewords a description), and some real definitions
// trip the scan (one of MetaTool's 199); holding those back unasked would make tools vanish.
func DefaultChecks() Checks { return Checks{Pin: PinWarn, Scan: ScanWarn} }

// PinPolicy is safety.pin.
type PinPolicy string

// Values of PinPolicy.
const (
	PinOff        PinPolicy = "off"
	PinWarn       PinPolicy = "warn"
	PinQuarantine PinPolicy = "quarantine"
)

// ScanPolicy is safety.scan.
type ScanPolicy string

// Values of ScanPolicy.
const (
	ScanOff        ScanPolicy = "off"
	ScanWarn       ScanPolicy = "warn"
	ScanStrip      ScanPolicy = "strip"
	ScanQuarantine ScanPolicy = "quarantine"
)

// ToolSettings are the settings of one tool of a server (servers.NAME.tools.TOOL).
type ToolSettings struct {
	// Annotations override the hints the server gives the tool, one by one.
	Annotations ToolAnnotations `koanf:"annotations" json:"annotations"`
	// AcceptsSecrets lets the tool's arguments carry a configured credential or a value that
	// looks like one; other tools' calls with one are refused.
	AcceptsSecrets bool `koanf:"accepts_secrets" json:"accepts_secrets,omitempty"`
}

// ToolAnnotations are MCP's tool hints as configuration sets them: nil leaves the server's.
type ToolAnnotations struct {
	ReadOnlyHint    *bool `koanf:"read_only_hint" json:"read_only_hint,omitempty"`
	DestructiveHint *bool `koanf:"destructive_hint" json:"destructive_hint,omitempty"`
	IdempotentHint  *bool `koanf:"idempotent_hint" json:"idempotent_hint,omitempty"`
	OpenWorldHint   *bool `koanf:"open_world_hint" json:"open_world_hint,omitempty"`
}
