// Package inventory connects to the configured MCP servers, keeps the list of their tools fresh and
// exports it. It owns the MCP sessions (start, initialise, list, call, restart) and the published
// snapshot of tools with their raw input schemas and annotations; it applies package safety's pins
// and scan to every listing and holds back the tools the policy quarantines (see safety.go). It
// does not decide which tool to use.
package inventory

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"time"

	"toolrouter/schema"
)

// State is the connection state of one server.
type State string

// The states a server moves through.
const (
	StateStarting State = "starting"
	StateUp       State = "up"
	StateDown     State = "down"
)

// Snapshot is an immutable view of the inventory. A new one is published whenever a server's
// state or tools change; readers never see a half-updated list.
type Snapshot struct {
	Version uint64
	Servers []Server
	// tools indexes every tool (available or not) by qualified name.
	tools map[string]*Tool
}

// Server is one configured server as the inventory sees it.
type Server struct {
	// Name is the server's id, the first part of its tools' qualified names; DisplayName is the
	// name its configuration gives it ("GitHub" for the id "github"), Name when none differs.
	Name        string `json:"name"`
	DisplayName string `json:"display_name"`
	Purpose     string `json:"purpose,omitempty"`
	Transport   string `json:"transport"`
	// Builtin names the built-in server it runs (transport "builtin"), whose example queries
	// retrieval indexes with its tools; Pinned says every tool of it is always shown to phase 1
	// (servers.NAME.pinned). Neither is exported.
	Builtin  string    `json:"-"`
	Pinned   bool      `json:"-"`
	URL      string    `json:"url,omitempty"`
	Command  string    `json:"command,omitempty"`
	Status   State     `json:"status"`
	Error    string    `json:"error,omitempty"`
	Since    time.Time `json:"since"`
	Restarts int       `json:"restarts"`
	// LastError is why the server was last down; it stays after the server is up again.
	LastError string `json:"last_error,omitempty"`
	// ListChanged counts the server's notifications/tools/list_changed; Refreshes the listings
	// they caused (several notifications close together make one).
	ListChanged uint64 `json:"list_changed"`
	Refreshes   uint64 `json:"refreshes"`
	// ProtocolVersion is the MCP version negotiated with the server, while it is up.
	ProtocolVersion string `json:"protocol_version,omitempty"`
	// ListTTLMS is the time to live of the server's tool list in milliseconds, within
	// servers.NAME.list_ttl_min and list_ttl_max, when the server gives one (2026-07-28); the
	// inventory lists the tools again each time it passes. TTLRefreshes counts those listings.
	ListTTLMS    int64  `json:"list_ttl_ms,omitempty"`
	TTLRefreshes uint64 `json:"ttl_refreshes"`
	Tools        []Tool `json:"tools"`
	// Excluded are tools the server listed that the inventory left out (a name that breaks MCP's
	// rule, a schema over the server's bounds), with why; the model never sees them.
	Excluded []Excluded `json:"excluded_tools,omitempty"`
	// Findings are what the scan (safety.scan) found in the server's tools, whatever it did about
	// them; PinChanged the tools whose definitions differ from their pins (safety.pin).
	Findings   []Finding   `json:"findings,omitempty"`
	PinChanged []PinChange `json:"pin_changed,omitempty"`
	// Quarantined are tools the server lists that are held back until an admin approves them:
	// they are not in Tools, so nothing offers or calls them. Quarantines counts the times a tool
	// entered quarantine.
	Quarantined []Quarantined    `json:"quarantined_tools,omitempty"`
	Quarantines QuarantineCounts `json:"quarantines"`
}

// Excluded is a tool left out of the inventory.
type Excluded struct {
	// Name is the name as the server sent it (a long one cut short).
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Tool is one tool of one server, with its input schema exactly as the server sent it.
type Tool struct {
	Server      string          `json:"-"`
	Name        string          `json:"-"`
	Qualified   string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description"`
	Parameters  []Param         `json:"parameters"`
	InputSchema json.RawMessage `json:"input_schema"`
	// TaskSupport is how the tool runs as a task: "optional" or "required" (the server may take
	// long; its calls are polled and their progress reported), "" when it does not.
	TaskSupport string `json:"task_support,omitempty"`
	// Available is false when the tool's schema does not compile; Unavailable says why.
	Available   bool   `json:"available"`
	Unavailable string `json:"unavailable_reason,omitempty"`
	// Schema is the compiled input schema (nil when unavailable).
	Schema *schema.Schema `json:"-"`
	// OutputSchema is the tool's outputSchema exactly as the server sent it (nil when it declares
	// none); Output is it compiled (nil when none, or when the tool is unavailable). A result of
	// the tool's whose structuredContent does not validate against it is the tool's error.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Output       *schema.Schema  `json:"-"`
	// Format is the schema derived for Ollama's constrained decoding (see schema.OllamaFormat).
	Format json.RawMessage `json:"-"`
	// Annotations are the tool's hints (read-only, destructive, ...), configuration overriding
	// the server.
	Annotations Annotations `json:"annotations"`
	// Pin is the SHA-256 of the definition as the server lists it (safety.Pin), the value
	// safety.pins takes.
	Pin string `json:"pin"`
	// AcceptsSecrets says the tool's arguments may carry credentials
	// (servers.NAME.tools.TOOL.accepts_secrets).
	AcceptsSecrets bool `json:"accepts_secrets,omitempty"`
	// PinChanged says the definition differs from its pin and is offered all the same (safety.pin
	// warn; the server lists it under PinChanged): its hints are the changed definition's, which
	// nobody approved, so the router does not run its calls unattended on them.
	PinChanged bool `json:"-"`
}

// Param is one top-level parameter of a tool, in the proposal's inventory format.
type Param struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required"`
	Enum        []any  `json:"allowed_values,omitempty"`
	// Format is the schema's "format" of the value ("uri", "email", "date", "date-time", …), or
	// those of its anyOf alternatives joined by "|"; "" when it gives none.
	Format string `json:"format,omitempty"`
}

// Tool returns the tool with the given qualified name ("server.tool").
func (s *Snapshot) Tool(qualified string) (*Tool, bool) {
	t, ok := s.tools[qualified]
	return t, ok
}

// Available returns the tools a model may be offered, in server then tool order: tools of servers
// that are up and whose schemas compiled.
func (s *Snapshot) Available() []*Tool {
	var out []*Tool
	for i := range s.Servers {
		if s.Servers[i].Status != StateUp {
			continue
		}
		for j := range s.Servers[i].Tools {
			if t := &s.Servers[i].Tools[j]; t.Available {
				out = append(out, t)
			}
		}
	}
	return out
}

// Qualify returns the qualified name of a server's tool.
func Qualify(server, tool string) string { return server + "." + tool }

func newSnapshot(version uint64, servers []Server) *Snapshot {
	sort.Slice(servers, func(i, j int) bool { return servers[i].Name < servers[j].Name })
	s := &Snapshot{Version: version, Servers: servers, tools: map[string]*Tool{}}
	for i := range servers {
		for j := range servers[i].Tools {
			t := &servers[i].Tools[j]
			s.tools[t.Qualified] = t
		}
	}
	return s
}

// Export is the inventory in the proposal's format (seed 003), served by GET /v1/inventory.
type Export struct {
	Version uint64   `json:"version"`
	Servers []Server `json:"servers"`
}

// Export returns the snapshot in its exported form.
func (s *Snapshot) Export() Export {
	return Export{Version: s.Version, Servers: s.Servers}
}

// ExportFor returns the exported form with only the tools permits allows (qualified names), as a
// caller under an access list sees the inventory.
func (s *Snapshot) ExportFor(permits func(qualified string) bool) Export {
	servers := make([]Server, len(s.Servers))
	for i, sv := range s.Servers {
		sv.Tools, sv.Excluded = nil, nil
		for _, t := range s.Servers[i].Tools {
			if permits(t.Qualified) {
				sv.Tools = append(sv.Tools, t)
			}
		}
		for _, x := range s.Servers[i].Excluded {
			if permits(Qualify(sv.Name, x.Name)) {
				sv.Excluded = append(sv.Excluded, x)
			}
		}
		sv.Findings = filter(sv.Findings, func(f Finding) bool { return permits(Qualify(sv.Name, f.Tool)) })
		sv.PinChanged = filter(sv.PinChanged, func(c PinChange) bool { return permits(Qualify(sv.Name, c.Tool)) })
		sv.Quarantined = filter(sv.Quarantined, func(q Quarantined) bool { return permits(Qualify(sv.Name, q.Name)) })
		if sv.Tools == nil {
			sv.Tools = []Tool{}
		}
		servers[i] = sv
	}
	return Export{Version: s.Version, Servers: servers}
}

// filter returns the elements of xs keep keeps, in a new slice (nil when none).
func filter[T any](xs []T, keep func(T) bool) []T {
	var out []T
	for _, x := range xs {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}

// params derives the proposal's parameter list from a raw input schema's top level.
func params(raw json.RawMessage) []Param {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return []Param{}
	}
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	out := make([]Param, 0, len(s.Properties))
	for _, name := range propertyOrder(raw) {
		prop, ok := s.Properties[name]
		if !ok {
			continue
		}
		var p struct {
			Type        any    `json:"type"`
			Description string `json:"description"`
			Enum        []any  `json:"enum"`
			Const       any    `json:"const"`
			Format      string `json:"format"`
			AnyOf       []struct {
				Type   any    `json:"type"`
				Format string `json:"format"`
			} `json:"anyOf"`
		}
		_ = json.Unmarshal(prop, &p)
		param := Param{Name: name, Type: typeName(p.Type), Description: p.Description, Required: required[name], Enum: p.Enum, Format: p.Format}
		if param.Format == "" {
			var formats []string
			for _, a := range p.AnyOf {
				if a.Format != "" && !slices.Contains(formats, a.Format) {
					formats = append(formats, a.Format)
				}
			}
			param.Format = strings.Join(formats, "|")
		}
		if p.Const != nil && param.Enum == nil {
			param.Enum = []any{p.Const}
		}
		if param.Type == "" && len(p.AnyOf) > 0 {
			var types []string
			for _, a := range p.AnyOf {
				if n := typeName(a.Type); n != "" {
					types = append(types, n)
				}
			}
			param.Type = strings.Join(types, "|")
		}
		if param.Type == "" {
			param.Type = "any"
		}
		out = append(out, param)
	}
	return out
}

// propertyOrder returns the keys of the schema's top-level "properties" object in the order the
// server wrote them: models fill "a, b" better than "b, a".
func propertyOrder(raw json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		if key != "properties" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return nil
			}
			continue
		}
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			return nil
		}
		var keys []string
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return keys
			}
			name, _ := k.(string)
			keys = append(keys, name)
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return keys
			}
		}
		return keys
	}
	return nil
}

func typeName(t any) string {
	switch v := t.(type) {
	case string:
		return v
	case []any:
		var parts []string
		for _, x := range v {
			if s, ok := x.(string); ok {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, "|")
	}
	return ""
}
