package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"toolrouter/bench/report"
	"toolrouter/bench/retrieval"
	"toolrouter/config"
)

// runRetrieval is `go run ./bench retrieval`: recall of the phase-1 shortlist on MetaTool and the
// BFCL pool, the obvious intents beside BFCL pools of each size, and the shortlist's cost at
// growing pool sizes. It writes retrieval.json and retrieval.md in -out,
// the chart at -chart, and rewrites the retrieval section of -doc; the markdown also on stdout.
func runRetrieval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("retrieval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", filepath.Join(benchDir(), "data"), "folder holding bfcl/ and metatool/")
	csvPath := fs.String("metatool-csv", "", "MetaTool selection CSV, Query,Tool (default DATA/metatool/all_clean_data_sample.csv; the full all_clean_data.csv has 20,614 rows)")
	sizes := fs.String("sizes", "200,2000,20000", "pool sizes of the obvious intents and the cost-at-scale tables, comma-separated (\"\": none)")
	limit := fs.Int("limit", 0, "rank and route only the first N queries of each pool (0: all)")
	seed := fs.Uint64("seed", 1, "seed of the example folds and of the order examples are learned in")
	out := fs.String("out", filepath.Join(benchDir(), "out"), "output folder for retrieval.json and retrieval.md")
	chart := fs.String("chart", "", "where the chart goes (default: with -docs bench/charts/retrieval.svg, kept in the repository since the document shows it; else OUT/retrieval.svg)")
	docTo := docFlags(fs)
	quiet := fs.Bool("q", false, "no progress")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	docPath, err := docTo.resolve(fs, "limit", "sizes", "out")
	if err != nil {
		return err
	}
	doc := &docPath
	if *chart == "" {
		*chart = filepath.Join(*out, "retrieval.svg")
		if samePath(docPath, defaultDoc()) {
			*chart = filepath.Join(benchDir(), "charts", "retrieval.svg")
		}
	}
	if *csvPath == "" {
		*csvPath = filepath.Join(*data, "metatool", "all_clean_data_sample.csv")
	}
	var ns []int
	for _, f := range strings.Split(*sizes, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return fmt.Errorf("-sizes: %q is not a positive number", f)
		}
		ns = append(ns, n)
	}
	progress := io.Discard
	if !*quiet {
		progress = stderr
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	res := &retrieval.Results{
		Command: strings.Join(append([]string{"go run ./bench retrieval"}, relArgs(args)...), " "),
		Started: time.Now(), Seed: *seed, Limit: *limit, LoadStart: loadAverage(),
		Machine: report.Machine{GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU()},
	}
	meta, err := retrieval.MetaTool(filepath.Join(*data, "metatool", "plugin_des.json"), *csvPath)
	if err != nil {
		return err
	}
	bfcl, err := retrieval.BFCL(filepath.Join(*data, "bfcl"))
	if err != nil {
		return err
	}
	// The examples written for the intents' servers may be no query of any benchmark this run
	// loads: a run with such an example would measure its own answers.
	set, err := retrieval.LoadIntents(filepath.Join(*data, "obvious_intents.json"))
	if err != nil {
		return err
	}
	ref, err := retrieval.LoadReference(filepath.Join(*data, "reference_tools.json"))
	if err != nil {
		return err
	}
	shipped, refExamples, err := retrieval.Examples(filepath.Join(*data, "reference_examples.json"))
	if err != nil {
		return err
	}
	queries, err := retrieval.BenchmarkQueries(*data, *csvPath)
	if err != nil {
		return err
	}
	for _, ex := range []map[string][]string{shipped, refExamples} {
		if bad := retrieval.Contaminated(ex, queries); len(bad) > 0 {
			return fmt.Errorf("examples overlap benchmark queries:\n%s", strings.Join(bad, "\n"))
		}
	}

	// Before -limit cuts the pools: the set's questions are looked up among all their queries.
	var translated []retrieval.Translated
	for _, set := range []struct{ file, part string }{{"nonenglish_tune.json", retrieval.PartTune}, {"nonenglish.json", retrieval.PartReport}} {
		t, err := retrieval.NonEnglish(filepath.Join(*data, set.file), set.part, meta, bfcl)
		if err != nil {
			return err
		}
		translated = append(translated, t...)
	}
	negatives, err := retrieval.AwarenessNegatives(filepath.Join(*data, "metatool", "awareness.json"))
	if err != nil {
		return err
	}

	opts := retrieval.RecallOptions{Seed: *seed, PerTool: config.Default().Retrieval.ExamplesPerTool, Log: log}
	for _, p := range []*retrieval.Pool{meta, bfcl} {
		if *limit > 0 && *limit < len(p.Queries) {
			p.Queries = p.Queries[:*limit]
		}
		inv, err := retrieval.Serve(ctx, p, log)
		if err != nil {
			return err
		}
		for _, set := range retrieval.Sets {
			fmt.Fprintf(progress, "retrieval: %s: %s, %d queries\n", p.Name, set, len(p.Queries))
			rc, err := retrieval.MeasureRecall(ctx, inv, p, set, opts)
			if err != nil {
				inv.Close()
				return fmt.Errorf("%s, %s: %w", p.Name, set, err)
			}
			res.Recall = append(res.Recall, *rc)
		}
		fmt.Fprintf(progress, "retrieval: %s: held-out parts\n", p.Name)
		ho, err := retrieval.MeasureHeldOut(ctx, inv, p, opts)
		if err != nil {
			inv.Close()
			return fmt.Errorf("%s, held out: %w", p.Name, err)
		}
		res.HeldOut = append(res.HeldOut, ho...)
		mr, err := retrieval.MeasureMatching(ctx, inv, p, opts)
		if err != nil {
			inv.Close()
			return fmt.Errorf("%s, matching: %w", p.Name, err)
		}
		res.Matching = append(res.Matching, mr...)
		fmt.Fprintf(progress, "retrieval: %s: questions in other languages\n", p.Name)
		lr, err := retrieval.MeasureLanguages(ctx, inv, p, translated, opts)
		if err != nil {
			inv.Close()
			return fmt.Errorf("%s, other languages: %w", p.Name, err)
		}
		var noTool []string
		if p == meta {
			noTool = negatives
		}
		ws, err := retrieval.MeasureWeak(ctx, inv, p, noTool, opts)
		if err != nil {
			inv.Close()
			return fmt.Errorf("%s, weak shortlists: %w", p.Name, err)
		}
		res.Languages, res.WeakShares = append(res.Languages, lr...), append(res.WeakShares, ws...)
		inv.Close()
	}

	if len(ns) > 0 {
		tools, err := retrieval.LoadReal(*data)
		if err != nil {
			return err
		}
		for _, n := range ns {
			s, err := retrieval.MeasureScale(ctx, tools.Scale(n), retrieval.ScaleOptions{Limit: *limit, Log: log, Progress: progress})
			if err != nil {
				return fmt.Errorf("%d tools: %w", n, err)
			}
			res.Scale = append(res.Scale, *s)
		}
	}
	// After the cost at scale, whose memory figures the intents' pools would disturb.
	res.IntentRule, res.IntentExcluded = set.Rule, set.Exclude
	for _, n := range ns {
		fmt.Fprintf(progress, "retrieval: obvious intents beside %d BFCL tools\n", n)
		in, err := retrieval.MeasureIntents(ctx, set, ref, refExamples, filepath.Join(*data, "bfcl"), n, log)
		if err != nil {
			return fmt.Errorf("obvious intents, %d tools: %w", n, err)
		}
		res.Intents = append(res.Intents, *in)
	}
	res.Seconds, res.LoadEnd = time.Since(res.Started).Seconds(), loadAverage()
	res.Evaluate()

	chartRef := ""
	if *chart != "" {
		if err := writeFile(*chart, retrieval.Chart(res)); err != nil {
			return err
		}
		chartRef = *chart
		if *doc != "" {
			if rel, err := filepath.Rel(filepath.Dir(*doc), *chart); err == nil {
				chartRef = filepath.ToSlash(rel)
			}
		}
	}
	md := retrieval.Markdown(res, chartRef)
	js, _ := json.MarshalIndent(res, "", "  ")
	if err := writeFile(filepath.Join(*out, "retrieval.json"), string(js)+"\n"); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(*out, "retrieval.md"), md); err != nil {
		return err
	}
	if err := updateDoc(*doc, sectionRetrieval, "## Retrieval: the phase-1 shortlist\n\n"+retrieval.Intro+md); err != nil {
		return err
	}
	fmt.Fprint(stdout, md)
	return nil
}

// relArgs writes paths inside the repository relative to it, so the recorded command reads the
// same on any checkout, and an empty argument as two single quotes.
func relArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if rel, err := filepath.Rel(moduleDir(), a); err == nil && filepath.IsAbs(a) && !strings.HasPrefix(rel, "..") {
			a = rel
		}
		if a == "" {
			a = "''"
		}
		out[i] = a
	}
	return out
}

// loadAverage is the machine's one-minute load average (-1 where /proc/loadavg is missing).
func loadAverage() float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

func writeFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o644)
}
