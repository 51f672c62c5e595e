package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"toolrouter/internal/fakeollama"
)

func writeJSON(t *testing.T, v any) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	b, _ := json.Marshal(v)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestExitCodes runs route through run for each exit code the README documents.
func TestExitCodes(t *testing.T) {
	routed := func(t *testing.T) string {
		return fakeollama.New(t,
			reply(map[string]any{"reasoning": "math", "use_tool": true, "tool": "calculator.multiply", "direct": true}),
			reply(map[string]any{"a": 6, "b": 7}),
		).URL
	}
	refused := func(t *testing.T) string {
		m := fakeollama.New(t)
		m.Close() // nothing listens there
		return m.URL
	}
	failOnModel := writeJSON(t, map[string]any{"router": map[string]any{"on_model_failure": "fail"}})
	noServer := writeJSON(t, map[string]any{"servers": map[string]any{
		"calculator": map[string]any{"enabled": false},
		"clock":      map[string]any{"enabled": false},
		"broken":     map[string]any{"transport": "stdio", "command": filepath.Join(t.TempDir(), "no-such-server"), "connect_timeout": "5s"},
	}})
	tests := []struct {
		name   string
		model  func(*testing.T) string // the -ollama URL; nil: none given
		args   []string
		want   int
		stdout string // in stdout
		stderr string // in the error
	}{
		{name: "routed", model: routed, args: []string{"route", "six times seven", "-model", "fake"}, want: exitOK, stdout: `"text": "42"`},
		{name: "query missing", args: []string{"route"}, want: exitUsage, stderr: "usage"},
		{name: "two queries", args: []string{"route", "q1", "q2"}, want: exitUsage, stderr: "got 2"},
		{name: "argument to inventory", args: []string{"inventory", "extra"}, want: exitUsage, stderr: "no arguments"},
		{name: "unknown flag", args: []string{"route", "q", "-frobnicate"}, want: exitUsage, stderr: "-frobnicate"},
		{name: "invalid config", args: []string{"-ollama", "ftp://x", "route", "q"}, want: exitUsage, stderr: "ollama.host"},
		{name: "degraded", model: refused, args: []string{"route", "what is 2+2?"}, want: exitDegraded, stdout: `"degraded"`, stderr: "degraded"},
		{name: "model failure", model: refused, args: []string{"-config", failOnModel, "route", "what is 2+2?"}, want: exitDegraded, stderr: "model"},
		{name: "no server up", model: routed, args: []string{"-config", noServer, "route", "six times seven"}, want: exitNoServer, stderr: "broken"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-log-level", "error"}, tc.args...)
			if tc.model != nil {
				args = append(args, "-ollama", tc.model(t))
			}
			var out strings.Builder
			err := run(context.Background(), args, &out, io.Discard, nil)
			if got := exitCode(err); got != tc.want {
				t.Fatalf("got exit code %d (%v), want %d", got, err, tc.want)
			}
			if tc.stderr != "" && (err == nil || !strings.Contains(err.Error(), tc.stderr)) {
				t.Errorf("got error %v, want one containing %q", err, tc.stderr)
			}
			if !strings.Contains(out.String(), tc.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdout, out.String())
			}
		})
	}
}

// TestFlagsAnywhere: flags before the command, between it and its query, and after the query.
func TestFlagsAnywhere(t *testing.T) {
	orders := map[string]func(url string) []string{
		"before":      func(u string) []string { return []string{"-ollama", u, "-model", "fake", "route", "six times seven"} },
		"between":     func(u string) []string { return []string{"route", "-ollama", u, "-model", "fake", "six times seven"} },
		"after query": func(u string) []string { return []string{"route", "six times seven", "-ollama", u, "-model", "fake"} },
		"mixed":       func(u string) []string { return []string{"-ollama", u, "route", "six times seven", "-model=fake"} },
	}
	for name, args := range orders {
		t.Run(name, func(t *testing.T) {
			model := fakeollama.New(t,
				reply(map[string]any{"reasoning": "math", "use_tool": true, "tool": "calculator.multiply", "direct": true}),
				reply(map[string]any{"a": 6, "b": 7}),
			)
			var out strings.Builder
			if err := run(context.Background(), append([]string{"-log-level=error"}, args(model.URL)...), &out, io.Discard, nil); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), `"text": "42"`) {
				t.Errorf("stdout lacks the answer:\n%s", out.String())
			}
			if got := model.Requests()[0].Model; got != "fake" {
				t.Errorf("got model %q, want fake (the -model flag)", got)
			}
		})
	}
	// After "--" everything is positional: "-model" is the query, not a flag without its value.
	model := fakeollama.New(t)
	model.Close()
	var out strings.Builder
	err := run(context.Background(), []string{"-log-level", "error", "-ollama", model.URL, "route", "--", "-model"}, &out, io.Discard, nil)
	if code := exitCode(err); code != exitDegraded || !strings.Contains(out.String(), `"degraded"`) {
		t.Errorf("route -- -model: got exit code %d (%v), want %d: routed, degraded without a model", code, err, exitDegraded)
	}
}

// TestHelpAndVersion: -h and -version print to stdout and succeed without loading a configuration.
func TestHelpAndVersion(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-h"}, "Exit codes"},
		{[]string{"-help"}, "-log-level"},
		{[]string{"route", "-h"}, "Usage:"},
		{[]string{"-version"}, "toolrouter "},
		{[]string{"-config", "does-not-exist.json", "-version"}, "go1."},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out strings.Builder
			err := run(context.Background(), tc.args, &out, io.Discard, nil)
			if code := exitCode(err); code != exitOK {
				t.Fatalf("got exit code %d (%v), want 0", code, err)
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("stdout lacks %q:\n%s", tc.want, out.String())
			}
		})
	}
}
