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
	ollama, model                                     string
	fake                                              bool
	probeTimeout                                      time.Duration
	limit, sample, concurrency                        int
	seed                                              uint64
	out, doc                                          string
	quiet                                             bool
}

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
	fs.StringVar(&f.ollama, "ollama", "http://127.0.0.1:11434", "Ollama URL for the model routers")
	fs.StringVar(&f.model, "model", "qwen2.5:7b", "model for the model routers")
	fs.DurationVar(&f.probeTimeout, "probe-timeout", 2*time.Minute, "how long the test chat that must succeed before the model rows run may take (it loads the model)")
	fs.BoolVar(&f.fake, "fake-model", false, "run the model routers against a built-in fake model: a plumbing check, not a measurement")
	fs.IntVar(&f.limit, "limit", 0, "run only the first N queries of each dataset (0: all)")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the threshold folds and of -metatool-sample")
	fs.StringVar(&f.out, "out", filepath.Join(benchDir(), "out"), "output folder for results.json, results.md and chart.svg")
	fs.StringVar(&f.doc, "doc", defaultDoc(), "markdown document whose accuracy section this run rewrites (\"\": none)")
	fs.IntVar(&f.concurrency, "concurrency", 1, "queries routed at once")
	fs.BoolVar(&f.quiet, "q", false, "no progress bar")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
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
	work, err := os.MkdirTemp("", "toolrouter-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	o := harness.Options{
		Routers: routers, Concurrency: f.concurrency, Seed: f.seed, Limit: f.limit,
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
	switch {
	case f.fake:
		fake := fakeollama.Start(fakemodel.Reply)
		defer fake.Close()
		chat, err := harness.Client(fake.URL)
		if err != nil {
			return err
		}
		o.Chat, o.Plumbing, o.Settings = chat, true, harness.Settings("fake")
		o.Model = report.Model{URL: fake.URL, Name: "fake", Status: "fake model (plumbing only; answers the first tool, reads no label)"}
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
		}
	default:
		o.Model = report.Model{Status: "no model router requested"}
	}

	res, err := harness.Run(ctx, o)
	if err != nil {
		return err
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
	return nil
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
