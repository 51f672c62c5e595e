package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"toolrouter/bench/harness"
	"toolrouter/internal/fakeollama"
	"toolrouter/router"
)

// reasoningArgs run every router on two BFCL splits under the three router.reasoning settings.
func reasoningArgs(url, out string) []string {
	return []string{"-datasets", "bfcl-simple,bfcl-irrelevance", "-limit", "2", "-routers", "bm25,two-phase,native,hybrid",
		"-reasoning", "none,brief,full", "-ollama", url, "-model", "fake", "-out", out, "-q", "-doc", "", "-concurrency", "1"}
}

// TestRunReasoning: -reasoning runs the routers that select with phase 1 (two-phase, hybrid) once
// per setting, each sending its own phase-1 shape and reported as its own row and lines carrying
// the setting and the model's confidence; the other routers run once. A resume with other
// settings is refused, and -check fails a line whose setting is not its run's.
func TestRunReasoning(t *testing.T) {
	srv := fakeollama.NewFunc(t, tokenModel)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), append(reasoningArgs(srv.URL, out), "-check"), &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}

	shapes := map[string]bool{}
	for _, req := range srv.Requests() {
		if s := phase1Shape(t, req); s != "" {
			shapes[s] = true
		}
	}
	if want := map[string]bool{"none": true, "brief": true, "full": true}; len(shapes) != len(want) || !shapes["none"] || !shapes["brief"] || !shapes["full"] {
		t.Errorf("got phase-1 shapes %v, want %v", shapes, want)
	}

	res := readResults(t, out)
	settings := map[string]string{ // row name → reasoning
		"bm25": "", "native": "",
		"two-phase": "none", "two-phase (reasoning brief)": "brief", "two-phase (reasoning full)": "full",
		"hybrid": "none", "hybrid (reasoning brief)": "brief", "hybrid (reasoning full)": "full",
	}
	for _, ds := range []string{"bfcl-simple", "bfcl-irrelevance"} {
		n := 0
		for _, r := range res.Rows {
			if r.Dataset == ds {
				n++
			}
		}
		if n != len(settings) {
			t.Errorf("%s: got %d rows, want %d (one per router and setting)", ds, n, len(settings))
		}
		for name, reasoning := range settings {
			r := findRow(t, res, ds, name)
			if r.Reasoning != reasoning {
				t.Errorf("%s/%s: got reasoning %q, want %q", ds, name, r.Reasoning, reasoning)
			}
			// The fake model is certain of its answers; only phase 1 has a confidence.
			if strings.HasPrefix(name, "two-phase") && (r.Confidence == nil || r.Confidence.UseTool == nil || *r.Confidence.UseTool != 1) {
				t.Errorf("%s/%s: got confidence %+v, want use_tool 1", ds, name, r.Confidence)
			}
			if reasoning == "" && r.Confidence != nil {
				t.Errorf("%s/%s: got confidence %+v, want none", ds, name, r.Confidence)
			}
		}
	}
	if md := stdout.String(); !strings.Contains(md, "| two-phase (reasoning brief) |") || !strings.Contains(md, "Phase-1 confidence") {
		t.Errorf("the report lacks the brief row or the confidence line:\n%s", md)
	}

	path := filepath.Join(out, casesFile)
	h, lines, err := harness.ReadCases(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := []router.Reasoning{"none", "brief", "full"}; !slices.Equal(h.Params.Reasoning, want) {
		t.Errorf("got header reasoning %v, want %v", h.Params.Reasoning, want)
	}
	for _, l := range lines {
		want, ok := settings[l.Router]
		if !ok || string(l.Reasoning) != want {
			t.Errorf("line %s/%s/%s: got reasoning %q, want %q", l.Router, l.Dataset, l.Case, l.Reasoning, want)
		}
		if strings.HasPrefix(l.Router, "two-phase") && (l.Confidence == nil || l.Confidence.UseTool == nil) {
			t.Errorf("line %s/%s/%s: got confidence %+v, want use_tool", l.Router, l.Dataset, l.Case, l.Confidence)
		}
	}

	args := reasoningArgs(srv.URL, out)
	other := slices.Clone(args)
	other[slices.Index(other, "none,brief,full")] = "none"
	err = run(context.Background(), append(other, "-resume"), &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), `reasoning: ["none","brief","full"] in the file, ["none"] now`) {
		t.Errorf("resuming with other settings: got %v, want a refusal naming them", err)
	}

	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	mislabelled := strings.Replace(string(raw), `"router":"two-phase (reasoning brief)","reasoning":"brief"`,
		`"router":"two-phase (reasoning brief)","reasoning":"full"`, 1)
	if mislabelled == string(raw) {
		t.Fatalf("no brief line to mislabel in %s", raw)
	}
	if err := os.WriteFile(path, []byte(mislabelled), 0o644); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	err = run(context.Background(), append(args, "-resume", "-check"), &bytes.Buffer{}, &stderr)
	if err == nil || !strings.Contains(stderr.String(), `reasoning "full", want "brief"`) {
		t.Errorf("checking a mislabelled line: got %v, want the check to name it\n%s", err, stderr.String())
	}
}

// phase1Shape is the router.reasoning a phase-1 format was made for ("" for other requests): a
// reasoning or not, and calls as tool names or as objects.
func phase1Shape(t *testing.T, req api.ChatRequest) string {
	t.Helper()
	format := req.Format
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "assistant" {
		// A continued selection (router.prefill): its first key, and the reasoning's bound.
		switch req.Messages[n-1].Content {
		case `{"use_tool":`:
			return "none"
		case `{"reasoning":`:
			if strings.Contains(string(format), `"maxLength":160`) {
				return "brief"
			}
			return "full"
		}
		return ""
	}
	if len(format) == 0 {
		return ""
	}
	var f struct {
		Properties struct {
			Reasoning *struct{} `json:"reasoning"`
			UseTool   *struct{} `json:"use_tool"`
			Calls     struct {
				Items struct {
					Type string `json:"type"`
				} `json:"items"`
			} `json:"calls"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(format, &f); err != nil {
		t.Fatalf("format %s: %v", format, err)
	}
	p := f.Properties
	switch {
	case p.UseTool == nil:
		return ""
	case p.Reasoning == nil && p.Calls.Items.Type == "string":
		return "none"
	case p.Reasoning != nil && p.Calls.Items.Type == "string":
		return "brief"
	case p.Reasoning != nil && p.Calls.Items.Type == "object":
		return "full"
	}
	return "unknown shape " + string(format)
}
