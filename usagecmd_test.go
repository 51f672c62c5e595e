package main

import (
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"toolrouter/access"
	"toolrouter/observe"
	"toolrouter/router"
	records "toolrouter/usage"
)

// usageRequests runs "toolrouter -config CONFIG usage" and returns the requests of its row key.
func usageRequests(t *testing.T, config, key string) int {
	t.Helper()
	var out strings.Builder
	if err := run(t.Context(), []string{"-config", config, "usage"}, &out, io.Discard, nil); err != nil {
		t.Fatalf("toolrouter usage: %v", err)
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == key {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// TestUsageCommand: "toolrouter usage" reads the database beside the config file and prints the
// window's totals as a table, grouped as -by says.
func TestUsageCommand(t *testing.T) {
	config := writeConfig(t, map[string]any{})
	s, err := records.Open(t.Context(), filepath.Join(filepath.Dir(config), "toolrouter-usage.db"), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	rec := records.NewRecorder(s, records.Options{})
	hourAgo := time.Now().Add(-time.Hour)
	for i, org := range []string{"acme", "acme", "globex"} {
		rep := &observe.Report{Start: hourAgo, Duration: 250 * time.Millisecond, Endpoint: "/v1/route", Status: 200,
			Identity: access.Identity{Org: org, Team: "t" + strconv.Itoa(i)}, Authenticated: true,
			Outcome: &router.Outcome{UseTool: true, Calls: []router.Call{{Server: "clock", Tool: "now", Result: &router.Result{}}},
				Trace: []router.Step{{Kind: router.StepSelect, Model: "qwen2.5:7b", PromptTokens: 1000, CompletionTokens: 20}}}}
		rec.Observe(t.Context(), rep)
	}
	if err := rec.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want [][]string // rows' fields, after the title and the header
	}{
		{name: "by org (default)", want: [][]string{{"acme", "2", "2", "0", "2", "2000", "40", "500"}, {"globex", "1", "1", "0", "1", "1000", "20", "250"}}},
		{name: "by team", args: []string{"-by", "team"}, want: [][]string{{"acme/t0", "1", "1", "0", "1", "1000", "20", "250"},
			{"acme/t1", "1", "1", "0", "1", "1000", "20", "250"}, {"globex/t2", "1", "1", "0", "1", "1000", "20", "250"}}},
		{name: "by tool", args: []string{"-by", "tool", "-since", "2h"}, want: [][]string{{"clock.now", "3", "3", "0", "0", "0", "0", "0"}}},
		{name: "by model", args: []string{"-by", "model", "-until", "30m"}, want: [][]string{{"qwen2.5:7b", "3", "0", "0", "3", "3000", "60", "0"}}},
		{name: "an empty window", args: []string{"-since", "30m"}, want: [][]string{{"(no", "requests", "in", "this", "window)"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			args := append([]string{"-config", config, "usage"}, tc.args...)
			if err := run(t.Context(), args, &out, io.Discard, nil); err != nil {
				t.Fatalf("run %v: %v", args, err)
			}
			lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
			if len(lines) < 2 || !strings.HasPrefix(lines[0], "usage from ") ||
				!strings.HasSuffix(lines[1], "REQUESTS  TOOL CALLS  TOOL ERRORS  MODEL CALLS  PROMPT TOKENS  COMPLETION TOKENS  DURATION MS") {
				t.Fatalf("got\n%s\nwant a title and the header", out.String())
			}
			var got [][]string
			for _, l := range lines[2:] {
				got = append(got, strings.Fields(l))
			}
			if strings.Join(flat(got), " ") != strings.Join(flat(tc.want), " ") || len(got) != len(tc.want) {
				t.Errorf("got rows %v, want %v\n%s", got, tc.want, out.String())
			}
		})
	}
}

func flat(rows [][]string) []string {
	var out []string
	for _, r := range rows {
		out = append(out, strings.Join(r, " "))
	}
	return out
}

func TestUsageCommandErrors(t *testing.T) {
	config := writeConfig(t, map[string]any{})
	off := writeConfig(t, map[string]any{"usage": map[string]any{"path": ""}})
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no database yet", []string{"-config", config, "usage"}, "no usage database at " + filepath.Join(filepath.Dir(config), "toolrouter-usage.db")},
		{"usage off", []string{"-config", off, "usage"}, "usage records are off"},
		{"bad -by", []string{"-config", config, "usage", "-by", "country"}, "-by: must be one of org, team, agent, tool or model"},
		{"bad -since", []string{"-config", config, "usage", "-since", "yesterday"}, "-since: want an RFC 3339 time"},
		{"an argument", []string{"-config", config, "usage", "extra"}, `usage: toolrouter [flags] usage (no arguments; got ["extra"])`},
		{"-by on another command", []string{"-config", config, "inventory", "-by", "org"}, "-since, -until and -by apply to usage"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := run(t.Context(), tc.args, io.Discard, io.Discard, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
