package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
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
		{Name: "off", Config: bare(nil)},
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

// bare is a sidecar configuration without rate limits, usage records or metrics, with extra's keys
// added.
func bare(extra map[string]any) map[string]any {
	c := map[string]any{"usage": map[string]any{"path": ""}, "metrics": map[string]any{"enabled": false}}
	maps.Copy(c, extra)
	return c
}

// consoleVariants are the sidecars the console's cost compares: both bare (nothing else on the
// request's path to hide it), the console off, then on as shipped (served at /ui, its ring of
// recent requests an observer of every request).
func consoleVariants() []load.Variant {
	return []load.Variant{
		{Name: "console off", Config: bare(map[string]any{"ui": map[string]any{"enabled": false}})},
		{Name: "console on", Config: bare(map[string]any{"ui": map[string]any{"enabled": true, "recent_requests": consoleRing}})},
	}
}

// consoleRing is ui.recent_requests in the console's comparison: the shipped default.
const consoleRing = 100

// consoleIntro says what the console's cost measures.
var consoleIntro = "The same load test as above, with the sidecar in two configurations driven in alternation at " +
	"each concurrency, both without rate limits, usage records or metrics: `console off` has `ui.enabled` false; " +
	"`console on` serves the console at `/ui` and keeps the last " + strconv.Itoa(consoleRing) + " request reports in " +
	"its ring (`ui.recent_requests`, the default), as shipped. Only `POST /v1/route` is driven; nothing reads the " +
	"console. Each variant's rounds are pooled; the ratio and the added latency are against `console off`, and the " +
	"per-round columns compare each round with the `console off` round of the same pair: their spread is the noise " +
	"a difference must exceed. The order within a pair alternates from round to round, so a load on the machine that " +
	"rises or falls during the run weighs on both. Generator, fake model and sidecar share the machine's cores. The same comparison " +
	"through the HTTP handler alone, without the network: `go test -run '^$' -bench ConsoleRoutePath -count 6 ./server/`.\n\n"

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
	first := ""
	if len(r.Levels) > 0 && len(r.Levels[0].Variants) > 0 {
		first = r.Levels[0].Variants[0].Name
	}
	fmt.Fprintf(&b, "| concurrency | variant | rounds | req/s | p50 ms | p99 ms | errors | req/s vs %[1]s | p50 added ms | p99 added ms "+
		"| req/s vs %[1]s, per round | p99 added ms, per round |\n", first)
	b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, l := range r.Levels {
		for i, v := range l.Variants {
			ratios, added := "–", "–"
			if i > 0 {
				ratios, added = perRound(v.Rounds, l.Variants[0].Rounds)
			}
			fmt.Fprintf(&b, "| %d | %s | %d | %.0f | %.3f | %.3f | %d | %.3f | %+.3f | %+.3f | %s | %s |\n", l.Concurrency, v.Name, len(v.Rounds),
				v.Run.RPS, v.Run.P50MS, v.Run.P99MS, v.Run.Errors, v.RatioRPS, v.AddedP50MS, v.AddedP99MS, ratios, added)
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

// perRound is the range, lowest to highest, of a variant's throughput ratio and added p99 against
// the first variant's round of the same index (the same pair).
func perRound(rounds, first []load.Run) (ratios, added string) {
	var rs, ds []float64
	for k := range min(len(rounds), len(first)) {
		rs = append(rs, rounds[k].RPS/first[k].RPS)
		ds = append(ds, rounds[k].P99MS-first[k].P99MS)
	}
	if len(rs) == 0 {
		return "–", "–"
	}
	return fmt.Sprintf("%.3f to %.3f", slices.Min(rs), slices.Max(rs)), fmt.Sprintf("%+.3f to %+.3f", slices.Min(ds), slices.Max(ds))
}
