package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"time"

	"toolrouter/bench/cost"
	"toolrouter/bench/harness"
	"toolrouter/bench/report"
	"toolrouter/router"
)

// runCost is `go run ./bench cost`: what a route costs on a real Ollama server, by reasoning
// setting and round and by inventory size. It rewrites the route-cost section of -doc and writes
// the markdown on stdout. A model server that does not answer a test chat with the model fails
// the command and leaves the document as it was.
func runCost(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cost", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ollama := fs.String("ollama", "http://127.0.0.1:11434", "Ollama URL")
	model := fs.String("model", "qwen2.5:7b", "model to route with")
	tokenizer := fs.String("tokenizer-model", "", "model whose tokenizer counts the phase-1 answers' text (default: -model; give the plain model of a variant built for a format)")
	randomWeights := fs.Bool("random-weights", false, "the model has random weights (scripts/real-ollama's tiny models, also recognised by name): its figures are labelled as measuring the server, not the model")
	reasoning := fs.String("reasoning", "none,brief,full", "router.reasoning settings of the rounds, comma-separated (\"\": no rounds)")
	roundsReps := fs.Int("rounds-reps", 3, "routes per reasoning setting, the queries in turn, after one warm-up route")
	sizes := fs.String("sizes", "10,30,200", "BFCL inventory sizes of the rest by size, comma-separated (\"\": none)")
	reps := fs.Int("reps", 3, "routes per inventory size, after one warm-up route")
	oneTool := fs.Int("one-tool", 3, "routes with a budget of one tool call (max_tool_calls 1, reasoning none), prefill on and off in turn, after one warm-up route (0: not measured)")
	argumentsN := fs.Int("arguments", 20, "BFCL functions whose questions are routed naming them, measuring phase 2 alone with prefill on and off (0: not measured)")
	generate := fs.Int("generate", 5, "example queries the model writes for each built-in tool, as retrieval.generate_examples (0: not measured)")
	probeTimeout := fs.Duration("probe-timeout", 2*time.Minute, "how long the test chat that must succeed first may take (it loads the model)")
	docTo := docFlags(fs)
	quiet := fs.Bool("q", false, "no progress")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	docPath, err := docTo.resolve(fs, "reasoning", "sizes", "arguments", "generate")
	if err != nil {
		return err
	}
	doc := &docPath
	if *generate < 0 || *generate > 20 {
		return fmt.Errorf("-generate: want 0..20, got %d", *generate)
	}
	if *roundsReps < 1 || *reps < 1 {
		return fmt.Errorf("-rounds-reps and -reps: want at least 1, got %d and %d", *roundsReps, *reps)
	}
	var reasonings []router.Reasoning
	if strings.TrimSpace(*reasoning) != "" {
		var known []string
		for _, r := range harness.Reasonings {
			known = append(known, string(r))
		}
		names, err := list(*reasoning, known, "reasoning")
		if err != nil {
			return err
		}
		for _, n := range names {
			reasonings = append(reasonings, router.Reasoning(n))
		}
	}
	ns, err := positives(*sizes, "-sizes")
	if err != nil {
		return err
	}
	if *argumentsN < 0 {
		return fmt.Errorf("-arguments: want 0 or more, got %d", *argumentsN)
	}
	if *oneTool < 0 {
		return fmt.Errorf("-one-tool: want 0 or more, got %d", *oneTool)
	}
	if len(reasonings) == 0 && len(ns) == 0 && *generate == 0 && *argumentsN == 0 && *oneTool == 0 {
		return fmt.Errorf("nothing to measure: -reasoning and -sizes are empty and -generate, -arguments and -one-tool are 0")
	}
	if *tokenizer == "" {
		*tokenizer = *model
	}
	progress := io.Discard
	if !*quiet {
		progress = stderr
	}

	client, err := harness.Client(*ollama)
	if err != nil {
		return err
	}
	if reason := harness.Probe(ctx, client, *ollama, *model, harness.ProbeTimeouts{List: 3 * time.Second, Chat: *probeTimeout}); reason != "" {
		return fmt.Errorf("nothing measured: %s", reason)
	}
	version, err := client.Version(ctx)
	if err != nil {
		version = "version unknown"
	}
	random := *randomWeights || randomWeightModel(*model)
	started, loadStart := time.Now(), loadAverage()
	res, err := cost.Run(ctx, cost.Options{
		Server: client, Settings: harness.Settings(*model), TokenizerModel: *tokenizer,
		Reasonings: reasonings, RoundsReps: *roundsReps, Sizes: ns, Reps: *reps, Arguments: *argumentsN, OneTool: *oneTool, GenerateExamples: *generate,
		Progress: progress, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return err
	}
	res.Command = strings.Join(append([]string{"go run ./bench cost"}, relArgs(args)...), " ")
	res.Started, res.Seconds, res.LoadStart, res.LoadEnd = started, time.Since(started).Seconds(), loadStart, loadAverage()
	res.Machine = report.Machine{GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU()}
	res.ServerVersion, res.RandomWeights = version, random
	res.Model = report.Model{URL: *ollama, Name: *model, Status: "measured (a test chat with the model succeeded)"}
	if random {
		res.Model.Status = report.RandomWeightsLabel + " (a test chat with the model succeeded)"
	}

	md := cost.Markdown(res)
	if err := updateDoc(*doc, sectionRouteCost, "## Route cost on a real Ollama\n\n"+cost.Intro+md); err != nil {
		return err
	}
	fmt.Fprint(stdout, md)
	if *doc != "" {
		fmt.Fprintf(stderr, "bench cost: rewrote the %s section of %s\n", sectionRouteCost, *doc)
	}
	return nil
}

// positives parses a comma-separated list of positive numbers ("": none).
func positives(s, flagName string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %q is not a positive number", flagName, f)
		}
		out = append(out, n)
	}
	return out, nil
}
