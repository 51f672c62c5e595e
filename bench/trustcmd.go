package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"toolrouter/bench/dataset"
	"toolrouter/bench/fakemodel"
	"toolrouter/bench/harness"
	"toolrouter/bench/load"
	"toolrouter/bench/trust"
	"toolrouter/internal/fakeollama"
	"toolrouter/router"
)

// trustIntro says what the client-tools sections measure.
const trustIntro = "Whether a client can trust the tool calls it gets. BFCL questions (simple, multiple, parallel, " +
	"parallel_multiple, irrelevance: the first `-n` of each) are sent as an OpenAI client sends them, the question's " +
	"functions as the request's `tools`, under each `tool_choice` (`auto`, `required`, a named function: the first " +
	"expected call's, and `none`), to toolrouter's doors (the sidecar built and started on loopback, its phases over " +
	"the client's tools) and straight to the model server's own doors with the same model (its native tool calling). " +
	"Ollama's `/api/chat` has no `tool_choice`: it is asked with `auto` only, with the sidecar's `num_ctx` (the model " +
	"server's `/v1/chat/completions` cannot be sent one: on a shared server it reloads the model at its default, so a run " +
	"may leave that door out with `-plain-doors`). Every answer, and each of the sidecar's model calls, is bounded by " +
	"`-max-tokens`. A call **names a function of the " +
	"request** when its name is one of the request's functions; its **arguments are valid** when they validate against " +
	"that function's JSON Schema (BFCL's parameters converted, as the bench serves them); **tool_choice is honoured** " +
	"when `required` got at least one call, a named function at least one call and only of it, and `none` no call. " +
	"Shares are of the answered requests' calls (or requests); a request answered with an error is counted apart. " +
	"The cost table compares, under `auto`, what an answer took: model calls, decoded tokens (the answer's " +
	"`usage.completion_tokens` or `eval_count`; toolrouter's counts its phases and any text answer; its model calls count " +
	"each value of a continued answer as a call, with `router.prefill` on) and the median " +
	"wall time seen by the client. BFCL's checker (accuracy) is one flag away (`-accuracy`); with the fake or a " +
	"random-weight model it measures nothing and is not run here.\n\n"

// runTrust is `go run ./bench trust`: the client-tools sections.
func runTrust(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("trust", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ollama := fs.String("ollama", "", "Ollama URL of a real model server (\"\": the fake model, bench/fakemodel)")
	model := fs.String("model", "", "with -ollama: the model asked for tool calls")
	n := fs.Int("n", 10, "questions of each BFCL set (0: all)")
	setsFlag := fs.String("sets", "simple,multiple,parallel,parallel-multiple,irrelevance", "BFCL sets, comma-separated")
	doorsFlag := fs.String("doors", "openai,ollama", "toolrouter's doors asked, comma-separated: openai (/v1/chat/completions), ollama (/api/chat); a door that answers 404 is skipped with a note")
	plainFlag := fs.String("plain-doors", "openai,ollama", "the model server's own doors asked, as -doors (\"\": none); on a shared server, /v1/chat/completions loads the model at the server's default num_ctx, which OpenAI's API cannot set")
	accuracy := fs.Bool("accuracy", false, "also score the auto answers with BFCL's checker (meaningful with a real model only)")
	bfcl := fs.String("bfcl", filepath.Join(benchDir(), "data", "bfcl"), "BFCL folder: BFCL_v4_*.json and possible_answer/")
	binary := fs.String("binary", "", "toolrouter binary (default: go build the repository's)")
	timeout := fs.Duration("timeout", 3*time.Minute, "bound of one request (one past it is counted as an error)")
	maxTokens := fs.Int("max-tokens", 256, "bound of each answer and, in the sidecar, of each phase's call (max_tokens, num_predict; 0: none): a random-weight model never stops by itself")
	probeTimeout := fs.Duration("probe-timeout", 2*time.Minute, "with -ollama: how long the test chat that must succeed first may take")
	docTo := docFlags(fs)
	quiet := fs.Bool("q", false, "no progress")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	doc, err := docTo.resolve(fs, "n", "sets", "doors", "plain-doors", "bfcl")
	if err != nil {
		return err
	}
	real := *ollama != ""
	if real && *model == "" {
		return errors.New("-ollama needs -model")
	}
	if *n < 0 {
		return fmt.Errorf("-n: want 0 or more, got %d", *n)
	}
	var known []string
	for _, d := range trust.Doors {
		known = append(known, string(d))
	}
	names, err := list(*doorsFlag, known, "door")
	if err != nil {
		return err
	}
	var doors, plainDoors []trust.Door
	for _, d := range names {
		doors = append(doors, trust.Door(d))
	}
	if strings.TrimSpace(*plainFlag) != "" {
		names, err := list(*plainFlag, known, "door")
		if err != nil {
			return err
		}
		for _, d := range names {
			plainDoors = append(plainDoors, trust.Door(d))
		}
	}
	setNames, err := list(*setsFlag, []string{"simple", "multiple", "parallel", "parallel-multiple", "irrelevance"}, "set")
	if err != nil {
		return err
	}
	var sets []*dataset.Dataset
	for _, s := range setNames {
		file := bfclFiles["bfcl-"+s]
		answers := ""
		if s != "irrelevance" {
			answers = filepath.Join(*bfcl, "possible_answer", file)
		}
		ds, err := dataset.LoadBFCL("bfcl-"+s, filepath.Join(*bfcl, file), answers)
		if err != nil {
			return err
		}
		ds.Limit(*n)
		sets = append(sets, ds)
	}
	progress := io.Discard
	if !*quiet {
		progress = stderr
	}

	upstream, name, what := *ollama, *model, ""
	if real {
		client, err := harness.Client(*ollama)
		if err != nil {
			return err
		}
		probe := harness.ProbeTimeouts{List: 3 * time.Second, Chat: *probeTimeout, NumCtx: router.NumCtx(router.DefaultOptions())}
		if reason := harness.Probe(ctx, client, *ollama, *model, probe); reason != "" {
			return fmt.Errorf("nothing measured: %s", reason)
		}
		version, err := client.Version(ctx)
		if err != nil {
			version = "version unknown"
		}
		what = fmt.Sprintf("Ollama %s at %s, model `%s`", version, *ollama, *model)
		if randomWeightModel(*model) {
			what += "; " + "a random-weight model: the figures measure the server, the grammar and toolrouter, not a model"
		}
	} else {
		fake := fakeollama.Start(fakemodel.Reply)
		defer fake.Close()
		upstream, name = fake.URL, "fake"
		what = "the fake model (bench/fakemodel: it calls the first function it is offered, with the smallest arguments its " +
			"schema allows, and reads no label); the fake server has no `/v1/chat/completions`"
	}

	work, err := os.MkdirTemp("", "toolrouter-trust-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if *binary == "" {
		*binary = filepath.Join(work, "toolrouter")
		fmt.Fprintln(progress, "bench trust: building the sidecar")
		if err := buildSidecar(ctx, *binary); err != nil {
			return err
		}
	}
	// The sidecar and the model server's own door load the model with one window, so that a
	// shared server does not reload it between them.
	numCtx := router.NumCtx(router.DefaultOptions())
	ollamaCfg := map[string]any{"host": upstream, "model": name}
	if *maxTokens > 0 {
		ollamaCfg["options"] = map[string]any{"num_predict": *maxTokens, "num_ctx": numCtx}
	}
	overlay := map[string]any{
		"ollama": ollamaCfg,
		"http":   map[string]any{"request_timeout": timeout.String(), "write_timeout": timeout.String()},
		"router": map[string]any{"deadline": timeout.String()},
	}
	side, err := load.Start(ctx, load.Options{Binary: *binary, WorkDir: work}, upstream, overlay)
	if err != nil {
		return err
	}
	defer side.Stop()

	started, loadStart := time.Now(), loadAverage()
	servers := []trust.Server{{Target: trust.Toolrouter, Base: side.URL(), Doors: doors}}
	if len(plainDoors) > 0 {
		servers = append(servers, trust.Server{Target: trust.Plain, Base: upstream, Doors: plainDoors})
	}
	res, err := trust.Run(ctx, trust.Options{Model: name, Sets: sets, Accuracy: *accuracy, Progress: progress, MaxTokens: *maxTokens,
		NumCtx: numCtx, Client: &http.Client{Timeout: *timeout}, Servers: servers})
	if err != nil {
		return err
	}
	cmdline := strings.Join(append([]string{"go run ./bench trust"}, relArgs(args)...), " ")
	var b strings.Builder
	fmt.Fprintf(&b, "Command: `%s`  \n", cmdline)
	fmt.Fprintf(&b, "Date: %s; %.0f s.  \n", started.UTC().Format("2006-01-02 15:04 MST"), time.Since(started).Seconds())
	fmt.Fprintf(&b, "Machine: %s/%s, %d CPUs, %s.  \n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	fmt.Fprintf(&b, "Model: %s.  \n", what)
	var counts []string
	for _, ds := range sets {
		counts = append(counts, fmt.Sprintf("%s %d", strings.TrimPrefix(ds.Name, "bfcl-"), len(ds.Cases)))
	}
	fmt.Fprintf(&b, "Questions: %s.\n\n", strings.Join(counts, ", "))
	b.WriteString(trust.Markdown(res))
	if l := loadAverage(); loadStart >= 0 && l >= 0 {
		fmt.Fprintf(&b, "\nLoad average (1 min) %.1f at the start, %.1f at the end: the machine may be shared; compare ratios within this run.\n", loadStart, l)
	}
	section, head := sectionTrust, "## Client tools: calls a client can trust\n\n"+trustIntro
	if real {
		section, head = sectionTrustOn, "## Client tools on a real Ollama\n\nAs above, on a real Ollama server and model.\n\n"
	}
	if err := updateDoc(doc, section, head+b.String()); err != nil {
		return err
	}
	fmt.Fprint(stdout, b.String())
	return nil
}
