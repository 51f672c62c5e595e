package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/bench/harness"
	"toolrouter/bench/report"
	"toolrouter/bench/retrieval"
	"toolrouter/internal/fakeollama"
	"toolrouter/internal/npmservers"
)

// TestRunPlumbing runs the whole harness, as `go run ./bench` does, on the first queries of every
// dataset with the model-free routers and the fake model, then checks that its outputs parse and
// its figures are consistent with their own counts. Without node the scenario set runs without the
// npm reference servers (they are offered there, never needed).
func TestRunPlumbing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := t.TempDir()
	npm := filepath.Join(out, "no-npm")
	if _, err := exec.LookPath("node"); err == nil {
		npm = npmservers.Dir(t)
	} else {
		t.Log("node not found: the scenario set runs without the npm reference servers")
	}
	doc := filepath.Join(out, "docs", "benchmarks.md")
	var stdout, stderr bytes.Buffer
	args := []string{"-limit", "6", "-fake-model", "-out", out, "-npm", npm, "-concurrency", "2", "-doc", doc}
	if err := run(ctx, args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, stderr.String())
	}
	res := readResults(t, out)
	if len(res.Datasets) != len(datasetNames) {
		t.Fatalf("got %d datasets, want %d", len(res.Datasets), len(datasetNames))
	}
	md := stdout.String()
	for _, ds := range res.Datasets {
		if ds.Cases != 6 || ds.NeedTool+ds.NoTool != ds.Cases {
			t.Errorf("%s: got %d cases (%d + %d), want 6", ds.Name, ds.Cases, ds.NeedTool, ds.NoTool)
		}
		if !strings.Contains(md, "### "+ds.Name) {
			t.Errorf("markdown has no section for %s", ds.Name)
		}
		for _, name := range harness.Routers {
			row := findRow(t, res, ds.Name, name)
			want := report.Measured
			switch name {
			case harness.TwoPhase, harness.Hybrid:
				want = report.Plumbing
			case harness.Native:
				want = report.Plumbing
				if !harness.NativeReady {
					want = report.Unavailable
				}
			}
			if row.Status != want {
				t.Errorf("%s/%s: got status %q, want %q", ds.Name, name, row.Status, want)
			}
			checkRow(t, ds, row)
		}
	}
	for _, name := range harness.Routers {
		if !strings.Contains(md, "| "+name+" |") {
			t.Errorf("markdown has no row for %s", name)
		}
	}
	if !strings.Contains(md, "not a measurement of any model") {
		t.Error("markdown does not mark the fake model's rows as plumbing")
	}
	checkSVG(t, filepath.Join(out, "chart.svg"))
	if b, err := os.ReadFile(filepath.Join(out, "results.md")); err != nil || string(b) != md {
		t.Errorf("results.md differs from stdout (err %v)", err)
	}
	raw, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	if section, ok := sectionOf(string(raw), sectionAccuracy); !ok || !strings.Contains(section, md) {
		t.Errorf("the document's accuracy section does not hold the report:\n%s", raw)
	}
}

// checkRow checks a row's figures against its own counts and the dataset.
func checkRow(t *testing.T, ds report.Dataset, r report.Row) {
	t.Helper()
	name := ds.Name + "/" + r.Router
	switch r.Status {
	case report.Measured:
		if got := r.Decision.Total(); got != ds.Cases || r.Routing.Total != ds.Cases {
			t.Errorf("%s: decisions %d, routing %d, want %d each", name, got, r.Routing.Total, ds.Cases)
		}
		if r.Decision.TP+r.Decision.FN+r.Decision.DT != ds.NeedTool {
			t.Errorf("%s: TP+FN+DT = %d, want the %d tool cases", name, r.Decision.TP+r.Decision.FN+r.Decision.DT, ds.NeedTool)
		}
		if r.Decision.Degraded() != r.Degraded+r.TimedOut {
			t.Errorf("%s: %d degraded decisions, %d degraded and %d timed-out answers", name, r.Decision.Degraded(), r.Degraded, r.TimedOut)
		}
		if r.Selection.Total > ds.NeedTool || r.Selection.Correct > r.Selection.Total {
			t.Errorf("%s: selection %d/%d with %d tool cases", name, r.Selection.Correct, r.Selection.Total, ds.NeedTool)
		}
		if r.Selection.Correct > r.Decision.TP {
			t.Errorf("%s: %d right selections but only %d tool uses on tool cases", name, r.Selection.Correct, r.Decision.TP)
		}
		p, pok := r.Decision.Precision()
		rc, rok := r.Decision.Recall()
		f, fok := r.Decision.F1()
		same(t, name+" precision", r.Precision, p, pok)
		same(t, name+" recall", r.Recall, rc, rok)
		same(t, name+" F1", r.F1, f, fok)
		v, ok := r.Routing.Value()
		same(t, name+" routing", r.RoutingAccuracy, v, ok)
		if r.Arguments != nil {
			t.Errorf("%s: a model-free router has argument figures", name)
		}
		if r.QPS == nil || *r.QPS <= 0 {
			t.Errorf("%s: got no queries per second for a model-free router", name)
		}
		if !(r.Latency.P50 <= r.Latency.P95 && r.Latency.P95 <= r.Latency.P99 && r.Latency.P99 <= r.Latency.Max) {
			t.Errorf("%s: latency percentiles out of order: %+v", name, r.Latency)
		}
	case report.Plumbing:
		if r.Precision != nil || r.SelectionAccuracy != nil || r.EndToEndAccuracy != nil || r.RoutingAccuracy != nil {
			t.Errorf("%s: a plumbing row reports accuracy", name)
		}
		if r.Executed > r.Calls || r.Mismatches != 0 {
			t.Errorf("%s: %d calls, %d executed, %d mismatches; want executed ≤ calls and no mismatch", name, r.Calls, r.Executed, r.Mismatches)
		}
		if ds.Family != "scenarios" && r.Recorded != r.Executed {
			t.Errorf("%s: handlers recorded %d calls, the outcomes executed %d", name, r.Recorded, r.Executed)
		}
		// A degraded answer (a prompt over the model's window is never sent) may make no model call.
		if (r.Router == harness.TwoPhase || r.Router == harness.Native) && r.Degraded < r.Cases && (r.ModelCalls < r.Cases-r.Degraded || r.Calls == 0) {
			t.Errorf("%s: %d model calls and %d tool calls for %d queries (%d degraded)", name, r.ModelCalls, r.Calls, r.Cases, r.Degraded)
		}
	}
}

func same(t *testing.T, what string, got *float64, want float64, defined bool) {
	t.Helper()
	switch {
	case !defined && got != nil:
		t.Errorf("%s: got %v, want undefined", what, *got)
	case defined && got == nil:
		t.Errorf("%s: got undefined, want %v", what, want)
	case defined && (math.Abs(*got-want) > 1e-12 || *got < 0 || *got > 1):
		t.Errorf("%s: got %v, want %v in [0, 1]", what, *got, want)
	}
}

// TestRunNoModelServer checks that the model rows say why they did not run, with the URL, and
// carry no figures.
func TestRunNoModelServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"-datasets", "bfcl-simple,metatool-awareness", "-limit", "4", "-ollama", url, "-out", out, "-q", "-doc", ""}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	res := readResults(t, out)
	want := "no model server at " + url
	for _, ds := range []string{"bfcl-simple", "metatool-awareness"} {
		for _, name := range []string{harness.TwoPhase, harness.Hybrid} {
			r := findRow(t, res, ds, name)
			if r.Status != report.Skipped || r.Reason != want || r.Cases != 0 || r.RoutingAccuracy != nil {
				t.Errorf("%s/%s: got %+v, want skipped (%s) with no figures", ds, name, r, want)
			}
		}
	}
	if !strings.Contains(stdout.String(), "| two-phase | skipped: "+want+" |") {
		t.Errorf("markdown does not show the skipped row:\n%s", stdout.String())
	}
}

// TestRunModelChatFails checks that a model server which lists the model but fails every chat
// does not count as measured: the model rows are skipped with the reason.
func TestRunModelChatFails(t *testing.T) {
	srv := fakeollama.New(t) // no scripted replies: every chat answers 500
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"-datasets", "bfcl-irrelevance", "-limit", "3", "-ollama", srv.URL, "-model", "fake", "-out", out, "-q", "-doc", "", "-probe-timeout", "10s"}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	res := readResults(t, out)
	if !strings.HasPrefix(res.Model.Status, "skipped: model fake at "+srv.URL+" failed a test chat") {
		t.Errorf("got model status %q, want skipped after a failed test chat", res.Model.Status)
	}
	for _, name := range []string{harness.TwoPhase, harness.Native, harness.Hybrid} {
		if r := findRow(t, res, "bfcl-irrelevance", name); r.Status != report.Skipped || r.RoutingAccuracy != nil {
			t.Errorf("%s: got status %q, routing %v; want skipped with no figures", name, r.Status, r.RoutingAccuracy)
		}
	}
	if !strings.Contains(stdout.String(), "| two-phase | skipped: model fake at "+srv.URL+" failed a test chat") {
		t.Errorf("markdown does not say why the model rows are absent:\n%s", stdout.String())
	}
}

// TestRunDegraded runs the model routers against a model that answers the test chat and then
// fails every routing request. The router degrades to "no tool"; on irrelevance queries that used
// to score as right. Now no degraded answer is right, the tables count them, and the report warns
// at its top.
func TestRunDegraded(t *testing.T) {
	srv := fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply {
		if len(req.Format) == 0 && len(req.Tools) == 0 {
			return fakeollama.Reply{Content: "ready"} // the probe
		}
		return fakeollama.Reply{Status: 500, Error: "model runner has unexpectedly stopped"}
	})
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"-datasets", "bfcl-irrelevance,bfcl-simple", "-limit", "3", "-routers", "bm25,two-phase,native",
		"-ollama", srv.URL, "-model", "fake", "-out", out, "-q", "-doc", ""}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	res := readResults(t, out)
	for _, ds := range []string{"bfcl-irrelevance", "bfcl-simple"} {
		for _, name := range []string{harness.TwoPhase, harness.Native} {
			r := findRow(t, res, ds, name)
			if r.Status != report.Measured || r.Degraded != r.Cases || r.Routing.Correct != 0 || r.EndToEnd.Correct != 0 || r.Decision.TN != 0 {
				t.Errorf("%s/%s: got %d of %d degraded, routing %+v, end-to-end %+v, TN %d; want all degraded, none right",
					ds, name, r.Degraded, r.Cases, r.Routing, *r.EndToEnd, r.Decision.TN)
			}
		}
	}
	md := stdout.String()
	if !strings.HasPrefix(md, "**Warning: 12 of 18 answers") || !strings.Contains(md, "reasons: model_failure 12") {
		t.Errorf("the report does not start with the degraded warning:\n%s", md)
	}
	if !strings.Contains(md, "| two-phase | — | 0.000 | 0.000 | 0.000 | — | 0.000 | 0.000 | 3 |") {
		t.Errorf("the bfcl-simple table does not count the degraded answers:\n%s", md)
	}
}

// TestUpdateDoc checks that each command rewrites its own section of the document and keeps the
// others, creating the file and its folder when missing.
func TestUpdateDoc(t *testing.T) {
	path := filepath.Join(t.TempDir(), "docs", "benchmarks.md")
	steps := []struct {
		section, body string
		want          []string
		gone          string
	}{
		{sectionLoad, "## Load\n\nload one\n", []string{"load one", "Not generated yet: run `go run ./bench -docs`."}, ""},
		{sectionAccuracy, "## Accuracy\n\naccuracy one\n", []string{"load one", "accuracy one", "Not generated yet: run `go run ./bench retrieval -docs`."}, "Not generated yet: run `go run ./bench -docs`."},
		{sectionAccuracy, "## Accuracy\n\naccuracy two\n", []string{"load one", "accuracy two"}, "accuracy one"},
		{sectionLoad, "## Load\n\nload two\n", []string{"load two", "accuracy two"}, "load one"},
		{sectionRetrieval, "## Retrieval\n\nretrieval one\n", []string{"load two", "accuracy two", "retrieval one"}, "Not generated yet: run `go run ./bench retrieval -docs`."},
		{sectionFeatures, "## Features\n\nfeatures one\n", []string{"load two", "accuracy two", "retrieval one", "features one"}, "Not generated yet: run `go run ./bench load -features -docs`."},
		{sectionConsole, "## Console\n\nconsole one\n", []string{"features one", "console one"}, "Not generated yet: run `go run ./bench load -console -docs`."},
		{sectionPath, "## Path\n\npath one\n", []string{"console one", "path one"}, "Not generated yet: run `go run ./bench load -path -docs`."},
		{sectionMemory, "## Memory\n\nmemory one\n", []string{"path one", "memory one"}, "Not generated yet: run `go run ./bench memory -docs`."},
		{sectionWaiting, "## Waiting\n\nwaiting one\n", []string{"memory one", "waiting one"}, "Not generated yet: run `go run ./bench approvals -docs`."},
		{sectionRouteCost, "## Route cost\n\nroute cost one\n", []string{"load two", "accuracy two", "retrieval one", "features one", "console one", "path one", "memory one", "route cost one"}, "Not generated yet: run `go run ./bench cost"},
		{sectionStream, "## Stream\n\nstream one\n", []string{"route cost one", "stream one"}, "Not generated yet: run `go run ./bench stream -docs`."},
		{sectionStreamOn, "## Stream on Ollama\n\nstream two\n", []string{"load two", "accuracy two", "retrieval one", "features one", "console one", "path one", "memory one", "waiting one", "route cost one", "stream one", "stream two"}, "Not generated yet: run `go run ./bench stream -ollama"},
		{sectionTrust, "## Client tools\n\ntrust one\n", []string{"stream two", "trust one"}, "Not generated yet: run `go run ./bench trust -docs`."},
		{sectionTrustOn, "## Client tools on Ollama\n\ntrust two\n", []string{"load two", "accuracy two", "retrieval one", "features one", "console one", "path one", "memory one", "waiting one", "route cost one", "stream one", "stream two", "trust one", "trust two"}, "Not generated yet"},
	}
	for i, st := range steps {
		if err := updateDoc(path, st.section, st.body); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		doc := string(raw)
		for _, w := range st.want {
			if !strings.Contains(doc, w) {
				t.Errorf("step %d: document lacks %q:\n%s", i, w, doc)
			}
		}
		if st.gone != "" && strings.Contains(doc, st.gone) {
			t.Errorf("step %d: document still holds %q:\n%s", i, st.gone, doc)
		}
		if !strings.HasPrefix(doc, docHead) || strings.Count(doc, "<!-- BEGIN ") != len(docSections) {
			t.Errorf("step %d: got a document without its head or with %d sections", i, strings.Count(doc, "<!-- BEGIN "))
		}
	}
	if err := updateDoc("", sectionLoad, "x"); err != nil {
		t.Errorf("no document: got %v, want nothing written", err)
	}
}

// TestRetrieval runs `go run ./bench retrieval` on the first queries of each pool and one small
// pool size, and checks that its outputs parse, the document's section holds the report, and the
// chart it links to is there.
func TestRetrieval(t *testing.T) {
	dir := t.TempDir()
	out, doc, chart := filepath.Join(dir, "out"), filepath.Join(dir, "docs", "benchmarks.md"), filepath.Join(dir, "charts", "retrieval.svg")
	var stdout, stderr bytes.Buffer
	args := []string{"retrieval", "-limit", "12", "-sizes", "300", "-out", out, "-doc", doc, "-chart", chart, "-q"}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	raw, err := os.ReadFile(filepath.Join(out, "retrieval.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res retrieval.Results
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("retrieval.json: %v", err)
	}
	if len(res.Recall) != 2*len(retrieval.Sets) || len(res.Scale) != 1 || res.Scale[0].Tools != 300 || res.Scale[0].Routes != 12 {
		t.Fatalf("got %d recall rows and scale %+v, want %d rows and 12 routes over 300 tools", len(res.Recall), res.Scale, 2*len(retrieval.Sets))
	}
	for _, rc := range res.Recall {
		if rc.Queries != 12 || len(rc.AtK) != len(retrieval.Ks) || len(rc.AtBudget) != len(retrieval.Budgets) {
			t.Errorf("%s/%s: got %d queries, %d ranks, %d budgets", rc.Pool, rc.Set, rc.Queries, len(rc.AtK), len(rc.AtBudget))
		}
	}
	if len(res.Intents) != 1 || res.Intents[0].PoolTools != 300 || res.Intents[0].Queries < 40 || len(res.Intents[0].AtK) != len(retrieval.IntentKs) {
		t.Errorf("got obvious intents %+v, want one row beside 300 BFCL tools of at least 40 intents", res.Intents)
	}
	md := stdout.String()
	for _, want := range []string{"| MetaTool | bm25+examples | 199 | 12 |", "| BFCL pool | keyword gate | 1067 | 12 |", "| 300 |", "not measured in this run", "](../charts/retrieval.svg)", "### Obvious intents",
		"### Held-out recall: tune and report parts", "| MetaTool | bm25+traffic | all, ", "### Matching, one way changed at a time", "| BFCL pool | report | related words off |"} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	text, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	if section, ok := sectionOf(string(text), sectionRetrieval); !ok || !strings.Contains(section, md) {
		t.Errorf("the document's retrieval section does not hold the report:\n%s", text)
	}
	if !strings.Contains(string(text), "Not generated yet: run `go run ./bench load -docs`.") {
		t.Error("the other sections were not kept")
	}
	checkSVG(t, chart)
}

func TestRunUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-routers", "magic"}, `unknown router "magic"`},
		{[]string{"-datasets", "imagenet"}, `unknown dataset "imagenet"`},
		{[]string{"-bfcl", "/nonexistent", "-datasets", "bfcl-simple"}, "opening dataset"},
		{[]string{"stray"}, `unexpected argument "stray"`},
	}
	for _, tc := range tests {
		err := run(context.Background(), append(tc.args, "-out", t.TempDir(), "-q", "-doc", ""), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

func TestSample(t *testing.T) {
	in := filepath.Join(t.TempDir(), "in.csv")
	var rows strings.Builder
	rows.WriteString("Query,Tool\n")
	for i := range 50 {
		rows.WriteString("query " + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ",Tool\n")
	}
	if err := os.WriteFile(in, []byte(rows.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := run(context.Background(), []string{"sample", "-n", "10", "-seed", "7", in}, &a, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"sample", "-n", "10", "-seed", "7", in}, &b, io.Discard); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(a.String(), "\n"); lines != 11 || a.String() != b.String() {
		t.Errorf("got %d lines, same output twice %v; want 11 lines, deterministic", lines, a.String() == b.String())
	}
}

func readResults(t *testing.T, dir string) *report.Results {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res report.Results
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	return &res
}

func findRow(t *testing.T, res *report.Results, ds, router string) report.Row {
	t.Helper()
	for _, r := range res.Rows {
		if r.Dataset == ds && r.Router == router {
			return r
		}
	}
	t.Fatalf("no row for %s/%s", ds, router)
	return report.Row{}
}

func checkSVG(t *testing.T, path string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(raw))
	circles := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("chart.svg is not XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "circle" {
			circles++
		}
	}
	if circles == 0 {
		t.Error("chart.svg has no points")
	}
}
