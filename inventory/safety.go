package inventory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"toolrouter/safety"
)

// This file applies package safety to each listing (config safety.*): it pins every tool's
// definition, scans its texts, and holds back (quarantines) what the policy says to. A quarantined
// tool is left out of Server.Tools, the one list the snapshot's Tool, Available and exports read,
// so that nothing offers or calls it; CallTool refuses it too, for a caller holding an older
// snapshot. An approval records the definition's pin as approved and lists the server again.

// PinStore keeps the pins of tool definitions where every replica reads them; *usage.Store
// satisfies it. Options.Pins nil keeps them in this process's memory.
type PinStore interface {
	// ClaimPin records pin as server's tool's pin unless one is recorded, and returns the recorded
	// pin and the last pin an admin approved ("" when none).
	ClaimPin(ctx context.Context, server, tool, pin string) (pinned, approved string, err error)
	// ApprovePin makes pin both the recorded and the approved pin of server's tool.
	ApprovePin(ctx context.Context, server, tool, pin string) error
}

// memoryPins is the PinStore of a process without a usage database.
type memoryPins struct {
	mu   sync.Mutex              // guards pins
	pins map[[2]string][2]string // {server, tool} -> {pinned, approved}
}

func newMemoryPins() *memoryPins { return &memoryPins{pins: map[[2]string][2]string{}} }

func (p *memoryPins) ClaimPin(_ context.Context, server, tool, pin string) (string, string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := [2]string{server, tool}
	v, ok := p.pins[k]
	if !ok {
		v = [2]string{pin, ""}
		p.pins[k] = v
	}
	return v[0], v[1], nil
}

func (p *memoryPins) ApprovePin(_ context.Context, server, tool, pin string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pins[[2]string{server, tool}] = [2]string{pin, pin}
	return nil
}

// Annotations are a tool's MCP hints as the inventory applies them: the server's, each overridden
// by servers.NAME.tools.TOOL.annotations when set there, and MCP's default for a hint neither
// gives: not read-only, destructive, not idempotent, open-world.
type Annotations struct {
	ReadOnlyHint    bool `json:"read_only_hint"`
	DestructiveHint bool `json:"destructive_hint"`
	IdempotentHint  bool `json:"idempotent_hint"`
	OpenWorldHint   bool `json:"open_world_hint"`
}

// annotations resolves a tool's hints from the server's and the configuration's.
func annotations(server *safety.Annotations, cfg ToolAnnotations) Annotations {
	if server == nil {
		server = &safety.Annotations{}
	}
	pick := func(c, s *bool, def bool) bool {
		switch {
		case c != nil:
			return *c
		case s != nil:
			return *s
		}
		return def
	}
	return Annotations{
		ReadOnlyHint:    pick(cfg.ReadOnlyHint, server.ReadOnlyHint, false),
		DestructiveHint: pick(cfg.DestructiveHint, server.DestructiveHint, true),
		IdempotentHint:  pick(cfg.IdempotentHint, server.IdempotentHint, false),
		OpenWorldHint:   pick(cfg.OpenWorldHint, server.OpenWorldHint, true),
	}
}

// hints decodes a listed tool's annotations; absent or malformed ones are nil.
func hints(raw json.RawMessage) *safety.Annotations {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	var a safety.Annotations
	if json.Unmarshal(raw, &a) != nil {
		return nil
	}
	return &a
}

// Finding is something the scan found in one tool of the server (safety.Finding).
type Finding struct {
	Tool string `json:"tool"`
	safety.Finding
}

// PinChange is a tool whose definition differs from its pin.
type PinChange struct {
	Tool string `json:"tool"`
	// Pinned is the pin it is compared with (recorded when first seen, approved, or configured:
	// FromConfig); Pin is its definition's now.
	Pinned     string `json:"pinned"`
	Pin        string `json:"pin"`
	FromConfig bool   `json:"from_config,omitempty"`
}

// QuarantineReason is why a tool is held back.
type QuarantineReason string

// The reasons, a closed set.
const (
	// ReasonPinChanged: the definition differs from its pin (safety.pin quarantine).
	ReasonPinChanged QuarantineReason = "pin_changed"
	// ReasonPinUnverified: the pin store did not answer, so the definition could not be compared
	// (safety.pin quarantine); the next listing tries again.
	ReasonPinUnverified QuarantineReason = "pin_unverified"
	// ReasonFindings: the scan found text aimed at the model (safety.scan quarantine).
	ReasonFindings QuarantineReason = "findings"
)

var reasons = []QuarantineReason{ReasonPinChanged, ReasonPinUnverified, ReasonFindings}

// Quarantined is a tool the server lists that the inventory holds back: it is neither offered nor
// callable until an admin approves its definition (Manager.Approve).
type Quarantined struct {
	Name    string             `json:"name"`
	Reasons []QuarantineReason `json:"reasons"`
	// Pin is the held definition's; Pinned the pin it differs from, for pin_changed.
	Pin    string `json:"pin"`
	Pinned string `json:"pinned,omitempty"`
	// Since is when this definition was first held back by this process.
	Since time.Time `json:"since"`
	// Definition is the tool as the server lists it, for review before approving.
	Definition safety.Definition `json:"definition"`
}

// QuarantineCounts counts the times the server's tools entered quarantine, by reason (a tool held
// for two reasons counts under both).
type QuarantineCounts struct {
	PinChanged    uint64 `json:"pin_changed"`
	PinUnverified uint64 `json:"pin_unverified"`
	Findings      uint64 `json:"findings"`
}

// ByReason returns the count of one reason.
func (c QuarantineCounts) ByReason(r QuarantineReason) uint64 {
	switch r {
	case ReasonPinChanged:
		return c.PinChanged
	case ReasonPinUnverified:
		return c.PinUnverified
	case ReasonFindings:
		return c.Findings
	}
	return 0
}

// Reasons lists every QuarantineReason.
func Reasons() []QuarantineReason { return slices.Clone(reasons) }

// pinState is what a definition is compared with.
type pinState struct {
	pinned, approved string
	fromConfig       bool  // pinned is safety.pins'
	err              error // the store failed: approved is unknown, and so is pinned unless fromConfig
}

// verdict is what the policy makes of one definition.
type verdict struct {
	changed bool // the definition differs from a known pin (reported whatever the policy)
	reasons []QuarantineReason
}

// judge applies the policy to a definition whose pin is pin, compared with p; flagged says the
// scan found something in it.
func judge(pol Checks, pin string, p pinState, flagged bool) verdict {
	var v verdict
	pinKnown := p.err == nil || p.fromConfig
	if pol.Pin != PinOff && pinKnown {
		v.changed = p.pinned != "" && p.pinned != pin
	}
	if pol.Pin == PinQuarantine {
		switch {
		case !pinKnown:
			v.reasons = append(v.reasons, ReasonPinUnverified)
		case v.changed:
			v.reasons = append(v.reasons, ReasonPinChanged)
		}
	}
	// An unanswered store hides an approval: the tool stays held until it answers.
	if pol.Scan == ScanQuarantine && flagged && (p.err != nil || p.approved != pin) {
		v.reasons = append(v.reasons, ReasonFindings)
	}
	return v
}

// vetted is a listing after the safety checks.
type vetted struct {
	defs        []safety.Definition // the definitions to offer, stripped as the policy says
	pins        []string            // defs' pins, of the definitions as listed
	findings    []Finding
	pinChanged  []PinChange
	quarantined []Quarantined
}

// vet pins and scans a server's listed definitions (in order, after its filters and bounds) and
// sorts them into offered and held back. It runs on the server's supervisor, the only user of
// e.warned. Pin-store errors hold back what the policy needs the store for, and are logged once per
// listing.
func (m *Manager) vet(ctx context.Context, e *entry, defs []safety.Definition) vetted {
	pol := m.opts.Safety
	var scanner *safety.Scanner
	if pol.Scan != ScanOff {
		scanner = safety.NewScanner(safety.Others(m.toolNames(e.name, defs), e.name))
	}
	var (
		out      vetted
		storeErr error
		now      = time.Now()
		held     = map[string]Quarantined{} // the server's quarantined tools now, by name
	)
	last := m.Snapshot().server(e.name)
	for _, q := range last.Quarantined {
		held[q.Name] = q
	}
	seen := lastPins(last)
	for _, def := range defs {
		pin := safety.Pin(def)
		var found []safety.Finding
		if scanner != nil {
			found = scanner.Scan(def)
		}
		for _, f := range found {
			out.findings = append(out.findings, Finding{Tool: def.Name, Finding: f})
		}
		p := m.pinState(ctx, e.name, def.Name, pin, len(found) > 0)
		// A store that lost its pins (a usage file deleted and created again) claims a changed
		// definition as new: the pin the last listing was compared with still tells the change.
		if !p.fromConfig && p.err == nil && p.pinned == pin && p.approved != pin && seen[def.Name] != "" {
			p.pinned = seen[def.Name]
		}
		if p.err != nil && storeErr == nil {
			storeErr = p.err
		}
		v := judge(pol, pin, p, len(found) > 0)
		if v.changed {
			out.pinChanged = append(out.pinChanged, PinChange{Tool: def.Name, Pinned: p.pinned, Pin: pin, FromConfig: p.fromConfig})
		}
		e.warnOnce(def.Name, pin, found, v, p, pol)
		if len(v.reasons) > 0 {
			q := Quarantined{Name: def.Name, Reasons: v.reasons, Pin: pin, Since: now, Definition: def}
			if v.changed {
				q.Pinned = p.pinned
			}
			if prev, ok := held[def.Name]; ok && prev.Pin == pin {
				q.Since = prev.Since
			}
			out.quarantined = append(out.quarantined, q)
			continue
		}
		if pol.Scan == ScanStrip && len(found) > 0 {
			def = safety.Strip(def, found)
		}
		out.defs = append(out.defs, def)
		out.pins = append(out.pins, pin)
	}
	if storeErr != nil {
		e.log.Warn("pin store failed; pins of this listing not compared", "err", storeErr, "safety_pin", pol.Pin)
	}
	return out
}

// lastPins is, for each tool of a server's last listing, the pin it was compared with: the
// definition's own when it matched, the pinned one when it had changed.
func lastPins(s Server) map[string]string {
	out := make(map[string]string, len(s.Tools)+len(s.Quarantined))
	for _, t := range s.Tools {
		out[t.Name] = t.Pin
	}
	for _, q := range s.Quarantined {
		out[q.Name] = q.Pin
		if q.Pinned != "" {
			out[q.Name] = q.Pinned
		}
	}
	for _, c := range s.PinChanged {
		out[c.Tool] = c.Pinned
	}
	return out
}

// pinState finds what a tool's definition is compared with: safety.pins' pin, or the store's
// (claiming pin when the tool is new). The store is asked only when the policy needs it.
func (m *Manager) pinState(ctx context.Context, server, tool, pin string, flagged bool) pinState {
	pol := m.opts.Safety
	var p pinState
	configured, fromConfig := pol.Pins[server][tool]
	if (pol.Pin != PinOff && !fromConfig) || (pol.Scan == ScanQuarantine && flagged) {
		p.pinned, p.approved, p.err = m.opts.Pins.ClaimPin(ctx, server, tool, pin)
	}
	if fromConfig {
		p.pinned, p.fromConfig = configured, true
	}
	return p
}

// warnOnce logs what the checks found in one definition, each thing once per definition for as
// long as the entry lives, and counts each tool's entry into quarantine. Called by the supervisor.
func (e *entry) warnOnce(tool, pin string, found []safety.Finding, v verdict, p pinState, pol Checks) {
	once := func(what string) bool {
		k := what + "\x00" + tool
		if e.warned[k] == pin {
			return false
		}
		e.warned[k] = pin
		return true
	}
	if len(found) == 0 {
		delete(e.warned, "findings\x00"+tool)
	}
	if !v.changed {
		delete(e.warned, "changed\x00"+tool)
	}
	if len(found) > 0 && once("findings") {
		kinds := make([]string, 0, len(found))
		for _, f := range found {
			if !slices.Contains(kinds, string(f.Kind)) {
				kinds = append(kinds, string(f.Kind))
			}
		}
		e.log.Warn("tool definition holds text aimed at the model", "tool", tool, "findings", len(found), "kinds", kinds,
			"first", found[0].Where+": "+found[0].Detail, "safety_scan", pol.Scan)
	}
	if v.changed && once("changed") {
		e.log.Warn("tool definition differs from its pin", "tool", tool, "pinned", p.pinned, "pin", pin,
			"from_config", p.fromConfig, "safety_pin", pol.Pin)
	}
	if len(v.reasons) == 0 {
		delete(e.warned, "quarantined\x00"+tool) // held again later counts again
		return
	}
	if once("quarantined") {
		for _, r := range v.reasons {
			e.quarantines[slices.Index(reasons, r)].Add(1)
		}
		e.log.Warn("tool quarantined: not offered or callable until approved", "tool", tool, "reasons", v.reasons, "pin", pin,
			"approve", "POST /v1/admin/tools/approve {\"tool\":\""+Qualify(e.name, tool)+"\"}")
	}
}

// toolNames maps each server to its tools' names, listed or held back, from the current snapshot,
// and self to the names of defs.
func (m *Manager) toolNames(self string, defs []safety.Definition) map[string][]string {
	out := map[string][]string{}
	for _, s := range m.Snapshot().Servers {
		if s.Name != self {
			out[s.Name] = s.names()
		}
	}
	own := make([]string, len(defs))
	for i, d := range defs {
		own[i] = d.Name
	}
	out[self] = own
	return out
}

// names lists the server's tools, offered or held back.
func (s *Server) names() []string {
	out := make([]string, 0, len(s.Tools)+len(s.Quarantined))
	for _, t := range s.Tools {
		out = append(out, t.Name)
	}
	for _, q := range s.Quarantined {
		out = append(out, q.Name)
	}
	return out
}

// ErrQuarantined is returned by CallTool for a tool held back by the safety checks.
var ErrQuarantined = errors.New("tool is quarantined")

// ErrUnknownTool is returned by Approve for a tool the server does not list.
var ErrUnknownTool = errors.New("unknown tool")

// ErrNothingToApprove is returned by Approve for a tool that is neither quarantined nor changed
// from its pin.
var ErrNothingToApprove = errors.New("nothing to approve")

// PinnedInConfigError is Approve's error for a tool whose changed pin comes from safety.pins: only
// the configuration can change it.
type PinnedInConfigError struct {
	Server, Tool string
	// Pin is the definition's pin now, the value to configure to approve it.
	Pin string
}

func (e *PinnedInConfigError) Error() string {
	return fmt.Sprintf("%s is pinned in the configuration: set safety.pins.%s.%s to %q to approve its definition",
		Qualify(e.Server, e.Tool), e.Server, e.Tool, e.Pin)
}

// Approval is what Approve did.
type Approval struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Pin is the approved definition's pin.
	Pin string `json:"pin"`
	// Restored says the server was listed again and the tool is offered; false when that did
	// not happen before the wait ended (the server is down or slow, or changed the tool again),
	// in which case the approval still applies at its next listing.
	Restored bool `json:"restored"`
}

// Approve accepts the definition server's tool has now, quarantined or changed from its pin: its
// pin becomes the recorded and approved one (in the pin store, so every replica sees it at its
// next listing), and the server is listed again. It waits for that listing at most the server's
// connect_timeout, or until ctx ends.
func (m *Manager) Approve(ctx context.Context, server, tool string) (Approval, error) {
	m.mu.Lock()
	e, ok := m.entries[server]
	var (
		st       Server
		pin      string
		inConfig bool // the pin compared with is safety.pins'
		onlyScan = true
	)
	if ok {
		st = *m.states[server]
	}
	m.mu.Unlock()
	if !ok {
		return Approval{}, fmt.Errorf("%w %q", ErrUnknownServer, server)
	}
	for _, c := range st.PinChanged {
		if c.Tool == tool {
			pin, inConfig, onlyScan = c.Pin, c.FromConfig, false
		}
	}
	for _, q := range st.Quarantined {
		if q.Name == tool {
			pin = q.Pin
			onlyScan = onlyScan && !slices.Contains(q.Reasons, ReasonPinChanged)
		}
	}
	switch {
	case pin == "" && slices.Contains(st.names(), tool):
		return Approval{}, fmt.Errorf("%w: %s is offered and matches its pin", ErrNothingToApprove, Qualify(server, tool))
	case pin == "":
		return Approval{}, fmt.Errorf("%w %q: server %s does not list it", ErrUnknownTool, Qualify(server, tool), server)
	case inConfig && !onlyScan:
		return Approval{}, &PinnedInConfigError{Server: server, Tool: tool, Pin: pin}
	}
	if err := m.opts.Pins.ApprovePin(ctx, server, tool, pin); err != nil {
		return Approval{}, err
	}
	e.log.Info("tool definition approved", "tool", tool, "pin", pin)
	e.relist()
	ctx, cancel := context.WithTimeout(ctx, e.cfg.ConnectTimeout.D())
	defer cancel()
	s, _ := m.Wait(ctx, func(s *Snapshot) bool { return s.cleared(server, tool, pin) })
	a := Approval{Server: server, Tool: tool, Pin: pin}
	if t, ok := s.Tool(Qualify(server, tool)); ok && t.Pin == pin && s.cleared(server, tool, pin) {
		a.Restored = true
	}
	return a, nil
}

// cleared reports whether the snapshot no longer holds back or flags the definition pin of
// server's tool: it is offered, or the server lists another definition, or none.
func (s *Snapshot) cleared(server, tool, pin string) bool {
	sv := s.server(server)
	for _, q := range sv.Quarantined {
		if q.Name == tool && q.Pin == pin {
			return false
		}
	}
	for _, c := range sv.PinChanged {
		if c.Tool == tool && c.Pin == pin {
			return false
		}
	}
	return true
}

// server returns the named server of the snapshot (zero when not configured).
func (s *Snapshot) server(name string) Server {
	for _, sv := range s.Servers {
		if sv.Name == name {
			return sv
		}
	}
	return Server{}
}

// quarantined reports whether the server holds tool back. m.mu must be held.
func (st *Server) quarantined(tool string) bool {
	for _, q := range st.Quarantined {
		if q.Name == tool {
			return true
		}
	}
	return false
}

// relist asks the supervisor to list the server's tools again (an approval, another server's new
// tool names to scan for, a quarantine to re-check); a request already pending covers this one.
func (e *entry) relist() {
	select {
	case e.rescan <- struct{}{}:
	default:
	}
}

// unchanged reports whether l is what the server's published state already holds, sess being its
// session: the same tools (name, pin, texts, availability), exclusions, findings, changes and
// quarantines.
func (m *Manager) unchanged(e *entry, sess *session, l listing) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.states[e.name]
	if m.entries[e.name] != e || m.sessions[e.name] != sess || st.Status != StateUp {
		return false
	}
	sameTool := func(a, b Tool) bool {
		return a.Name == b.Name && a.Pin == b.Pin && a.Title == b.Title && a.Description == b.Description &&
			bytes.Equal(a.InputSchema, b.InputSchema) && a.Available == b.Available && a.Unavailable == e.redact.String(b.Unavailable) &&
			a.Annotations == b.Annotations
	}
	sameFinding := func(a, b Finding) bool {
		return a.Tool == b.Tool && a.Kind == b.Kind && a.Where == b.Where && a.Excerpt == b.Excerpt
	}
	sameHeld := func(a, b Quarantined) bool {
		return a.Name == b.Name && a.Pin == b.Pin && a.Pinned == b.Pinned && slices.Equal(a.Reasons, b.Reasons)
	}
	return slices.EqualFunc(st.Tools, l.tools, sameTool) && slices.Equal(st.Excluded, l.excluded) &&
		slices.EqualFunc(st.Findings, l.findings, sameFinding) && slices.Equal(st.PinChanged, l.pinChanged) &&
		slices.EqualFunc(st.Quarantined, l.quarantined, sameHeld)
}

// newNames lists the names in after that are not in before.
func newNames(before, after []string) []string {
	var out []string
	for _, n := range after {
		if !slices.Contains(before, n) {
			out = append(out, n)
		}
	}
	return out
}

// mentions reports whether any text of the server's offered tools (description or schema) names
// a tool of server as qualified names go ("server.tool", or "server__tool" as MCP clients write
// it): then its scan may find a new reference. A bare tool name is not looked for here; a tool
// held back is listed again at each health ping anyway.
func (s Server) mentions(server string) bool {
	dot, under := server+".", server+"__"
	for _, t := range s.Tools {
		for _, text := range []string{t.Description, string(t.InputSchema)} {
			if strings.Contains(text, dot) || strings.Contains(text, under) {
				return true
			}
		}
	}
	return false
}
