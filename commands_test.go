package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestEveryCommandHelpExitsZero: -h after any command, and after the subcommand of keys and
// tools, prints that command's usage to stdout and exits 0, as -h does alone.
func TestEveryCommandHelpExitsZero(t *testing.T) {
	var cases [][]string
	for _, c := range commands {
		cases = append(cases, []string{c.name, "-h"})
		if words := strings.Fields(c.synopsis); c.alone != nil && len(words) > 1 {
			cases = append(cases, []string{c.name, words[1], "-help"}) // keys new, tools approve, mcp-builtin NAME
		}
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out strings.Builder
			err := run(context.Background(), args, &out, io.Discard, nil)
			if code := exitCode(err); code != exitOK {
				t.Fatalf("got exit code %d (%v), want 0", code, err)
			}
			c, _ := commandNamed(args[0])
			if !strings.Contains(out.String(), "Usage:") || !strings.Contains(out.String(), "toolrouter "+c.synopsis) {
				t.Errorf("stdout lacks the usage of %s:\n%s", args[0], out.String())
			}
		})
	}
}

// TestCommandListDocumented: docs/operations.md's command list has a line for every command of
// the command line, with its synopsis as the usage prints it, and none for a command that does
// not exist.
func TestCommandListDocumented(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	start := strings.Index(doc, "## Running it")
	if start < 0 {
		t.Fatal("docs/operations.md: no section Running it")
	}
	doc = doc[start:]
	// The command list is the first code block after the heading that starts with a command.
	block := regexp.MustCompile("(?s)\n```\n(toolrouter .*?)\n```").FindStringSubmatch(doc)
	if block == nil {
		t.Fatal("docs/operations.md: no command list under Running it")
	}
	documented := map[string]string{} // name: synopsis
	for _, line := range strings.Split(block[1], "\n") {
		rest, ok := strings.CutPrefix(line, "toolrouter ")
		if !ok {
			continue
		}
		synopsis, _, _ := strings.Cut(rest, "  ") // the summary starts after two spaces
		synopsis = strings.TrimSpace(synopsis)
		name := strings.Trim(strings.Fields(strings.TrimPrefix(synopsis, "[flags] "))[0], "[]")
		if _, dup := documented[name]; dup {
			t.Errorf("docs/operations.md: %s is listed twice", name)
		}
		documented[name] = synopsis
	}
	for _, c := range commands {
		got, ok := documented[c.name]
		switch {
		case !ok:
			t.Errorf("docs/operations.md: no line for the command %s (toolrouter %s)", c.name, c.synopsis)
		case got != c.synopsis:
			t.Errorf("docs/operations.md: got toolrouter %s, want toolrouter %s, as the usage says", got, c.synopsis)
		}
	}
	for name := range documented {
		if !slices.ContainsFunc(commands, func(c command) bool { return c.name == name }) {
			t.Errorf("docs/operations.md: a line for %s, which is not a command", name)
		}
	}
}
