package config

import (
	"errors"
	"fmt"
	"regexp"
	"slices"

	"toolrouter/access"
	"toolrouter/inventory"
)

// Safety configures what toolrouter does about the tools servers list and the calls a model
// chooses: the inventory's checks of tool definitions (inventory.Checks: pins against rug pulls,
// the scan for poisoned descriptions), which calls run without approval, and whether results may
// widen the choice of tools.
type Safety struct {
	inventory.Checks `koanf:",squash"`
	// AutoExecute is which calls run without a person's approval: "read_only" (tools that say
	// readOnlyHint), "not_destructive" (also those that say destructiveHint false) or "all".
	// Each level of orgs may narrow it with its own auto_execute. A call it does not cover is
	// validated but held: the response lists it under "pending" with a single-use token that
	// POST /v1/approve takes.
	AutoExecute access.AutoExecute `koanf:"auto_execute" json:"auto_execute"`
	// ApprovalTTL is how long a held call's token may be approved.
	ApprovalTTL Duration `koanf:"approval_ttl" json:"approval_ttl"`
	// ApprovalWait is how long a route waits for a person's decision on a call it holds before
	// it answers (0: at once, with the call held); each level of orgs may set its own.
	ApprovalWait Duration `koanf:"approval_wait" json:"approval_wait"`
	// ApprovalWebhook is where a notice of each held call goes, signed (package notify); each
	// org may name its own.
	ApprovalWebhook access.Webhook `koanf:"approval_webhook" json:"approval_webhook,omitzero"`
	// Approvers are who may decide on held calls in the console beside the identity that asked:
	// identities ("acme/ops"), identity globs ("acme/*/lead") or keys' names; each level of orgs
	// may name its own (access.Approvers). None anywhere: admins (auth.admins).
	Approvers []string `koanf:"approvers" json:"approvers,omitempty"`
	// MaxHeldPerIdentity is how many calls each identity may have awaiting approval at once, and
	// MaxHeldBytesPerIdentity how many bytes their records may take; each level of orgs may set
	// its own (access.HeldShare). A call over either is refused with approvals_full.
	MaxHeldPerIdentity      int   `koanf:"max_held_per_identity" json:"max_held_per_identity"`
	MaxHeldBytesPerIdentity int64 `koanf:"max_held_bytes_per_identity" json:"max_held_bytes_per_identity"`
	// MaxHeldArgumentBytes is how large a held call's arguments may be, as JSON; a larger call is
	// refused with held_arguments_too_large.
	MaxHeldArgumentBytes int `koanf:"max_held_argument_bytes" json:"max_held_argument_bytes"`
	// ResultsMayWiden lets rounds after the first choose tools that round 1 was not offered, and
	// search beyond the shortlist after round 1. Off, a tool result cannot steer the model to a
	// tool the query did not bring up.
	ResultsMayWiden bool `koanf:"results_may_widen" json:"results_may_widen"`
}

// HeldShare is the share of the held calls each identity gets unless a level of orgs sets its own.
func (s Safety) HeldShare() access.HeldShare {
	return access.HeldShare{Calls: s.MaxHeldPerIdentity, Bytes: s.MaxHeldBytesPerIdentity}
}

// PinPolicy is safety.pin; ScanPolicy is safety.scan (package inventory's).
type (
	PinPolicy  = inventory.PinPolicy
	ScanPolicy = inventory.ScanPolicy
)

// Values of PinPolicy and ScanPolicy.
const (
	PinOff         = inventory.PinOff
	PinWarn        = inventory.PinWarn
	PinQuarantine  = inventory.PinQuarantine
	ScanOff        = inventory.ScanOff
	ScanWarn       = inventory.ScanWarn
	ScanStrip      = inventory.ScanStrip
	ScanQuarantine = inventory.ScanQuarantine
)

// ToolSettings are the settings of one tool of a server; ToolAnnotations its hints as
// configuration sets them (package inventory's).
type (
	ToolSettings    = inventory.ToolSettings
	ToolAnnotations = inventory.ToolAnnotations
)

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
	for _, err := range s.ApprovalWebhook.Problems("safety.approval_webhook") {
		var fe *access.FieldError
		if errors.As(err, &fe) {
			v.add(fe.Key, "%s", fe.Reason)
		}
	}
	if s.ApprovalWait < 0 {
		v.add("safety.approval_wait", "must be >= 0 (0: no wait), got %s", s.ApprovalWait)
	}
	// A route that waits as long as its deadline leaves an approved call no time to run.
	if d := c.Router.Deadline; d > 0 {
		waits := map[string]Duration{"safety.approval_wait": s.ApprovalWait}
		for o, org := range c.Orgs {
			waits["orgs."+o+".approval_wait"] = Duration(org.Wait)
			for t, team := range org.Teams {
				waits["orgs."+o+".teams."+t+".approval_wait"] = Duration(team.Wait)
				for a, agent := range team.Agents {
					waits["orgs."+o+".teams."+t+".agents."+a+".approval_wait"] = Duration(agent.Wait)
				}
			}
		}
		for key, w := range waits {
			if w >= d {
				v.add(key, "must be shorter than router.deadline (%s), so that an approved call has time to run, got %s", d, w)
			}
		}
	}
	for i, p := range s.Approvers {
		if r := access.CheckApprover(p); r != "" {
			v.add(fmt.Sprintf("safety.approvers[%d]", i), "%s", r)
		}
	}
	if s.ApprovalTTL <= 0 {
		v.add("safety.approval_ttl", "must be positive, got %s", s.ApprovalTTL)
	}
	if s.MaxHeldPerIdentity <= 0 {
		v.add("safety.max_held_per_identity", "must be positive, got %d", s.MaxHeldPerIdentity)
	}
	if s.MaxHeldBytesPerIdentity <= 0 {
		v.add("safety.max_held_bytes_per_identity", "must be positive, got %d", s.MaxHeldBytesPerIdentity)
	}
	if s.MaxHeldArgumentBytes <= 0 {
		v.add("safety.max_held_argument_bytes", "must be positive, got %d", s.MaxHeldArgumentBytes)
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
