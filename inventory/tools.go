package inventory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"toolrouter/safety"
	"toolrouter/schema"
)

// toolName is MCP's rule for tool names: 1 to 128 ASCII letters, digits, '_', '-' and '.'.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// maxShownName bounds how much of a refused tool name the inventory repeats.
const maxShownName = 128

// listing is one tools/list of a server after the inventory's rules and safety checks.
type listing struct {
	// names is Manager.names when the listing was scanned.
	names       uint64
	tools       []Tool
	excluded    []Excluded
	findings    []Finding
	pinChanged  []PinChange
	quarantined []Quarantined
	// version is the protocol version the session negotiated; ttl the list's time to live, within
	// the server's list_ttl_min and list_ttl_max (0 when the server gave none).
	version string
	ttl     time.Duration
}

// tools lists a server's tools and applies, in order: its allow/deny filter (a tool it filters out
// is dropped silently), MCP's naming rule, uniqueness, and the server's schema bounds. A tool that
// fails a rule is left out and listed in excluded with the reason. The rest are pinned and scanned
// (vet), which may strip their texts or hold them back; the schemas of those offered are compiled
// (see compile), and a schema that does not compile makes that one tool unavailable.
func (m *Manager) tools(ctx context.Context, e *entry, sess *session) (listing, error) {
	lctx, cancel := sess.bound(ctx)
	list, err := sess.listTools(lctx)
	cancel()
	if err != nil {
		return listing{}, sess.cause(err)
	}
	raw := list.tools
	var (
		l    listing
		defs = make([]safety.Definition, 0, len(raw))
		seen = map[string]bool{}
	)
	l.version = sess.version
	taskSupport := map[string]string{}
	if list.ttlSet {
		l.ttl = min(max(list.ttl, e.cfg.ListTTLMin.D()), e.cfg.ListTTLMax.D())
	}
	bounds := schema.Bounds{MaxBytes: e.cfg.MaxSchemaBytes, MaxDepth: e.cfg.MaxSchemaDepth}
	for _, rt := range raw {
		if !e.cfg.Tools.Permits(rt.Name) {
			continue
		}
		if !toolName.MatchString(rt.Name) {
			l.excluded = append(l.excluded, Excluded{Name: shownName(rt.Name),
				Reason: "the name breaks MCP's naming rule: 1 to 128 ASCII letters, digits, '_', '-' or '.'"})
			continue
		}
		if seen[rt.Name] {
			l.excluded = append(l.excluded, Excluded{Name: rt.Name, Reason: "listed more than once; the first is kept"})
			continue
		}
		seen[rt.Name] = true
		if ts := rt.Execution.TaskSupport; ts == string(mcp.TaskSupportOptional) || ts == string(mcp.TaskSupportRequired) {
			taskSupport[rt.Name] = ts
		}
		if reason := overBounds(e, "input", inputSchema(rt.InputSchema), bounds); reason != "" {
			l.excluded = append(l.excluded, Excluded{Name: rt.Name, Reason: reason})
			continue
		}
		if reason := overBounds(e, "output", outputSchema(rt.OutputSchema), bounds); reason != "" {
			l.excluded = append(l.excluded, Excluded{Name: rt.Name, Reason: reason})
			continue
		}
		defs = append(defs, safety.Definition{Server: e.name, Name: rt.Name, Title: rt.Title, Description: rt.Description,
			InputSchema: rt.InputSchema, OutputSchema: rt.OutputSchema, Annotations: hints(rt.Annotations)})
	}
	m.mu.Lock()
	l.names = m.names // read before vet reads the other servers' names
	m.mu.Unlock()
	v := m.vet(ctx, e, defs)
	l.findings, l.pinChanged, l.quarantined = v.findings, v.pinChanged, v.quarantined
	changed := make(map[string]bool, len(v.pinChanged))
	for _, c := range v.pinChanged {
		changed[c.Tool] = true
	}
	l.tools = make([]Tool, len(v.defs))
	for i, def := range v.defs {
		in := inputSchema(def.InputSchema)
		l.tools[i] = Tool{
			Server: e.name, Name: def.Name, Qualified: Qualify(e.name, def.Name), Title: def.Title,
			Description: def.Description, InputSchema: in, OutputSchema: outputSchema(def.OutputSchema), Parameters: params(in),
			Annotations: annotations(def.Annotations, e.cfg.Tools.Tools[def.Name].Annotations), Pin: v.pins[i],
			AcceptsSecrets: e.cfg.Tools.Tools[def.Name].AcceptsSecrets, PinChanged: changed[def.Name], TaskSupport: taskSupport[def.Name],
		}
	}
	m.compile(ctx, e, l.tools)
	return l, nil
}

// inputSchema is a listed input schema, an empty object schema when the server sent none.
func inputSchema(in json.RawMessage) json.RawMessage {
	if len(in) == 0 || string(in) == "null" {
		return []byte(`{"type":"object"}`)
	}
	return in
}

// overBounds says why a tool's input or output schema (which) is over the server's bounds, naming
// the key to raise; "" when it is within them or absent.
func overBounds(e *entry, which string, raw json.RawMessage, bounds schema.Bounds) string {
	if raw == nil {
		return ""
	}
	err := schema.CheckBounds(raw, bounds)
	if err == nil {
		return ""
	}
	key := "max_schema_depth"
	if len(raw) > e.cfg.MaxSchemaBytes {
		key = "max_schema_bytes"
	}
	return fmt.Sprintf("%s %v (servers.%s.%s)", which, err, e.name, key)
}

// outputSchema is a listed output schema, nil when the server declared none.
func outputSchema(out json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(out)) == 0 || string(bytes.TrimSpace(out)) == "null" {
		return nil
	}
	return out
}

// shownName is a refused name as the inventory repeats it: valid UTF-8, at most maxShownName
// bytes and a mark.
func shownName(n string) string {
	if len(n) > maxShownName {
		n = n[:maxShownName] + "…"
	}
	return strings.ToValidUTF8(n, "\uFFFD")
}

// compiled is one tool's compile result.
type compiled struct {
	i      int
	schema *schema.Schema
	output *schema.Schema // nil when the tool declares no output schema
	format json.RawMessage
	err    error
}

// compile compiles the tools' schemas (cached by content) and derives their formats, marking each
// tool available or not. The work runs in a goroutine that holds the server's compile slot, and
// compile waits for it only until ctx (the server's connect deadline) ends: the compiler cannot be
// interrupted, so a schema it is still on when ctx ends finishes in the background, bounded in
// time by the schema bounds checked before, and its result is cached for the next listing. Tools
// without a result by then are unavailable, with the reason. While an earlier compile still holds
// the slot, a new one waits for it (or ctx), so one server never compiles twice at once.
func (m *Manager) compile(ctx context.Context, e *entry, tools []Tool) {
	if len(tools) == 0 {
		return
	}
	done := make([]bool, len(tools))
	defer func() {
		for i := range tools {
			if !done[i] {
				tools[i].Unavailable = fmt.Sprintf("compiling the input schema did not finish within servers.%s.connect_timeout (%s)",
					e.name, e.cfg.ConnectTimeout)
			}
		}
	}()
	select {
	case e.compiling <- struct{}{}:
	case <-ctx.Done():
		return
	}
	type job struct {
		key      schema.Key
		raw, out json.RawMessage
	}
	jobs := make([]job, len(tools))
	for i, t := range tools {
		jobs[i] = job{schema.Key{Server: t.Server, Tool: t.Name}, t.InputSchema, t.OutputSchema}
	}
	results := make(chan compiled, len(jobs)) // never blocks the worker
	go func() {
		defer func() { <-e.compiling }()
		for i, j := range jobs {
			if ctx.Err() != nil {
				return
			}
			r := compiled{i: i}
			r.schema, r.err = m.opts.Cache.Compile(j.key, j.raw)
			if r.err == nil {
				r.format, r.err = schema.OllamaFormat(j.raw)
			}
			if r.err == nil {
				r.format, r.err = schema.BoundStrings(r.format)
			}
			if r.err == nil && j.out != nil {
				out := j.key
				out.Output = true
				if r.output, r.err = m.opts.Cache.Compile(out, j.out); r.err != nil {
					r.err = fmt.Errorf("output schema: %w", r.err)
				}
			}
			results <- r
		}
	}()
	for range jobs {
		select {
		case r := <-results:
			done[r.i] = true
			if r.err != nil {
				tools[r.i].Unavailable = r.err.Error()
			} else {
				tools[r.i].Available, tools[r.i].Schema, tools[r.i].Output, tools[r.i].Format = true, r.schema, r.output, r.format
			}
		case <-ctx.Done():
			return
		}
	}
}
