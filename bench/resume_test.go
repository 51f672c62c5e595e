package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/bench/fakemodel"
	"toolrouter/bench/harness"
	"toolrouter/bench/report"
	"toolrouter/internal/fakeollama"
)

// routing reports whether a chat request routes a case (the probe has no format and no tools).
func routing(req api.ChatRequest) bool { return len(req.Format) > 0 || len(req.Tools) > 0 }

// tokenModel is the plumbing model reporting 7 prompt tokens per answer, as a real server counts them.
func tokenModel(req api.ChatRequest) fakeollama.Reply {
	r := fakemodel.Reply(req)
	cached := 4
	r.PromptTokens, r.CachedTokens, r.CompletionTokens = 7, &cached, 2
	r.LoadDuration, r.PrefillDuration, r.DecodeDuration = 10*time.Microsecond, 20*time.Microsecond, 30*time.Microsecond
	return r
}

// noTokens is the plumbing model reporting no tokens, as a server that counts none would.
func noTokens(req api.ChatRequest) fakeollama.Reply {
	r := fakemodel.Reply(req)
	r.PromptTokens, r.CompletionTokens = 0, 0
	return r
}

// resumeArgs are the flags of the interrupted and resumed runs: two BFCL splits (both labels, so
// thresholds are learned), every router, one case at a time so the order is fixed.
func resumeArgs(url, out string) []string {
	return []string{"-datasets", "bfcl-simple,bfcl-irrelevance", "-limit", "4", "-ollama", url, "-model", "fake",
		"-out", out, "-q", "-doc", "", "-concurrency", "1"}
}

// TestRunResume interrupts a run the way a slow model and a kill do: the model hangs after a few
// answers and the run's context is cancelled while it waits. The per-case file then holds the
// answers made so far (and a last line cut short, as a killed writer leaves it); -resume makes only
// the missing answers, against a restarted server at another URL, and its report equals a clean
// run's, latencies aside.
func TestRunResume(t *testing.T) {
	clean := t.TempDir()
	healthy := fakeollama.NewFunc(t, tokenModel)
	if err := run(context.Background(), resumeArgs(healthy.URL, clean), &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatalf("clean run: %v", err)
	}
	cleanCalls := countRouting(healthy.Requests())
	_, cleanLines, err := harness.ReadCases(filepath.Join(clean, casesFile))
	if err != nil {
		t.Fatal(err)
	}

	// The interrupted run: the model answers 9 routing requests, then hangs.
	const answered = 9
	hung := make(chan struct{})
	var once sync.Once
	var n atomic.Int32
	stuck := fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply {
		if routing(req) && n.Add(1) > answered {
			once.Do(func() { close(hung) })
			return fakeollama.Reply{Hang: true}
		}
		return tokenModel(req)
	})
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, resumeArgs(stuck.URL, out), &bytes.Buffer{}, &stderr) }()
	select {
	case <-hung:
		cancel()
	case err := <-done:
		t.Fatalf("the run ended before the model hung: %v", err)
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: got %v, want context.Canceled", err)
	}
	if _, err := os.Stat(filepath.Join(out, "results.json")); err == nil {
		t.Error("the interrupted run wrote results.json")
	}
	if !strings.Contains(stderr.String(), "-resume") {
		t.Errorf("the interrupted run does not say how to resume:\n%s", stderr.String())
	}
	path := filepath.Join(out, casesFile)
	_, partial, err := harness.ReadCases(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(partial) == 0 || len(partial) >= len(cleanLines) {
		t.Fatalf("the interrupted run kept %d answers, want some of %d", len(partial), len(cleanLines))
	}
	for _, r := range partial {
		if r.Outcome == harness.OutcomeTimedOut || r.Outcome == harness.OutcomeDegraded {
			t.Errorf("the interrupted case was kept as an answer: %+v", r)
		}
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"router":"two-phase","dataset":"bfcl-si`); err != nil {
		t.Fatal(err)
	}
	f.Close()

	restarted := fakeollama.NewFunc(t, tokenModel)
	stderr.Reset()
	if err := run(context.Background(), append(resumeArgs(restarted.URL, out), "-resume"), &bytes.Buffer{}, &stderr); err != nil {
		t.Fatalf("resumed run: %v\n%s", err, stderr.String())
	}
	_, all, err := harness.ReadCases(path)
	if err != nil {
		t.Fatalf("after resuming: %v", err)
	}
	if len(all) != len(cleanLines) {
		t.Errorf("after resuming the file has %d answers, want %d", len(all), len(cleanLines))
	}
	if got := countRouting(restarted.Requests()); got >= cleanCalls || got == 0 {
		t.Errorf("the resumed run made %d routing requests, the clean one %d; want fewer, more than none", got, cleanCalls)
	}
	got, want := readResults(t, out), readResults(t, clean)
	if got.Resumed != len(partial) {
		t.Errorf("got %d answers resumed, want %d", got.Resumed, len(partial))
	}
	if g, w := comparable(t, got), comparable(t, want); g != w {
		t.Errorf("the resumed report differs from a clean run's:\ngot  %s\nwant %s", g, w)
	}
}

func countRouting(reqs []api.ChatRequest) int {
	n := 0
	for _, r := range reqs {
		if routing(r) {
			n++
		}
	}
	return n
}

// comparable is a report as JSON without what differs between two runs of the same answers: when
// and how long, and the latencies.
func comparable(t *testing.T, res *report.Results) string {
	t.Helper()
	c := *res
	c.Command, c.Started, c.Seconds, c.Resumed = "", time.Time{}, 0, 0
	c.Model.URL = ""
	c.Rows = nil
	for _, r := range res.Rows {
		r.Latency, r.QPS, r.Time = report.Latency{}, nil, nil // wall times differ between runs
		c.Rows = append(c.Rows, r)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRunResumeOtherParameters checks that -resume refuses a per-case file made with other
// parameters, naming them, and leaves the file as it was.
func TestRunResumeOtherParameters(t *testing.T) {
	out := t.TempDir()
	base := []string{"-datasets", "bfcl-simple", "-routers", "bm25,keyword-overlap", "-limit", "2", "-out", out, "-q", "-doc", ""}
	if err := run(context.Background(), base, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(out, casesFile)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		flags []string
		want  string
	}{
		{"limit", []string{"-limit", "3"}, "limit: 2 in the file, 3 now"},
		{"seed", []string{"-seed", "9"}, "seed: 1 in the file, 9 now"},
		{"routers", []string{"-routers", "bm25"}, `routers: ["bm25","keyword-overlap"] in the file, ["bm25"] now`},
		{"case timeout", []string{"-case-timeout", "1m"}, `case_timeout: "2m0s" in the file, "1m0s" now`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append(append([]string{}, base...), tc.flags...), "-resume")
			err := run(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), "made with other parameters") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a refusal naming %q", err, tc.want)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
				t.Error("the refused resume changed the per-case file")
			}
		})
	}
}

// TestRunCaseTimeout runs the two-phase router against a model that never answers: each case is
// cancelled at -case-timeout and reported as timed out, never right, apart from the degraded ones;
// -check fails on it.
func TestRunCaseTimeout(t *testing.T) {
	srv := fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply {
		if !routing(req) {
			return fakeollama.Reply{Content: "ready"} // the probe
		}
		return fakeollama.Reply{Hang: true}
	})
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"-datasets", "bfcl-simple", "-limit", "2", "-routers", "bm25,two-phase", "-ollama", srv.URL, "-model", "fake",
		"-case-timeout", "200ms", "-out", out, "-q", "-doc", "", "-check"}
	err := run(context.Background(), args, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "check: 2 problems") {
		t.Errorf("got %v, want the check to fail on the 2 timed-out cases", err)
	}
	if !strings.Contains(stderr.String(), "timed out (case timeout 200ms)") {
		t.Errorf("the check does not name the timeout:\n%s", stderr.String())
	}
	res := readResults(t, out)
	r := findRow(t, res, "bfcl-simple", harness.TwoPhase)
	if r.TimedOut != 2 || r.Degraded != 0 || r.Routing.Correct != 0 || r.Decision.DT != 2 || r.EndToEnd.Correct != 0 {
		t.Errorf("got %d timed out, %d degraded, routing %+v, decision %+v; want 2 timed out, none right",
			r.TimedOut, r.Degraded, r.Routing, r.Decision)
	}
	md := stdout.String()
	for _, want := range []string{"**Warning: 2 of 4 answers timed out (over the case timeout of 200ms)", "| degraded | timed out |",
		"| two-phase | — | 0.000 | 0.000 | 0.000 | — | 0.000 | 0.000 | 0 | 2 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	_, lines, err := harness.ReadCases(filepath.Join(out, casesFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if l.Router == harness.TwoPhase && (l.Outcome != harness.OutcomeTimedOut || l.RoutingRight == nil || *l.RoutingRight) {
			t.Errorf("got %+v, want outcome timed_out, not routed right", l)
		}
	}
}

// TestRunRandomWeights runs the model routers against a model named like scripts/real-ollama's
// random-weight ones: their rows and lines carry no accuracy, the report labels them, -check
// passes when every answer made model calls and counted prompt tokens and fails when none did, and
// a run that would write the accuracy document is refused.
func TestRunRandomWeights(t *testing.T) {
	tests := []struct {
		name    string
		model   func(api.ChatRequest) fakeollama.Reply
		checkOK bool
	}{
		{"tokens counted", tokenModel, true},
		{"no tokens", noTokens, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeollama.NewFunc(t, tc.model)
			srv.Models = []string{"tiny-json:latest"}
			out := t.TempDir()
			var stdout, stderr bytes.Buffer
			args := []string{"-datasets", "bfcl-simple,bfcl-irrelevance", "-limit", "3", "-routers", "bm25,two-phase,hybrid",
				"-ollama", srv.URL, "-model", "tiny-json", "-out", out, "-q", "-doc", "", "-check"}
			err := run(context.Background(), args, &stdout, &stderr)
			if tc.checkOK != (err == nil) {
				t.Fatalf("got %v, want the check to pass: %v\n%s", err, tc.checkOK, stderr.String())
			}
			if !tc.checkOK {
				if !strings.Contains(stderr.String(), "0 prompt tokens; want at least 1 call and 1 token") {
					t.Errorf("the check does not name the missing tokens:\n%s", stderr.String())
				}
				return
			}
			res := readResults(t, out)
			for _, ds := range []string{"bfcl-simple", "bfcl-irrelevance"} {
				for _, name := range []string{harness.TwoPhase, harness.Hybrid} {
					r := findRow(t, res, ds, name)
					if r.Status != report.RandomWeights || r.RoutingAccuracy != nil || r.Precision != nil || r.EndToEnd != nil || r.ModelCalls == 0 {
						t.Errorf("%s/%s: got status %q, routing %v, %d model calls; want random weights, no accuracy, model calls", ds, name, r.Status, r.RoutingAccuracy, r.ModelCalls)
					}
				}
				if r := findRow(t, res, ds, harness.BM25); r.Status != report.Measured {
					t.Errorf("%s/bm25: got status %q, want measured (it uses no model)", ds, r.Status)
				}
			}
			md := stdout.String()
			if !strings.Contains(md, "### Random-weight model runs (random weights: not an accuracy figure)") ||
				!strings.Contains(md, "Model: tiny-json at "+srv.URL+": random weights: not an accuracy figure") ||
				strings.Contains(md, "| two-phase | —") || strings.Contains(md, "| two-phase | 0") || strings.Contains(md, "| two-phase | 1") {
				t.Errorf("the report does not keep the random-weight rows apart and labelled:\n%s", md)
			}
			h, lines, err := harness.ReadCases(filepath.Join(out, casesFile))
			if err != nil {
				t.Fatal(err)
			}
			if h.Label != report.RandomWeightsLabel || !h.Params.RandomWeights {
				t.Errorf("got header %+v, want it labelled %q", h, report.RandomWeightsLabel)
			}
			for _, l := range lines {
				if (l.Router == harness.TwoPhase || l.Router == harness.Hybrid) && l.RoutingRight != nil {
					t.Errorf("a random-weight line says whether it routed right: %+v", l)
				}
				if l.Router != harness.TwoPhase && l.Router != harness.Hybrid || l.ModelCalls == 0 {
					continue
				}
				// Each call: 7 prompt tokens, 4 of them cached, 2 decoded, and the server's times.
				if l.DecodeTokens != 2*l.ModelCalls || l.UncachedPromptTokens != 3*l.ModelCalls || l.PrefillMS <= 0 || l.DecodeMS <= 0 ||
					math.Abs(l.TimeSplit.TotalMS()-l.LatencyMS) > max(1, l.LatencyMS/100) {
					t.Errorf("got a line with %d model calls, %d decode and %d uncached prompt tokens, time split %+v (latency %.3f ms); "+
						"want 2 and 3 tokens a call, prefill and decode, adding up to the latency", l.ModelCalls, l.DecodeTokens, l.UncachedPromptTokens, l.TimeSplit, l.LatencyMS)
				}
			}
		})
	}
	t.Run("accuracy document refused", func(t *testing.T) {
		doc := filepath.Join(t.TempDir(), "benchmarks.md")
		err := run(context.Background(), []string{"-datasets", "bfcl-simple", "-limit", "1", "-routers", "two-phase",
			"-ollama", "http://127.0.0.1:1", "-model", "fake", "-random-weights", "-out", t.TempDir(), "-q", "-doc", doc}, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "drop -docs and -doc") {
			t.Errorf("got %v, want a refusal asking to drop -docs and -doc", err)
		}
		if _, err := os.Stat(doc); err == nil {
			t.Error("the refused run wrote the document")
		}
	})
}
