package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"toolrouter/bench/load"
	"toolrouter/internal/services"
)

// unlimited are limits no load test reaches: every check runs, none refuses.
var unlimited = map[string]any{
	"requests_per_minute": 1_000_000_000, "tool_calls_per_minute": 1_000_000_000,
	"tokens_per_minute": 1_000_000_000_000, "tokens_per_day": 1_000_000_000_000, "concurrent": 1_000_000,
}

// featureVariants are the sidecars the feature cost compares: everything off first, then rate
// limits, usage records and metrics on with the embedded backends (in-process limits, SQLite),
// then with the shared ones (Redis, PostgreSQL) when they are installed; notes say what was left
// out. stop stops the servers it started.
func featureVariants(ctx context.Context, work string) (variants []load.Variant, notes []string, stop func()) {
	var started []*services.Server
	stop = func() {
		for _, s := range started {
			s.Stop()
		}
	}
	variants = []load.Variant{
		{Name: "off", Config: map[string]any{"usage": map[string]any{"path": ""}, "metrics": map[string]any{"enabled": false}}},
		{Name: "embedded", Config: map[string]any{
			"limits":  map[string]any{"anonymous": unlimited},
			"usage":   map[string]any{"path": filepath.Join(work, "usage.db")},
			"metrics": map[string]any{"enabled": true},
		}},
	}
	redis, rerr := services.StartRedis(ctx)
	pg, perr := services.StartPostgres(ctx)
	if rerr != nil || perr != nil {
		for _, s := range []*services.Server{redis, pg} {
			if s != nil {
				s.Stop()
			}
		}
		notes = append(notes, fmt.Sprintf("The Redis and PostgreSQL variant was not run: %v", errors.Join(rerr, perr)))
		return variants, notes, stop
	}
	started = append(started, redis, pg)
	variants = append(variants,
		load.Variant{Name: "redis", Config: map[string]any{
			"limits":  map[string]any{"anonymous": unlimited, "redis_url": redis.URL},
			"usage":   map[string]any{"path": filepath.Join(work, "usage.db")},
			"metrics": map[string]any{"enabled": true},
		}},
		load.Variant{Name: "postgres", Config: map[string]any{
			"limits":  map[string]any{"anonymous": unlimited},
			"usage":   map[string]any{"path": "", "postgres_url": pg.URL},
			"metrics": map[string]any{"enabled": true},
		}},
		load.Variant{Name: "redis+postgres", Config: map[string]any{
			"limits":  map[string]any{"anonymous": unlimited, "redis_url": redis.URL},
			"usage":   map[string]any{"path": "", "postgres_url": pg.URL},
			"metrics": map[string]any{"enabled": true},
		}})
	return variants, notes, stop
}

// featuresIntro says what the feature cost measures.
const featuresIntro = "The same load test as above, with the sidecar in several configurations driven in " +
	"alternation at each concurrency: `off` has no rate limits, no usage records and no metrics; `embedded` " +
	"checks and charges rate limits in process at every level (limits set high enough never to refuse), " +
	"writes a usage record per request to SQLite and keeps the Prometheus metrics; `redis` keeps the limits in a " +
	"local Redis instead, `postgres` the records in a local PostgreSQL, and `redis+postgres` both, the servers " +
	"started by the command on loopback. Each variant's rounds are pooled; the ratio and the added latency are against `off`. " +
	"Generator, fake model, sidecar and the servers share the machine's cores.\n\n"

func featuresMarkdown(cmdline string, date time.Time, r *load.Result, notes []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Command: `%s`  \n", cmdline)
	fmt.Fprintf(&b, "Date: %s.  \n", date.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "Machine: %s/%s, %d CPUs, %s. %.0f s per round.\n\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), r.DurationSeconds)
	b.WriteString("| concurrency | variant | rounds | req/s | p50 ms | p99 ms | errors | req/s vs off | p50 added ms | p99 added ms |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, l := range r.Levels {
		for _, v := range l.Variants {
			fmt.Fprintf(&b, "| %d | %s | %d | %.0f | %.3f | %.3f | %d | %.3f | %+.3f | %+.3f |\n", l.Concurrency, v.Name, len(v.Rounds),
				v.Run.RPS, v.Run.P50MS, v.Run.P99MS, v.Run.Errors, v.RatioRPS, v.AddedP50MS, v.AddedP99MS)
		}
	}
	for _, n := range notes {
		fmt.Fprintf(&b, "\n%s\n", n)
	}
	for _, l := range r.Levels {
		for _, v := range l.Variants {
			if v.Run.FirstError != "" {
				fmt.Fprintf(&b, "\nFirst error of %s at concurrency %d: %s\n", v.Name, l.Concurrency, v.Run.FirstError)
			}
		}
	}
	return b.String()
}
