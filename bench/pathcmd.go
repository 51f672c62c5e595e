package main

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The sidecar's own path is what one POST /v1/route costs beyond a bare HTTP hop when the model
// and the tool answer at once: BenchmarkSidecarPath (server/bench_test.go) measures both in one
// loop, alternating, and `go run ./bench load -path` runs it and writes the figures.

// pathRun is one run of BenchmarkSidecarPath.
type pathRun struct {
	HopP50, SidecarP50 float64 // µs
	Ratio              float64 // SidecarP50 / HopP50
	RouteAllocs        float64 // heap allocations per route, client and server
}

// pathIntro says what the section measures.
const pathIntro = "What `POST /v1/route` costs beyond a bare HTTP hop, when the model and the tool answer at once: " +
	"the Go benchmark `BenchmarkSidecarPath` serves the route over loopback with a real router, server and inventory, " +
	"but an in-process model that answers instantly and an in-process `calculator.add`, so no model server competes " +
	"for the cores. Each iteration makes one request to a bare fiber handler that returns 2,000 bytes (the bare hop: " +
	"any HTTP sidecar pays it) and then one route, so both see the machine in the same state. The target is a p50 " +
	"at most twice the bare hop's and at most 150 heap allocations a route (client and server together).\n\n"

// runPath runs the benchmark runs times and returns its section.
func runPath(ctx context.Context, runs int, benchtime string) ([]pathRun, error) {
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "^BenchmarkSidecarPath$",
		"-benchtime", benchtime, "-count", strconv.Itoa(runs), "./server/")
	cmd.Dir = moduleDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("running BenchmarkSidecarPath: %w\n%s", err, out)
	}
	res, err := parsePath(string(out))
	if err == nil && len(res) != runs {
		err = fmt.Errorf("got %d runs of BenchmarkSidecarPath, want %d:\n%s", len(res), runs, out)
	}
	return res, err
}

// parsePath reads BenchmarkSidecarPath's result lines.
func parsePath(out string) ([]pathRun, error) {
	var res []pathRun
	err := benchLines(out, "BenchmarkSidecarPath", func(r *pathRun) map[string]*float64 {
		return map[string]*float64{"hop-p50-µs": &r.HopP50, "sidecar-p50-µs": &r.SidecarP50, "ratio": &r.Ratio, "route-allocs": &r.RouteAllocs}
	}, &res)
	return res, err
}

// benchLines reads a Go benchmark's result lines (the name, the iterations, then value-unit
// pairs) into one T each: fields maps each unit a line must carry to the field of r it fills.
func benchLines[T any](out, name string, fields func(r *T) map[string]*float64, res *[]T) error {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasPrefix(f[0], name) {
			continue
		}
		var r T
		into := fields(&r)
		for i := 2; i+1 < len(f); i += 2 {
			if p, ok := into[f[i+1]]; ok {
				v, err := strconv.ParseFloat(f[i], 64)
				if err != nil {
					return fmt.Errorf("benchmark line %q: %w", line, err)
				}
				*p = v
				delete(into, f[i+1])
			}
		}
		if len(into) > 0 {
			return fmt.Errorf("benchmark line %q lacks %d of its figures", line, len(into))
		}
		*res = append(*res, r)
	}
	return nil
}

// pathMarkdown is the section's figures: one row a run, then each column's median.
func pathMarkdown(cmdline string, date time.Time, benchtime string, runs []pathRun, loadBefore, loadAfter float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Command: `%s`  \n", cmdline)
	fmt.Fprintf(&b, "Date: %s.  \n", date.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "Machine: %s/%s, %d CPUs, %s. %s iterations a run.\n\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), strings.TrimSuffix(benchtime, "x"))
	b.WriteString("| run | bare hop p50 µs | route p50 µs | route / bare hop | allocations a route |\n")
	b.WriteString("|---:|---:|---:|---:|---:|\n")
	for i, r := range runs {
		fmt.Fprintf(&b, "| %d | %.1f | %.1f | %.2f | %.0f |\n", i+1, r.HopP50, r.SidecarP50, r.Ratio, r.RouteAllocs)
	}
	median := func(get func(pathRun) float64) float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = get(r)
		}
		slices.Sort(v)
		if n := len(v); n%2 == 0 {
			return (v[n/2-1] + v[n/2]) / 2
		}
		return v[len(v)/2]
	}
	if len(runs) > 0 {
		fmt.Fprintf(&b, "| median | %.1f | %.1f | %.2f | %.0f |\n",
			median(func(r pathRun) float64 { return r.HopP50 }), median(func(r pathRun) float64 { return r.SidecarP50 }),
			median(func(r pathRun) float64 { return r.Ratio }), median(func(r pathRun) float64 { return r.RouteAllocs }))
	}
	if loadBefore >= 0 && loadAfter >= 0 {
		fmt.Fprintf(&b, "\nLoad average (1 min) %.1f at the start, %.1f at the end: the machine may be shared.\n", loadBefore, loadAfter)
	}
	return b.String()
}
