package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"toolrouter/bench/load"
)

// runLoad is `go run ./bench load`: it builds the sidecar (or takes -binary), load-tests it and
// writes load.json and load.md in -out, the markdown also on stdout.
func runLoad(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	levels := fs.String("concurrency", "1,8,64", "concurrencies, comma-separated")
	duration := fs.Duration("duration", 5*time.Second, "how long each run (sidecar, then floor) lasts per concurrency")
	binary := fs.String("binary", "", "toolrouter binary to test (default: go build the repository's)")
	out := fs.String("out", filepath.Join(benchDir(), "out"), "output folder for load.json and load.md")
	docTo := docFlags(fs)
	features := fs.Bool("features", false, "compare limits, usage records and metrics off, on with the embedded backends, and on with Redis and PostgreSQL (started on loopback)")
	console := fs.Bool("console", false, "compare the console at /ui (ui.enabled) off and on, with limits, usage records and metrics off")
	rounds := fs.Int("rounds", 2, "with -features or -console: runs of each variant per concurrency, alternated")
	path := fs.Bool("path", false, "measure the sidecar's own path against a bare HTTP hop (BenchmarkSidecarPath): -rounds runs (default 5) of -iterations")
	iterations := fs.Int("iterations", 20000, "with -path: iterations of each run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	docPath, err := docTo.resolve(fs, "out")
	if err != nil {
		return err
	}
	doc := &docPath
	if *path {
		runs := 5 // a median of five unless -rounds says otherwise
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "rounds" {
				runs = *rounds
			}
		})
		return runPathSection(ctx, args, *doc, runs, *iterations, stdout)
	}
	if *features && *console {
		return errors.New("-features and -console each write their own section: run them apart")
	}
	var conc []int
	for _, f := range strings.Split(*levels, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("-concurrency: %q is not a positive number", f)
		}
		conc = append(conc, n)
	}
	loadBefore := loadAverage()
	work, err := os.MkdirTemp("", "toolrouter-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if *binary == "" {
		*binary = filepath.Join(work, "toolrouter")
		fmt.Fprintln(stderr, "bench load: building the sidecar")
		if err := buildSidecar(ctx, *binary); err != nil {
			return err
		}
	}
	opts := load.Options{Binary: *binary, WorkDir: work, Concurrency: conc, Duration: *duration, Progress: stderr}
	var notes []string
	if *features {
		var stop func()
		opts.Variants, notes, stop = featureVariants(ctx, work)
		defer stop()
		opts.Rounds = *rounds
	}
	if *console {
		opts.Variants, opts.Rounds = consoleVariants(), *rounds
	}
	res, err := load.RunTest(ctx, opts)
	if err != nil {
		return err
	}
	cmdline := strings.Join(append([]string{"go run ./bench load"}, args...), " ")
	if *features || *console {
		if after := loadAverage(); loadBefore >= 0 && after >= 0 {
			notes = append(notes, fmt.Sprintf("Load average (1 min) %.1f at the start, %.1f at the end: the machine may be shared, "+
				"and the latencies, p99 most, include any wait for a core.", loadBefore, after))
		}
		section, head := sectionFeatures, "## Cost of limits, usage records and metrics\n\n"+featuresIntro
		if *console {
			section, head = sectionConsole, "## Cost of the console\n\n"+consoleIntro
		}
		md := featuresMarkdown(cmdline, time.Now(), res, notes)
		if err := writeOut(*out, section, res, md); err != nil {
			return err
		}
		if err := updateDoc(*doc, section, head+md); err != nil {
			return err
		}
		fmt.Fprint(stdout, md)
		return nil
	}
	md := loadMarkdown(cmdline, time.Now(), res)
	if err := writeOut(*out, "load", res, md); err != nil {
		return err
	}
	if err := updateDoc(*doc, sectionLoad, "## Load test of the sidecar\n\n"+loadIntro+md); err != nil {
		return err
	}
	fmt.Fprint(stdout, md)
	return nil
}

// runPathSection is `go run ./bench load -path`: it runs BenchmarkSidecarPath and rewrites its
// section of the document.
func runPathSection(ctx context.Context, args []string, doc string, runs, iterations int, stdout io.Writer) error {
	if runs < 1 || iterations < 1 {
		return errors.New("-path needs -rounds and -iterations of at least 1")
	}
	benchtime := strconv.Itoa(iterations) + "x"
	before := loadAverage()
	res, err := runPath(ctx, runs, benchtime)
	if err != nil {
		return err
	}
	cmdline := strings.Join(append([]string{"go run ./bench load"}, args...), " ")
	md := pathMarkdown(cmdline, time.Now(), benchtime, res, before, loadAverage())
	if err := updateDoc(doc, sectionPath, "## The sidecar's own path\n\n"+pathIntro+md); err != nil {
		return err
	}
	fmt.Fprint(stdout, md)
	return nil
}

// writeOut writes NAME.json and NAME.md in dir.
func writeOut(dir, name string, res *load.Result, md string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, _ := json.MarshalIndent(res, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, name+".json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name+".md"), []byte(md), 0o644)
}

// loadIntro says what the load test does; its figures follow it.
const loadIntro = "The load test builds the sidecar binary, starts it on 127.0.0.1 with its built-in defaults " +
	"(calculator and clock in-process) against a zero-latency fake Ollama in the benchmark process, and drives " +
	"`POST /v1/route` with one query at each concurrency (a fresh sidecar per level; peak memory is the " +
	"process's `VmHWM`). The floor replays the same model requests straight to the fake model with the same " +
	"client. The load generator, the fake model and the sidecar share the machine's cores, so the figures bound " +
	"the sidecar's overhead from above and vary between runs. Nothing leaves loopback.\n\n"

// buildSidecar builds the repository's toolrouter binary into path.
func buildSidecar(ctx context.Context, path string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", path, ".")
	cmd.Dir = moduleDir()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the sidecar: %w\n%s", err, out)
	}
	return nil
}

func loadMarkdown(cmdline string, date time.Time, r *load.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Command: `%s`  \n", cmdline)
	fmt.Fprintf(&b, "Date: %s.  \n", date.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "Machine: %s/%s, %d CPUs, %s. Query %q; %d model round trips per route; %.0f s per run.\n\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), r.Query, r.RoundTrips, r.DurationSeconds)
	b.WriteString("| concurrency | sidecar req/s | p50 ms | p99 ms | peak RSS MB | errors | floor req/s | floor p50 ms | floor p99 ms | req/s sidecar/floor | p50 sidecar/floor | p99 sidecar/floor |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, l := range r.Levels {
		fmt.Fprintf(&b, "| %d | %.0f | %.3f | %.3f | %.1f | %d | %.0f | %.3f | %.3f | %.2f | %.2f | %.2f |\n",
			l.Concurrency, l.Sidecar.RPS, l.Sidecar.P50MS, l.Sidecar.P99MS, l.Sidecar.PeakRSSMB, l.Sidecar.Errors+l.Floor.Errors,
			l.Floor.RPS, l.Floor.P50MS, l.Floor.P99MS, l.RatioRPS, l.RatioP50, l.RatioP99)
	}
	for _, l := range r.Levels {
		for _, e := range []string{l.Sidecar.FirstError, l.Floor.FirstError} {
			if e != "" {
				fmt.Fprintf(&b, "\nFirst error at concurrency %d: %s\n", l.Concurrency, e)
			}
		}
	}
	return b.String()
}
