package config

import (
	"regexp"
	"slices"

	"toolrouter/access"
)

// Safety configures the inventory's checks of the tools servers list (package safety): pins
// against rug pulls and the scan for poisoned descriptions.
type Safety struct {
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
	// AutoExecute is which calls run without a person's approval: "read_only" (tools that say
	// readOnlyHint), "not_destructive" (also those that say destructiveHint false) or "all".
	// Each level of orgs may narrow it with its own auto_execute. A call it does not cover is
	// validated but held: the response lists it under "pending" with a single-use token that
	// POST /v1/approve takes.
	AutoExecute access.AutoExecute `koanf:"auto_execute" json:"auto_execute"`
	// ApprovalTTL is how long a held call's token may be approved.
	ApprovalTTL Duration `koanf:"approval_ttl" json:"approval_ttl"`
	// ResultsMayWiden lets rounds after the first choose tools that round 1 was not offered, and
	// search beyond the shortlist after round 1. Off, a tool result cannot steer the model to a
	// tool the query did not bring up.
	ResultsMayWiden bool `koanf:"results_may_widen" json:"results_may_widen"`
}

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

// pinPattern is a pin as safety.Pin writes it.
var pinPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// safety checks the safety section.
func (v *validator) safety(c Config) {
	s := c.Safety
	if pins := []PinPolicy{PinOff, PinWarn, PinQuarantine}; !slices.Contains(pins, s.Pin) {
		v.add("safety.pin", "must be one of %q, got %q", pins, s.Pin)
	}
	if scans := []ScanPolicy{ScanOff, ScanWarn, ScanStrip, ScanQuarantine}; !slices.Contains(scans, s.Scan) {
		v.add("safety.scan", "must be one of %q, got %q", scans, s.Scan)
	}
	if !slices.Contains(access.AutoExecutes, s.AutoExecute) {
		v.add("safety.auto_execute", "must be one of %q, got %q", access.AutoExecutes, s.AutoExecute)
	}
	if s.ApprovalTTL <= 0 {
		v.add("safety.approval_ttl", "must be positive, got %s", s.ApprovalTTL)
	}
	for server, tools := range s.Pins {
		if _, ok := c.Servers[server]; !ok {
			v.add("safety.pins."+server, "no server %q is configured", server)
			continue
		}
		for tool, pin := range tools {
			if !pinPattern.MatchString(pin) {
				v.add("safety.pins."+server+"."+tool, "must be 64 lowercase hex digits (a tool's \"pin\" in GET /v1/inventory), got %q", pin)
			}
		}
	}
}
