// Package dataset loads the labeled queries the benchmark runs: BFCL (simple, multiple, parallel,
// parallel_multiple, irrelevance, with their possible answers), MetaTool (tool selection over 199
// tools, tool-use awareness) and the project's own scenario set. Loaders take any file in those
// formats by path. It converts BFCL's parameter types to JSON Schema and names every tool the way
// the inventory will ("server.tool"), so labels and router outcomes compare directly. It does not
// start servers or score anything.
package dataset

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"toolrouter/bench/metrics"
)

// Dataset is one labeled set of queries.
type Dataset struct {
	// Name identifies the dataset in reports ("bfcl-simple").
	Name string
	// Family names the source the dataset comes from ("bfcl", "metatool", "scenarios"). The
	// benchmark tunes thresholds per family, its datasets pooled.
	Family string
	// Source names the files it was read from.
	Source string
	// Strings is how the argument checker compares strings for this dataset.
	Strings metrics.StringRule
	Cases   []Case
	// Notes say what was left out and why.
	Notes []string
}

// Case is one query with its label.
type Case struct {
	ID    string
	Query string
	// Toolset is the tools offered with the query; cases may share one.
	Toolset *Toolset
	// NeedsTool is the tool-use label.
	NeedsTool bool
	// Answers are the acceptable answers when a tool is needed; any one of them is right. Empty
	// when no tool is needed, or when the dataset says a tool is needed but not which.
	Answers []Answer
}

// Answer is one acceptable answer: calls in any order (BFCL's parallel categories have several).
// An expected call's Args are nil when the dataset does not label arguments.
type Answer struct {
	Calls []metrics.Expected
}

// Toolset is the tools offered with a query: functions served by one in-process MCP server the
// benchmark builds (BFCL, MetaTool), or servers of the project (built-ins, npm reference servers).
type Toolset struct {
	// ID is unique per distinct toolset.
	ID string
	// Server names the in-process server that serves Functions.
	Server  string
	Purpose string
	// Functions are served by Server.
	Functions []Function
	// External lists the project's servers in the toolset: built-in names or npm reference servers.
	External []string
}

// Function is one tool the benchmark serves itself.
type Function struct {
	// Name is the MCP tool name (BFCL's "math.factorial" becomes "math_factorial": the inventory
	// qualifies tools as "server.tool").
	Name string
	// Original is the dataset's own name.
	Original    string
	Description string
	// Schema is the input schema as JSON Schema.
	Schema json.RawMessage
	// Spec is the declaration the argument checker uses, named by the qualified tool name.
	Spec metrics.FunctionSpec
}

// Qualified returns the inventory's name of one of the toolset's functions.
func (t *Toolset) Qualified(f Function) string { return t.Server + "." + f.Name }

// Specs returns the checker's declarations of the toolset's functions by qualified name.
func (t *Toolset) Specs() map[string]metrics.FunctionSpec {
	out := make(map[string]metrics.FunctionSpec, len(t.Functions))
	for _, f := range t.Functions {
		out[f.Spec.Name] = f.Spec
	}
	return out
}

// Tools returns the distinct tools of an answer, sorted as given.
func (a Answer) Tools() []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range a.Calls {
		if !seen[c.Name] {
			seen[c.Name] = true
			out = append(out, c.Name)
		}
	}
	return out
}

// Labeled reports whether every call of the answer has labeled arguments.
func (a Answer) Labeled() bool {
	for _, c := range a.Calls {
		if c.Args == nil {
			return false
		}
	}
	return len(a.Calls) > 0
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// toolNames maps dataset names to MCP tool names: characters outside [A-Za-z0-9_-] become "_",
// and a name that collides gets a numeric suffix.
func toolNames(names []string) []string {
	out := make([]string, len(names))
	used := map[string]bool{}
	for i, n := range names {
		base := unsafeName.ReplaceAllString(n, "_")
		if base == "" {
			base = "tool"
		}
		name := base
		for k := 2; used[name]; k++ {
			name = fmt.Sprintf("%s_%d", base, k)
		}
		used[name] = true
		out[i] = name
	}
	return out
}

// Limit keeps the first n cases (all when n ≤ 0).
func (d *Dataset) Limit(n int) {
	if n > 0 && n < len(d.Cases) {
		d.Cases = d.Cases[:n]
	}
}

// firstUser returns the first user message of a BFCL question, which is the query.
func firstUser(turns [][]struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}) (string, bool) {
	for _, turn := range turns {
		for _, m := range turn {
			if m.Role == "user" && strings.TrimSpace(m.Content) != "" {
				return m.Content, true
			}
		}
	}
	return "", false
}
