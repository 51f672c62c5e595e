package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/bench/fakemodel"
	"toolrouter/bench/report"
	"toolrouter/internal/fakeollama"
)

// phase1Round is the server's counters for a phase-1 answer in each round.
var phase1Round = map[int]fakeollama.Reply{
	// rest 35 − 10 − 20 = 5 ms, 40 of 100 prompt tokens uncached, 20 ms over 8 decode tokens.
	1: {PromptTokens: 100, CachedTokens: ptr(60), CompletionTokens: 8,
		PrefillDuration: 10 * time.Millisecond, DecodeDuration: 20 * time.Millisecond, TotalDuration: 35 * time.Millisecond},
	// rest 50 − 5 − 30 = 15 ms, 10 of 200 uncached.
	2: {PromptTokens: 200, CachedTokens: ptr(190), CompletionTokens: 4,
		PrefillDuration: 5 * time.Millisecond, DecodeDuration: 30 * time.Millisecond, TotalDuration: 50 * time.Millisecond},
}

func ptr(n int) *int { return &n }

// costModel is the plumbing model (fakemodel) with phase 1's answers indented, so that the fake's
// tokenizer (a token per word) counts several tokens in them, asking for more in the first round
// (as scripts/real-ollama's tiny-json does), and reported with phase1Round's
// counters. It keeps each round's answer text and the size of the format phase 1 was sent over
// the BFCL inventory.
type costModel struct {
	mu         sync.Mutex        // guards answers, bfclFormat
	answers    map[string]string // by reasoning setting and round: "brief 2"
	bfclFormat int
}

func (m *costModel) reply(req api.ChatRequest) fakeollama.Reply {
	r := fakemodel.Reply(req)
	round := 1
	for _, msg := range req.Messages {
		if msg.Role == "assistant" {
			round++
		}
	}
	if last := req.Messages[len(req.Messages)-1]; last.Role == "assistant" {
		// A continued selection (router.prefill): more is needed in round 1 here too.
		if round--; round == 1 && strings.HasSuffix(last.Content, `"needs_more":`) {
			r.Content = "true"
		}
		return r
	}
	if !bytes.Contains(req.Format, []byte(`"use_tool"`)) {
		return r
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(r.Content), &v); err != nil {
		return fakeollama.Reply{Status: 500, Error: "fakemodel wrote no JSON object: " + r.Content}
	}
	if round == 1 {
		v["needs_more"] = true // a second round, which fakemodel answers with no tool
	}
	pretty, _ := json.MarshalIndent(v, "", " ")
	c := phase1Round[min(round, 2)]
	c.Content = string(pretty)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.answers[fmt.Sprintf("%s %d", reasoningOf(req.Format), round)] = c.Content
	if !bytes.Contains(req.Format, []byte(`"calculator.`)) {
		m.bfclFormat = len(req.Format)
	}
	return c
}

// reasoningOf tells a phase-1 format's router.reasoning setting by the fields it asks for.
func reasoningOf(format []byte) string {
	switch {
	case bytes.Contains(format, []byte(`"task"`)):
		return "full"
	case bytes.Contains(format, []byte(`"reasoning"`)):
		return "brief"
	}
	return "none"
}

// TestCost runs `go run ./bench cost` against the fake Ollama, into a temporary document, and
// checks that the route-cost section holds the figures the fake reported: phase 1's decode tokens,
// rest and uncached share by round, the answers' tokens as the server's tokenizer counted them,
// and by inventory size the rest, the decode time per token and the format's size. A random-weight
// model's section is labelled so.
func TestCost(t *testing.T) {
	tests := []struct {
		name   string
		model  string
		extra  []string
		random bool
	}{
		{name: "measured model", model: "fake"},
		{name: "random weights by name", model: "tiny-json", extra: []string{"-tokenizer-model", "tiny"}, random: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &costModel{answers: map[string]string{}}
			fake := fakeollama.NewFunc(t, m.reply)
			fake.Models = []string{tc.model + ":latest", "tiny:latest"}
			doc := filepath.Join(t.TempDir(), "docs", "benchmarks.md")
			args := append([]string{"cost", "-ollama", fake.URL, "-model", tc.model, "-rounds-reps", "2", "-sizes", "10", "-reps", "2", "-arguments", "3", "-doc", doc, "-q"}, tc.extra...)
			var stdout, stderr bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := run(ctx, args, &stdout, &stderr); err != nil {
				t.Fatalf("run: %v\nstderr: %s", err, stderr.String())
			}
			raw, err := os.ReadFile(doc)
			if err != nil {
				t.Fatal(err)
			}
			section, ok := sectionOf(string(raw), sectionRouteCost)
			if !ok {
				t.Fatalf("got no %s section between its markers:\n%s", sectionRouteCost, raw)
			}
			if !strings.HasPrefix(string(raw), docHead) || !strings.Contains(string(raw), notYetRun[sectionLoad]) {
				t.Errorf("got a document without its head or without the other sections:\n%s", raw)
			}
			if md := stdout.String(); md == "" || !strings.Contains(section, md) {
				t.Errorf("the section does not hold the markdown written on stdout:\n%s", section)
			}

			m.mu.Lock()
			words := map[string]int{}
			for k, a := range m.answers {
				words[k] = len(strings.Fields(a))
			}
			format := m.bfclFormat
			m.mu.Unlock()
			if len(words) != 6 || format == 0 {
				t.Fatalf("got answers %v and a BFCL format of %d bytes, want two rounds of each setting and a format", words, format)
			}
			want := []string{
				"## Route cost on a real Ollama",
				"Command: `go run ./bench cost -ollama " + fake.URL + " -model " + tc.model,
				"Model: " + tc.model + " at " + fake.URL + " (Ollama 0.0.0-fake)",
				"| reasoning | prefill | round | phase-1 answers | decode tokens | tokenizer tokens | rest ms | uncached % |",
				"| tools | prefill | routes | degraded | phase-1 answers | prompt tokens | format bytes | rest ms | decode tokens | decode ms/token |",
				fmt.Sprintf("| 10 | off | 2 | 0 | 2 | 100 | %d | 5.0 | 8.0 | 2.50 |", format),
				"| 10 | on | 2 | 0 | 2 |",
				"### Phase 2 on BFCL's schemas",
				"| prefill | routes | answers | continued | model calls | decode tokens | ms | invalid |",
				// Phase 2 alone: one answer a route, none continued without prefill.
				"| on | 3 | 3 |", "| off | 3 | 3 | 0 | 1.0 |",
				// Where the time goes: round 1's selection a call per decision with prefill.
				"### Where a route's time goes",
				"| none | on | round-1 phase 1 | 1.0 | 4.0 |", "| none | off | round-1 phase 1 | 1.0 | 1.0 |", "| none | off | outside |",
				// One-tool routes: one selection and its arguments, deciding alike.
				"### A one-tool route", "| on | 3 | 0 |", "| off | 3 | 0 | 2.0 |", "3 of 3 | 3 of 3 |", "#### Where its time goes",
			}
			for _, r := range []string{"none", "brief", "full"} {
				want = append(want,
					fmt.Sprintf("| %s | off | 1 | 2 | 8.0 | %d.0 | 5.0 | 40.0 |", r, words[r+" 1"]),
					fmt.Sprintf("| %s | off | 2 | 2 | 4.0 | %d.0 | 15.0 | 5.0 |", r, words[r+" 2"]),
					fmt.Sprintf("| %s | off | 2 | 0 | 2.0 | 3.0 |", r),
					// With prefill, round 1's selection takes a call per decision (4; a reasoning
					// adds one) and the routes decide as without it.
					fmt.Sprintf("| %s | on | 2 | 0 | 2.0 |", r),
					fmt.Sprintf("| %s | on | %d.0 |", r, map[string]int{"none": 4, "brief": 5, "full": 5}[r]),
					fmt.Sprintf("| 2 of 2 | 2 of 2 |\n| %s | off |", r))
			}
			if tc.random {
				want = append(want, report.RandomWeightsLabel+" (a test chat with the model succeeded)", "counted with tiny's tokenizer")
			} else {
				want = append(want, "measured (a test chat with the model succeeded)", "counted with fake's tokenizer")
			}
			for _, w := range want {
				if !strings.Contains(section, w) {
					t.Errorf("the section lacks %q:\n%s", w, section)
				}
			}
			if got := strings.Contains(section, report.RandomWeightsLabel); got != tc.random {
				t.Errorf("got the random-weights label %v, want %v:\n%s", got, tc.random, section)
			}
		})
	}
}

// TestCostUsageErrors checks that bad flags and a missing model server fail the command and
// leave the document as it was.
func TestCostUsageErrors(t *testing.T) {
	gone := httptest.NewServer(nil)
	gone.Close()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-reasoning", "deep"}, `unknown reasoning "deep"`},
		{[]string{"-sizes", "10,0"}, `-sizes: "0" is not a positive number`},
		{[]string{"-reasoning", "", "-sizes", "", "-generate", "0", "-arguments", "0", "-one-tool", "0"}, "nothing to measure"},
		{[]string{"-arguments", "-1"}, "-arguments: want 0 or more"},
		{[]string{"-one-tool", "-1"}, "-one-tool: want 0 or more"},
		{[]string{"-generate", "21"}, "-generate: want 0..20"},
		{[]string{"-reps", "0"}, "want at least 1"},
		{[]string{"stray"}, `unexpected argument "stray"`},
		{[]string{"-ollama", gone.URL, "-model", "fake"}, "nothing measured: no model server at " + gone.URL},
	}
	for _, tc := range tests {
		doc := filepath.Join(t.TempDir(), "benchmarks.md")
		err := run(context.Background(), append([]string{"cost", "-q", "-doc", doc}, tc.args...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error containing %q", tc.args, err, tc.want)
		}
		if _, err := os.Stat(doc); err == nil {
			t.Errorf("%v: the document was written, want it left alone", tc.args)
		}
	}
}

// TestDocHead checks that the repository's docs/benchmarks.md opens with the head bench/doc.go
// writes and holds every section between its markers: the file is generated, never edited.
func TestDocHead(t *testing.T) {
	raw, err := os.ReadFile(defaultDoc())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(raw), docHead) {
		t.Errorf("%s does not open with docHead: rewrite it with one of its commands, or edit bench/doc.go", defaultDoc())
	}
	for _, s := range docSections {
		if _, ok := sectionOf(string(raw), s); !ok {
			t.Errorf("%s has no %s section between its markers", defaultDoc(), s)
		}
	}
}
