package dataset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"toolrouter/bench/metrics"
)

// scenarioFile is the scenario set's format (bench/data/scenarios.json).
type scenarioFile struct {
	Description string `json:"description"`
	// Servers maps each server the scenarios use to where it comes from: "builtin" or "npm".
	Servers   map[string]string `json:"servers"`
	Scenarios []struct {
		ID    string `json:"id"`
		Query string `json:"query"`
		// Expect lists the acceptable calls; empty when no tool is needed.
		Expect []struct {
			Tool string `json:"tool"`
			// Arguments maps parameters to allowed values, BFCL-style; null when not labeled.
			Arguments map[string][]any `json:"arguments"`
		} `json:"expect"`
		Trap string `json:"trap,omitempty"`
	} `json:"scenarios"`
}

// ScenarioOptions adapt the scenario set to the machine.
type ScenarioOptions struct {
	// Vars are substituted for ${NAME} in expected string values (SANDBOX: the filesystem
	// server's folder).
	Vars map[string]string
	// Available reports whether a server can run here; nil means all can. Expected calls on other
	// servers are dropped, and a scenario left with none is skipped.
	Available func(server string) bool
}

// LoadScenarios reads the project's scenario set: queries against the built-in servers and the npm
// reference servers, each with its acceptable calls (any one is right) or none. Strings compare
// case-insensitively without white space (FoldStrings): "2*3" and "2-3" must stay apart.
func LoadScenarios(name, path string, opts ScenarioOptions) (*Dataset, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("opening dataset: %w", err)
	}
	for k, v := range opts.Vars {
		js, _ := json.Marshal(v)
		raw = bytes.ReplaceAll(raw, []byte("${"+k+"}"), js[1:len(js)-1])
	}
	var f scenarioFile
	if err := decodeNumbers(raw, &f); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	avail := func(s string) bool { return opts.Available == nil || opts.Available(s) }
	ts := &Toolset{ID: "scenarios"}
	var missing []string
	for s := range f.Servers {
		if avail(s) {
			ts.External = append(ts.External, s)
		} else {
			missing = append(missing, s)
		}
	}
	sort.Strings(ts.External)
	sort.Strings(missing)
	ds := &Dataset{Name: name, Family: "scenarios", Source: path, Strings: metrics.FoldStrings}
	skipped := 0
	seen := map[string]bool{}
	for i, s := range f.Scenarios {
		if s.ID == "" || seen[s.ID] {
			return nil, fmt.Errorf("%s: scenario %d: missing or duplicate id %q", path, i, s.ID)
		}
		seen[s.ID] = true
		c := Case{ID: s.ID, Query: s.Query, Toolset: ts, NeedsTool: len(s.Expect) > 0, Trap: s.Trap}
		for _, e := range s.Expect {
			server, _, ok := strings.Cut(e.Tool, ".")
			if !ok || f.Servers[server] == "" {
				return nil, fmt.Errorf("%s: scenario %s: tool %q is not on a listed server", path, s.ID, e.Tool)
			}
			if avail(server) {
				c.Answers = append(c.Answers, Answer{Calls: []metrics.Expected{{Name: e.Tool, Args: e.Arguments}}})
			}
		}
		if c.NeedsTool && len(c.Answers) == 0 {
			skipped++
			continue
		}
		ds.Cases = append(ds.Cases, c)
	}
	if skipped > 0 {
		ds.Notes = append(ds.Notes, fmt.Sprintf("%d scenarios skipped: they need %s, not available here", skipped, strings.Join(missing, ", ")))
	}
	return ds, nil
}

// ScenarioServers returns the servers a scenario file uses and where each comes from.
func ScenarioServers(path string) (map[string]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("opening dataset: %w", err)
	}
	var f scenarioFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return f.Servers, nil
}
