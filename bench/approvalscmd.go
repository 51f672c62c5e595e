package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// What routes that wait for a person's decision (safety.approval_wait) cost while they wait:
// BenchmarkWaitingRoutes (router/wait_bench_test.go) holds 1,000 of them at once, and
// `go run ./bench approvals` runs it and writes the figures.

// waitingRun is one run of BenchmarkWaitingRoutes.
type waitingRun struct {
	Routes   float64
	PerRoute float64 // bytes of heap and stacks a waiting route holds
	CPUMsPS  float64 // the process's CPU ms per second while every route waits
	IdleMsPS float64 // the same before any route started
}

const waitingIntro = "What routes that wait for a person's decision (`safety.approval_wait`) hold while they wait: " +
	"the Go benchmark `BenchmarkWaitingRoutes` starts 1,000 routes at once, each of which holds a call to a tool " +
	"that may destroy something and waits; once all of them wait it measures the heap and goroutine stacks in use " +
	"above what was before (per route: the request in flight, its journal, the held call's record in the in-memory " +
	"store and the wait), then the process's CPU time over one second of waiting (beside the same second before any route started), then approves every call, and " +
	"each route runs its call once and ends. A wait is a channel and a map entry: no goroutine of its own, no " +
	"polling. For scale, the store of held calls may keep up to 64 KiB of arguments per call " +
	"(`safety.max_held_argument_bytes`), 64 MiB for 1,000 calls.\n\n"

// runApprovals is `go run ./bench approvals`.
func runApprovals(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("approvals", flag.ContinueOnError)
	fs.SetOutput(stderr)
	runs := fs.Int("runs", 3, "runs of the benchmark")
	docTo := docFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	doc, err := docTo.resolve(fs)
	if err != nil {
		return err
	}
	if *runs < 1 {
		return errors.New("-runs must be at least 1")
	}
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "^BenchmarkWaitingRoutes$",
		"-benchtime", "1x", "-count", strconv.Itoa(*runs), "./router/")
	cmd.Dir = moduleDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("running BenchmarkWaitingRoutes: %w\n%s", err, out)
	}
	res, err := parseWaiting(string(out))
	if err != nil {
		return err
	}
	if len(res) != *runs {
		return fmt.Errorf("got %d runs of BenchmarkWaitingRoutes, want %d:\n%s", len(res), *runs, out)
	}
	md := waitingMarkdown("go run ./bench approvals "+strings.Join(args, " "), time.Now(), res)
	fmt.Fprint(stdout, md)
	return updateDoc(doc, sectionWaiting, "## Routes waiting for approval\n\n"+waitingIntro+md)
}

// parseWaiting reads BenchmarkWaitingRoutes's result lines.
func parseWaiting(out string) ([]waitingRun, error) {
	var res []waitingRun
	err := benchLines(out, "BenchmarkWaitingRoutes", func(r *waitingRun) map[string]*float64 {
		return map[string]*float64{"routes": &r.Routes, "bytes/waiting-route": &r.PerRoute, "cpu-ms/s-waiting": &r.CPUMsPS,
			"cpu-ms/s-idle": &r.IdleMsPS}
	}, &res)
	return res, err
}

// waitingMarkdown is the section's figures, one row a run.
func waitingMarkdown(cmdline string, date time.Time, runs []waitingRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Command: `%s`  \n", strings.TrimSpace(cmdline))
	fmt.Fprintf(&b, "Date: %s.  \n", date.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "Machine: %s/%s, %d CPUs, %s.\n\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	b.WriteString("| run | routes waiting | KiB a waiting route | MiB for all of them | CPU ms a second while they wait | the same before they started |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|\n")
	for i, r := range runs {
		fmt.Fprintf(&b, "| %d | %.0f | %.1f | %.1f | %.2f | %.2f |\n", i+1, r.Routes, r.PerRoute/1024, r.PerRoute*r.Routes/(1<<20), r.CPUMsPS, r.IdleMsPS)
	}
	return b.String()
}
