package safety

import (
	"encoding/json"
	"fmt"
	"testing"
)

// reportCPU adds a cpu-ns/op metric, the process's CPU time per op (GC included): on a shared,
// busy machine wall-clock ns/op counts time spent waiting for a CPU, CPU time does not. Call it
// before the loop and the function it returns after.
func reportCPU(b *testing.B) func() {
	start, ok := cpuTime()
	return func() {
		if end, ok2 := cpuTime(); ok && ok2 && b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

// benchDef is a realistic clean tool: the size and shape of GitHub's create_issue, with nested
// properties, an array of objects and an anyOf.
var benchDef = Definition{
	Server: "github",
	Name:   "create_issue",
	Title:  "Create issue",
	Description: "Create a new issue in a GitHub repository. Use this to report bugs, request features or track " +
		"work. The issue is created as the authenticated user; labels, assignees and milestones must already " +
		"exist in the repository. Returns the created issue with its number and URL.",
	InputSchema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "owner": {"type": "string", "description": "Repository owner (user or organisation), e.g. octocat."},
    "repo": {"type": "string", "description": "Repository name, without the owner."},
    "title": {"type": "string", "description": "Issue title: one line, at most 256 characters.", "maxLength": 256},
    "body": {"type": "string", "description": "Issue body in GitHub-flavoured Markdown. Mention people with @login."},
    "labels": {"type": "array", "description": "Labels to add; each must exist.", "items": {"type": "string", "description": "Label name."}},
    "assignees": {"type": "array", "items": {"type": "string"}, "description": "Logins to assign, at most 10."},
    "milestone": {"anyOf": [{"type": "integer", "description": "Milestone number."}, {"type": "null"}], "description": "Milestone to add the issue to."},
    "type": {"type": "string", "enum": ["bug", "feature", "task"], "default": "task", "description": "Issue type, when the organisation uses them."},
    "links": {"type": "array", "items": {"type": "object", "properties": {
      "url": {"type": "string", "format": "uri", "description": "Link target, e.g. https://example.com/spec."},
      "rel": {"type": "string", "description": "How the link relates to the issue."}}, "required": ["url"]}}
  },
  "required": ["owner", "repo", "title"]
}`),
	Annotations: &Annotations{Title: "Create issue", ReadOnlyHint: ptr(false), DestructiveHint: ptr(false), OpenWorldHint: ptr(true)},
}

// benchOthers is a deployment of ten other servers with twelve tools each.
func benchOthers() []string {
	servers := map[string][]string{"github": {"create_issue", "list_issues"}}
	for s := 0; s < 10; s++ {
		name := fmt.Sprintf("server%d", s)
		for t := 0; t < 12; t++ {
			servers[name] = append(servers[name], fmt.Sprintf("tool_%d_%d", s, t))
		}
	}
	return Others(servers, "github")
}

// BenchmarkScan is the per-tool cost at list time, the Scanner built once per server.
func BenchmarkScan(b *testing.B) {
	sc := NewScanner(benchOthers())
	b.ReportAllocs()
	done := reportCPU(b)
	for b.Loop() {
		if fs := sc.Scan(benchDef); len(fs) != 0 {
			b.Fatalf("got %d findings, want none", len(fs))
		}
	}
	done()
}

// BenchmarkScanFunc is Scan with the others list turned into a Scanner on every call.
func BenchmarkScanFunc(b *testing.B) {
	others := benchOthers()
	b.ReportAllocs()
	done := reportCPU(b)
	for b.Loop() {
		Scan(benchDef, others)
	}
	done()
}

// BenchmarkScanPoisoned is a definition that trips several rules (Invariant Labs' add tool).
func BenchmarkScanPoisoned(b *testing.B) {
	var def Definition
	for _, e := range readCorpus(b, "testdata/poisoned.jsonl") {
		if e.ID == "add-sidenote" {
			def = e.Def
		}
	}
	sc := NewScanner(benchOthers())
	b.ReportAllocs()
	done := reportCPU(b)
	for b.Loop() {
		if len(sc.Scan(def)) == 0 {
			b.Fatal("got no findings, want some")
		}
	}
	done()
}

func BenchmarkPin(b *testing.B) {
	b.ReportAllocs()
	done := reportCPU(b)
	for b.Loop() {
		Pin(benchDef)
	}
	done()
}
