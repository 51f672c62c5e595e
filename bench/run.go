package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"toolrouter/bench/dataset"
	"toolrouter/bench/fakemodel"
	"toolrouter/bench/harness"
	"toolrouter/bench/report"
	"toolrouter/config"
	"toolrouter/internal/fakeollama"
	"toolrouter/router"
)

// Dataset names, in report order.
var datasetNames = []string{
	"bfcl-simple", "bfcl-multiple", "bfcl-parallel", "bfcl-parallel-multiple", "bfcl-irrelevance",
	"metatool-selection", "metatool-awareness", "scenarios",
}

// bfclFiles maps BFCL dataset names to their question file; the possible answers have the same
// name under possible_answer/ (irrelevance has none).
var bfclFiles = map[string]string{
	"bfcl-simple":            "BFCL_v4_simple_python.json",
	"bfcl-multiple":          "BFCL_v4_multiple.json",
	"bfcl-parallel":          "BFCL_v4_parallel.json",
	"bfcl-parallel-multiple": "BFCL_v4_parallel_multiple.json",
	"bfcl-irrelevance":       "BFCL_v4_irrelevance.json",
}

// runFlags are the flags of the run command.
type runFlags struct {
	data, bfcl, metatool, metatoolCSV, scenarios, npm string
	datasets, routers                                 string
	reasoning                                         string
	ollama, model                                     string
	fake                                              bool
	randomWeights                                     bool
	probeTimeout, caseTimeout                         time.Duration
	limit, sample, concurrency                        int
	seed                                              uint64
	out, doc                                          string
	resume, check, quiet                              bool
}

// casesFile is the per-case file's name in the output folder.
const casesFile = "cases.jsonl"

func parseRun(args []string, stderr io.Writer) (*runFlags, error) {
	f := &runFlags{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := filepath.Join(benchDir(), "data")
	fs.StringVar(&f.data, "data", data, "folder holding bfcl/, metatool/ and scenarios.json")
	fs.StringVar(&f.bfcl, "bfcl", "", "BFCL folder: BFCL_v4_*.json and possible_answer/ (default DATA/bfcl)")
	fs.StringVar(&f.metatool, "metatool", "", "MetaTool folder: plugin_des.json and awareness.json (default DATA/metatool)")
	fs.StringVar(&f.metatoolCSV, "metatool-csv", "", "MetaTool selection CSV, Query,Tool (default DATA/metatool/all_clean_data_sample.csv)")
	fs.IntVar(&f.sample, "metatool-sample", 0, "keep a seeded sample of this many selection rows (0: every row of the CSV)")
	fs.StringVar(&f.scenarios, "scenarios", "", "scenario file (default DATA/scenarios.json)")
	fs.StringVar(&f.npm, "npm", filepath.Join(moduleDir(), "examples", "npm"), "folder with node_modules of the npm reference servers")
	fs.StringVar(&f.datasets, "datasets", strings.Join(datasetNames, ","), "datasets to run, comma-separated")
	fs.StringVar(&f.routers, "routers", strings.Join(harness.Routers, ","), "routers to run, comma-separated")
	fs.StringVar(&f.reasoning, "reasoning", string(harness.DefaultReasoning),
		"router.reasoning settings to run the routers that select with phase 1 (two-phase, hybrid) with, comma-separated: "+
			"none, brief, full; each setting has its own rows")
	fs.StringVar(&f.ollama, "ollama", "http://127.0.0.1:11434", "Ollama URL for the model routers")
	fs.StringVar(&f.model, "model", "qwen2.5:7b", "model for the model routers")
	fs.DurationVar(&f.probeTimeout, "probe-timeout", 2*time.Minute, "how long the test chat that must succeed before the model rows run may take (it loads the model)")
	fs.BoolVar(&f.fake, "fake-model", false, "run the model routers against a built-in fake model: a plumbing check, not a measurement")
	fs.BoolVar(&f.randomWeights, "random-weights", false, "the model has random weights (scripts/real-ollama's tiny models, also recognised by name): its rows check shape, model calls and tokens, never accuracy; refused with -docs or -doc")
	fs.DurationVar(&f.caseTimeout, "case-timeout", 2*time.Minute, "cancel one router's work on one case after this long and count it as timed out (0: no limit)")
	fs.BoolVar(&f.resume, "resume", false, "take the answers OUT/"+casesFile+" already holds (same flags required) and run only the rest")
	fs.BoolVar(&f.check, "check", false, "after the run, check OUT/"+casesFile+" for shape: every case answered, model routers with model calls and prompt tokens "+
		"and a time split that adds up, none timed out, phase-1 routers' lines with their run's reasoning")
	fs.IntVar(&f.limit, "limit", 0, "run only the first N queries of each dataset (0: all)")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the threshold folds and of -metatool-sample")
	fs.StringVar(&f.out, "out", filepath.Join(benchDir(), "out"), "output folder for "+casesFile+" (written case by case), results.json, results.md and chart.svg")
	doc := docFlags(fs)
	fs.IntVar(&f.concurrency, "concurrency", 1, "queries routed at once")
	fs.BoolVar(&f.quiet, "q", false, "no progress bar")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var err error
	if f.doc, err = doc.resolve(fs, "datasets", "routers", "limit", "metatool-sample", "out"); err != nil {
		return nil, err
	}
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	def(&f.bfcl, filepath.Join(f.data, "bfcl"))
	def(&f.metatool, filepath.Join(f.data, "metatool"))
	def(&f.metatoolCSV, filepath.Join(f.metatool, "all_clean_data_sample.csv"))
	def(&f.scenarios, filepath.Join(f.data, "scenarios.json"))
	return f, nil
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseRun(args, stderr)
	if err != nil {
		return err
	}
	routers, err := list(f.routers, harness.Routers, "router")
	if err != nil {
		return err
	}
	names, err := list(f.datasets, datasetNames, "dataset")
	if err != nil {
		return err
	}
	var known []string
	for _, r := range harness.Reasonings {
		known = append(known, string(r))
	}
	settings, err := list(f.reasoning, known, "reasoning")
	if err != nil {
		return err
	}
	var reasonings []router.Reasoning
	for _, r := range settings {
		reasonings = append(reasonings, router.Reasoning(r))
	}
	work, err := os.MkdirTemp("", "toolrouter-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	o := harness.Options{
		Routers: routers, Reasoning: reasonings, Concurrency: f.concurrency, Seed: f.seed, Limit: f.limit,
		Command: strings.Join(append([]string{"go run ./bench"}, args...), " "),
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if !f.quiet {
		o.Progress = stderr
	}
	for _, name := range names {
		ds, servers, err := loadDataset(name, f, work)
		if err != nil {
			return err
		}
		if servers != nil {
			o.Servers = servers
		}
		ds.Limit(f.limit)
		ds.Source = strings.ReplaceAll(ds.Source, moduleDir()+string(filepath.Separator), "")
		o.Datasets = append(o.Datasets, ds)
	}

	needModel := slices.ContainsFunc(routers, func(r string) bool {
		return r == harness.TwoPhase || r == harness.Native || r == harness.Hybrid
	})
	random := needModel && !f.fake && (f.randomWeights || randomWeightModel(f.model))
	if random && f.doc != "" {
		return fmt.Errorf("model %s has random weights (%s): drop -docs and -doc to keep its rows out of %s", f.model, report.RandomWeightsLabel, f.doc)
	}
	o.RandomWeights, o.CaseTimeout = random, f.caseTimeout
	switch {
	case f.fake:
		fake := fakeollama.Start(fakemodel.Reply)
		defer fake.Close()
		chat, err := harness.Client(fake.URL)
		if err != nil {
			return err
		}
		o.Chat, o.Plumbing, o.Settings = chat, true, harness.Settings(fakeModel)
		o.Model = report.Model{URL: fake.URL, Name: fakeModel, Status: "fake model (plumbing only; answers the first tool, reads no label)"}
	case needModel:
		chat, err := harness.Client(f.ollama)
		if err != nil {
			return err
		}
		// The model counts as measured only once a real chat with it has succeeded.
		o.Model = report.Model{URL: f.ollama, Name: f.model}
		if reason := harness.Probe(ctx, chat, f.ollama, f.model, harness.ProbeTimeouts{List: 3 * time.Second, Chat: f.probeTimeout}); reason != "" {
			o.SkipReason, o.Model.Status = reason, "skipped: "+reason
		} else {
			o.Chat, o.Settings = chat, harness.Settings(f.model)
			o.Model.Status = "measured (a test chat with the model succeeded)"
			if random {
				o.Model.Status = report.RandomWeightsLabel + " (a test chat with the model succeeded)"
			}
		}
	default:
		o.Model = report.Model{Status: "no model router requested"}
	}

	cases, err := openCases(f, o, routers, names, needModel, random)
	if err != nil {
		return err
	}
	defer cases.Close()
	o.Cases = cases
	if n := cases.Resumed(); n > 0 {
		fmt.Fprintf(stderr, "bench: resuming: %d answers taken from %s\n", n, cases.Path())
	}
	res, err := harness.Run(ctx, o)
	if err != nil {
		if n := cases.Lines(); n > 0 {
			fmt.Fprintf(stderr, "bench: %d answers are kept in %s; rerun with the same flags and -resume to finish\n", n, cases.Path())
		}
		return err
	}
	if f.caseTimeout > 0 {
		res.CaseTimeout = f.caseTimeout.String()
	}
	md, err := report.Write(f.out, res)
	if err != nil {
		return err
	}
	if err := updateDoc(f.doc, sectionAccuracy, "## Routing accuracy\n\n"+md); err != nil {
		return err
	}
	fmt.Fprint(stdout, md)
	fmt.Fprintf(stderr, "bench: wrote results.json, results.md and chart.svg to %s\n", f.out)
	if f.doc != "" {
		fmt.Fprintf(stderr, "bench: rewrote the accuracy section of %s\n", f.doc)
	}
	if f.check {
		problems, err := harness.CheckCases(cases.Path(), o.Datasets, res)
		if err != nil {
			return fmt.Errorf("check: %w", err)
		}
		for _, p := range problems {
			fmt.Fprintln(stderr, "bench: check:", p)
		}
		if len(problems) > 0 {
			return fmt.Errorf("check: %d problems in %s", len(problems), cases.Path())
		}
		fmt.Fprintf(stderr, "bench: check: %d answers in %s have the expected shape\n", cases.Lines(), cases.Path())
	}
	return nil
}

// fakeModel is the built-in fake model's name.
const fakeModel = "fake"

// randomWeightModel reports whether a model is one of scripts/real-ollama's random-weight models.
func randomWeightModel(name string) bool {
	name = strings.TrimSuffix(name, ":latest")
	return name == "tiny" || name == "tiny-json"
}

// openCases opens the per-case file in the output folder, with the parameters a resumed run must share.
func openCases(f *runFlags, o harness.Options, routers, names []string, needModel, random bool) (*harness.CaseLog, error) {
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return nil, fmt.Errorf("creating output folder: %w", err)
	}
	p := harness.CaseParams{
		Datasets: names, Routers: routers, Limit: f.limit, Seed: f.seed, MetaToolSample: f.sample,
		FakeModel: f.fake, RandomWeights: random, CaseTimeout: f.caseTimeout.String(),
	}
	for _, ds := range o.Datasets {
		p.Sources = append(p.Sources, ds.Source)
	}
	h := harness.CaseHeader{Started: time.Now().UTC()}
	switch {
	case f.fake:
		p.Model, h.Label = fakeModel, "fake model: plumbing only, not a measurement"
	case needModel:
		p.Model, h.ModelURL = f.model, f.ollama
	}
	if needModel {
		p.Reasoning = o.Reasoning
	}
	if random {
		h.Label = report.RandomWeightsLabel
	}
	h.Params = p
	return harness.OpenCaseLog(filepath.Join(f.out, casesFile), h, f.resume)
}

// loadDataset reads one dataset; for the scenario set it also configures the servers it needs, in work.
func loadDataset(name string, f *runFlags, work string) (*dataset.Dataset, map[string]config.Server, error) {
	if file, ok := bfclFiles[name]; ok {
		answers := filepath.Join(f.bfcl, "possible_answer", file)
		if name == "bfcl-irrelevance" {
			answers = ""
		}
		ds, err := dataset.LoadBFCL(name, filepath.Join(f.bfcl, file), answers)
		return ds, nil, err
	}
	tools := filepath.Join(f.metatool, "plugin_des.json")
	switch name {
	case "metatool-selection":
		ds, err := dataset.LoadMetaToolSelection(name, f.metatoolCSV, tools, f.sample, f.seed)
		return ds, nil, err
	case "metatool-awareness":
		ds, err := dataset.LoadMetaToolAwareness(name, filepath.Join(f.metatool, "awareness.json"), tools)
		return ds, nil, err
	}
	uses, err := dataset.ScenarioServers(f.scenarios)
	if err != nil {
		return nil, nil, err
	}
	servers, sandbox, missing, err := harness.ScenarioServers(work, f.npm, uses)
	if err != nil {
		return nil, nil, err
	}
	ds, err := dataset.LoadScenarios(name, f.scenarios, dataset.ScenarioOptions{
		Vars:      map[string]string{"SANDBOX": sandbox},
		Available: func(s string) bool { _, ok := servers[s]; return ok },
	})
	if err != nil {
		return nil, nil, err
	}
	if len(missing) > 0 {
		ds.Notes = append(ds.Notes, "not run here: "+strings.Join(missing, "; "))
	}
	return ds, servers, nil
}

// list parses a comma-separated list of known names.
func list(s string, known []string, what string) ([]string, error) {
	var out []string
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !slices.Contains(known, n) {
			return nil, fmt.Errorf("unknown %s %q (known: %s)", what, n, strings.Join(known, ", "))
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no %s given", what)
	}
	return out, nil
}
