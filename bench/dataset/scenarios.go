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
	// Servers maps each server the scenarios offer to where it comes from: "builtin" or "npm".
	Servers   map[string]string `json:"servers"`
	Scenarios []struct {
		ID    string `json:"id"`
		Query string `json:"query"`
		// Source says where the query's wording comes from (a dataset and record, a design note);
		// it is required.
		Source string `json:"source"`
		// Expect lists the acceptable answers, any one of which is right; empty when no tool is
		// needed. An answer is one call, or several calls made together ("calls").
		Expect []struct {
			scenarioCall
			Calls []scenarioCall `json:"calls"`
		} `json:"expect"`
	} `json:"scenarios"`
}

// scenarioCall is one expected call.
type scenarioCall struct {
	Tool string `json:"tool"`
	// Arguments maps parameters to allowed values, BFCL-style; null when not labeled.
	Arguments map[string][]any `json:"arguments"`
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
		if strings.TrimSpace(s.Source) == "" {
			return nil, fmt.Errorf("%s: scenario %s: no source: say where the query's wording comes from", path, s.ID)
		}
		c := Case{ID: s.ID, Query: s.Query, Toolset: ts, NeedsTool: len(s.Expect) > 0}
		for _, e := range s.Expect {
			calls := e.Calls
			if e.Tool != "" {
				calls = append([]scenarioCall{e.scenarioCall}, calls...)
			}
			if len(calls) == 0 {
				return nil, fmt.Errorf("%s: scenario %s: an expected answer names no tool", path, s.ID)
			}
			var a Answer
			runs := true
			for _, call := range calls {
				server, _, ok := strings.Cut(call.Tool, ".")
				if !ok || f.Servers[server] == "" {
					return nil, fmt.Errorf("%s: scenario %s: tool %q is not on a listed server", path, s.ID, call.Tool)
				}
				runs = runs && avail(server)
				a.Calls = append(a.Calls, metrics.Expected{Name: call.Tool, Args: call.Arguments})
			}
			if runs {
				c.Answers = append(c.Answers, a)
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
