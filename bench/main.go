// Command bench measures toolrouter's router against keyword matching on labeled data (BFCL,
// MetaTool and the project's scenario set), and load-tests the sidecar.
//
//	go run ./bench [flags]            run the routers on the datasets (default command "run")
//	go run ./bench load [flags]       drive /v1/route of the sidecar against a zero-latency fake model
//	go run ./bench retrieval [flags]  recall and cost of the phase-1 shortlist (no model)
//	go run ./bench cost [flags]       what a route costs on a real Ollama server, by round and inventory size
//	go run ./bench memory [flags]     the sidecar's memory under tool results of megabytes
//	go run ./bench approvals [flags]  what routes that wait for a person's decision hold
//	go run ./bench stream [flags]     when a council completion's first words reach the client
//	go run ./bench trust [flags]      tool calls of a request's own tools through the doors, against the model server's own
//	go run ./bench sample [flags]     write a seeded sample of MetaTool's all_clean_data.csv
//
// Run writes each answer to cases.jsonl in -out as it is made (-resume continues an interrupted run
// from it; -check checks it for shape), then a markdown table on stdout and results.json,
// results.md and chart.svg in -out; run, load, retrieval, cost and memory each rewrite their own section of
// docs/benchmarks.md (-doc), the one place the figures live, each next to the command that
// produced it.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// run dispatches a command line.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd := "run"
	if len(args) > 0 && (args[0] == "run" || args[0] == "load" || args[0] == "retrieval" || args[0] == "cost" || args[0] == "memory" ||
		args[0] == "approvals" || args[0] == "stream" || args[0] == "trust" || args[0] == "sample") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "load":
		return runLoad(ctx, args, stdout, stderr)
	case "retrieval":
		return runRetrieval(ctx, args, stdout, stderr)
	case "cost":
		return runCost(ctx, args, stdout, stderr)
	case "memory":
		return runMemory(ctx, args, stdout, stderr)
	case "approvals":
		return runApprovals(ctx, args, stdout, stderr)
	case "stream":
		return runStream(ctx, args, stdout, stderr)
	case "trust":
		return runTrust(ctx, args, stdout, stderr)
	case "sample":
		return runSample(args, stdout)
	}
	return runBench(ctx, args, stdout, stderr)
}

// benchDir is this command's source folder; the default data and output live under it.
func benchDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// moduleDir is the repository root.
func moduleDir() string { return filepath.Dir(benchDir()) }
