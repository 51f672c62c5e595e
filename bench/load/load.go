// Package load load-tests the sidecar: it starts the toolrouter binary on loopback against a
// zero-latency fake model (its built-in calculator is the in-process tool), drives POST /v1/route
// at several concurrencies for a bounded time, and measures the floor — the same model round trips
// sent straight to the fake — so the sidecar's own cost shows as a ratio. Every request stays on
// 127.0.0.1 and every run stops by itself.
package load

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/bench/fakemodel"
	"toolrouter/bench/metrics"
	"toolrouter/internal/fakeollama"
)

// Options configure a load test.
type Options struct {
	// Binary is the toolrouter executable.
	Binary string
	// WorkDir holds the sidecar's config file.
	WorkDir      string
	Concurrency  []int
	Duration     time.Duration
	Query        string
	StartTimeout time.Duration
	// Progress receives one line per run (nil: none).
	Progress io.Writer
	// Variants, when there are several, are sidecar configurations compared in one run: at each
	// concurrency each variant's sidecar is driven in turn, Rounds times in alternation, and
	// compared with the first (the feature cost: features off first). Config is merged over the
	// sidecar's base configuration. None: one sidecar on the base configuration.
	Variants []Variant
	Rounds   int // default 1
}

// Variant is one sidecar configuration of a comparison.
type Variant struct {
	Name   string         `json:"name"`
	Config map[string]any `json:"config"`
}

// Result is a whole load test.
type Result struct {
	Query string `json:"query"`
	// RoundTrips is the number of model requests one route makes (the floor makes as many).
	RoundTrips      int     `json:"model_round_trips_per_route"`
	DurationSeconds float64 `json:"duration_seconds_per_run"`
	Levels          []Level `json:"levels"`
}

// Level is one concurrency.
type Level struct {
	Concurrency int `json:"concurrency"`
	Sidecar     Run `json:"sidecar"`
	Floor       Run `json:"floor"`
	// RatioRPS and RatioP50, RatioP99 are sidecar / floor.
	RatioRPS float64 `json:"ratio_rps"`
	RatioP50 float64 `json:"ratio_p50"`
	RatioP99 float64 `json:"ratio_p99"`
	// Variants, with Options.Variants, are each variant's runs; Sidecar is then the first's.
	Variants []VariantRun `json:"variants,omitempty"`
}

// VariantRun is one variant at one concurrency: its rounds pooled (requests and seconds summed,
// latencies the mean of the rounds'), and its cost against the first variant.
type VariantRun struct {
	Name   string `json:"name"`
	Run    Run    `json:"run"`
	Rounds []Run  `json:"rounds"`
	// RatioRPS is this variant's throughput over the first's; AddedP50MS and AddedP99MS its
	// latency minus the first's.
	RatioRPS   float64 `json:"ratio_rps_to_first"`
	AddedP50MS float64 `json:"added_p50_ms"`
	AddedP99MS float64 `json:"added_p99_ms"`
}

// Run is one driven run.
type Run struct {
	Requests int     `json:"requests"`
	Errors   int     `json:"errors"`
	Seconds  float64 `json:"seconds"`
	RPS      float64 `json:"requests_per_second"`
	P50MS    float64 `json:"p50_ms"`
	P99MS    float64 `json:"p99_ms"`
	// PeakRSSMB is the sidecar process's peak resident memory (VmHWM), 0 where /proc has none.
	PeakRSSMB float64 `json:"peak_rss_mb,omitempty"`
	// FirstError is the first failure, if any.
	FirstError string `json:"first_error,omitempty"`
}

// Run runs the load test: for each concurrency a fresh sidecar is driven for Duration, then the
// floor for Duration.
func RunTest(ctx context.Context, o Options) (*Result, error) {
	if o.Duration <= 0 {
		o.Duration = 5 * time.Second
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 60 * time.Second
	}
	if o.Query == "" {
		o.Query = "What is 2 plus 3?"
	}
	model := newCapture()
	fake := fakeollama.Start(model.reply)
	defer fake.Close()
	if err := loopback(fake.URL); err != nil {
		return nil, err
	}
	res := &Result{Query: o.Query, DurationSeconds: o.Duration.Seconds()}
	body, _ := json.Marshal(map[string]string{"query": o.Query})
	client := newClient()
	defer client.CloseIdleConnections()

	variants := o.Variants
	if len(variants) == 0 {
		variants = []Variant{{Name: "sidecar"}}
	}
	rounds := max(o.Rounds, 1)
	var floorReqs [][]byte
	for _, c := range o.Concurrency {
		lvl := Level{Concurrency: c}
		runs := make([][]Run, len(variants))
		for k := range rounds {
			for _, i := range order(len(variants), k) {
				v := variants[i]
				sc, err := startSidecar(ctx, o, fake.URL, v.Config)
				if err != nil {
					return nil, fmt.Errorf("variant %s: %w", v.Name, err)
				}
				route := func(ctx context.Context) error {
					return post(ctx, client, sc.url+"/v1/route", body, `"use_tool":true`)
				}
				if floorReqs == nil {
					// One route, recorded: the floor replays exactly these model requests.
					model.start()
					err := route(ctx)
					floorReqs = model.stop()
					if err != nil {
						sc.stop()
						return nil, fmt.Errorf("first route: %w", err)
					}
					res.RoundTrips = len(floorReqs)
				}
				r := Drive(ctx, c, o.Duration, route)
				r.PeakRSSMB = sc.peakRSSMB()
				if err := sc.stop(); err != nil {
					return nil, err
				}
				runs[i] = append(runs[i], r)
				if o.Progress != nil && len(variants) > 1 {
					fmt.Fprintf(o.Progress, "bench load: concurrency %d: %s %.0f req/s, p99 %.2f ms\n", c, v.Name, r.RPS, r.P99MS)
				}
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
			}
		}
		for i, v := range variants {
			lvl.Variants = append(lvl.Variants, VariantRun{Name: v.Name, Run: pool(runs[i]), Rounds: runs[i]})
		}
		first := lvl.Variants[0].Run
		for i := range lvl.Variants {
			vr := &lvl.Variants[i]
			vr.RatioRPS = div(vr.Run.RPS, first.RPS)
			vr.AddedP50MS, vr.AddedP99MS = vr.Run.P50MS-first.P50MS, vr.Run.P99MS-first.P99MS
		}
		lvl.Sidecar = first
		if len(variants) == 1 {
			lvl.Variants = nil
		}
		chatURL := fake.URL + "/api/chat"
		lvl.Floor = Drive(ctx, c, o.Duration, func(ctx context.Context) error {
			for _, req := range floorReqs {
				if err := post(ctx, client, chatURL, req, `"done":true`); err != nil {
					return err
				}
			}
			return nil
		})
		lvl.RatioRPS = div(lvl.Sidecar.RPS, lvl.Floor.RPS)
		lvl.RatioP50 = div(lvl.Sidecar.P50MS, lvl.Floor.P50MS)
		lvl.RatioP99 = div(lvl.Sidecar.P99MS, lvl.Floor.P99MS)
		res.Levels = append(res.Levels, lvl)
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "bench load: concurrency %d: sidecar %.0f req/s, floor %.0f req/s\n", c, lvl.Sidecar.RPS, lvl.Floor.RPS)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return res, nil
}

// order is the order the variants run in round k: as given in even rounds, reversed in odd ones,
// so that a load on the machine that rises or falls during a run weighs on every variant alike.
func order(n, k int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
		if k%2 == 1 {
			out[i] = n - 1 - i
		}
	}
	return out
}

// pool sums rounds' requests, errors and seconds and averages their latencies; peak memory is
// the largest.
func pool(rounds []Run) Run {
	var p Run
	for _, r := range rounds {
		p.Requests += r.Requests
		p.Errors += r.Errors
		p.Seconds += r.Seconds
		p.P50MS += r.P50MS / float64(len(rounds))
		p.P99MS += r.P99MS / float64(len(rounds))
		p.PeakRSSMB = max(p.PeakRSSMB, r.PeakRSSMB)
		if p.FirstError == "" {
			p.FirstError = r.FirstError
		}
	}
	p.RPS = div(float64(p.Requests), p.Seconds)
	return p
}

func div(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// Drive runs op on n goroutines until d has passed (or ctx ends) and summarises the latencies of
// the ops that succeeded. Ops still running at the deadline are cancelled and not counted.
func Drive(ctx context.Context, n int, d time.Duration, op func(context.Context) error) Run {
	start := time.Now() // before the deadline is set: the run lasts at least d
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	lat := make([][]time.Duration, n)
	var (
		errs  atomic.Int64
		first atomic.Value
		wg    sync.WaitGroup
	)
	for w := range n {
		wg.Go(func() {
			for ctx.Err() == nil {
				t0 := time.Now()
				err := op(ctx)
				if ctx.Err() != nil {
					return
				}
				if err != nil {
					errs.Add(1)
					first.CompareAndSwap(nil, err.Error())
					continue
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	s := metrics.Latencies(all)
	r := Run{
		Requests: len(all), Errors: int(errs.Load()), Seconds: elapsed.Seconds(),
		RPS:   float64(len(all)) / elapsed.Seconds(),
		P50MS: float64(s.P50.Nanoseconds()) / 1e6, P99MS: float64(s.P99.Nanoseconds()) / 1e6,
	}
	if v, ok := first.Load().(string); ok {
		r.FirstError = v
	}
	return r
}

func newClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: 90 * time.Second,
		DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	}}
}

// post sends one JSON request and checks the answer is 200 and contains want.
func post(ctx context.Context, c *http.Client, url string, body []byte, want string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(raw, []byte(want)) {
		return fmt.Errorf("POST %s: got %d %.200s, want 200 with %s", url, resp.StatusCode, raw, want)
	}
	return nil
}

// capture is the fake model's answer function; between start and stop it also keeps the raw
// requests, so the floor can replay them.
type capture struct {
	mu   sync.Mutex // guards on, reqs
	on   bool
	reqs [][]byte
}

func newCapture() *capture { return &capture{} }

func (c *capture) reply(req api.ChatRequest) fakeollama.Reply {
	c.mu.Lock()
	if c.on {
		b, _ := json.Marshal(req)
		c.reqs = append(c.reqs, b)
	}
	c.mu.Unlock()
	return fakemodel.Reply(req)
}

func (c *capture) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on, c.reqs = true, nil
}

func (c *capture) stop() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = false
	return c.reqs
}

// loopback refuses any URL that is not on 127.0.0.1.
func loopback(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if h := u.Hostname(); h != "127.0.0.1" {
		return fmt.Errorf("load test target %s is not on 127.0.0.1", raw)
	}
	return nil
}

// sidecar is a running toolrouter process.
type sidecar struct {
	cmd  *exec.Cmd
	url  string
	done chan error
}

// startSidecar starts the binary on 127.0.0.1 with the built-in defaults (calculator and clock
// in-process) and the fake model, without TOOLROUTER_ variables from the environment, and waits
// for its "serving" log line.
func startSidecar(ctx context.Context, o Options, modelURL string, overlay map[string]any) (*sidecar, error) {
	cfg := filepath.Join(o.WorkDir, "load-config.json")
	base := map[string]any{"listen": "127.0.0.1:0", "ollama": map[string]any{"host": modelURL, "model": "fake"}}
	maps.Copy(base, overlay)
	js, _ := json.Marshal(base)
	if err := os.WriteFile(cfg, js, 0o644); err != nil {
		return nil, fmt.Errorf("writing sidecar config: %w", err)
	}
	cmd := exec.Command(o.Binary, "-config", cfg, "-log-level", "info")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TOOLROUTER_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting sidecar %s: %w", o.Binary, err)
	}
	s := &sidecar{cmd: cmd, done: make(chan error, 1)}
	addr := make(chan string, 1)
	var tail bytes.Buffer
	var tailMu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		sent := false
		for sc.Scan() {
			var line struct {
				Msg    string `json:"msg"`
				Listen string `json:"listen"`
			}
			if !sent && json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving" && line.Listen != "" {
				addr <- line.Listen
				sent = true
			}
			tailMu.Lock()
			if tail.Len() < 8<<10 {
				tail.Write(sc.Bytes())
				tail.WriteByte('\n')
			}
			tailMu.Unlock()
		}
		s.done <- cmd.Wait()
	}()
	timer := time.NewTimer(o.StartTimeout)
	defer timer.Stop()
	select {
	case a := <-addr:
		s.url = "http://" + a
		if err := loopback(s.url); err != nil {
			s.stop()
			return nil, err
		}
		return s, nil
	case err := <-s.done:
		tailMu.Lock()
		defer tailMu.Unlock()
		return nil, fmt.Errorf("sidecar exited before serving: %v\n%s", err, tail.String())
	case <-timer.C:
	case <-ctx.Done():
	}
	s.stop()
	return nil, errors.New("sidecar did not start serving in time")
}

// peakRSSMB reads the process's peak resident set size from /proc (Linux); 0 elsewhere.
func (s *sidecar) peakRSSMB() float64 { return s.statusMB("VmHWM:") }

// statusMB reads one of the process's memory figures (VmRSS:, VmHWM:) from /proc/PID/status, in
// MiB; 0 where /proc has none.
func (s *sidecar) statusMB(field string) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb / 1024
			}
		}
	}
	return 0
}

// Sidecar is a toolrouter process started by Start, for benchmarks that drive it themselves.
type Sidecar struct{ s *sidecar }

// Start starts o.Binary on 127.0.0.1 with the fake model at modelURL and config merged over the
// base configuration (listen and ollama), as a load test does, and waits until it serves (at most
// o.StartTimeout, default 60 s). The caller must Stop it.
func Start(ctx context.Context, o Options, modelURL string, config map[string]any) (*Sidecar, error) {
	if o.StartTimeout <= 0 {
		o.StartTimeout = 60 * time.Second
	}
	s, err := startSidecar(ctx, o, modelURL, config)
	if err != nil {
		return nil, err
	}
	return &Sidecar{s: s}, nil
}

// URL is the sidecar's base URL.
func (s *Sidecar) URL() string { return s.s.url }

// RSSMB is the process's resident memory now (VmRSS), in MiB; PeakRSSMB its peak (VmHWM).
func (s *Sidecar) RSSMB() float64     { return s.s.statusMB("VmRSS:") }
func (s *Sidecar) PeakRSSMB() float64 { return s.s.peakRSSMB() }

// Stop shuts the sidecar down (SIGTERM, killed after 15 s).
func (s *Sidecar) Stop() error { return s.s.stop() }

// stop asks the sidecar to shut down (SIGTERM) and waits; it is killed after 15 s.
func (s *sidecar) stop() error {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(15 * time.Second)
	defer timer.Stop()
	select {
	case <-s.done:
		return nil
	case <-timer.C:
		_ = s.cmd.Process.Kill()
		<-s.done
		return errors.New("sidecar did not stop within 15 s of SIGTERM; killed")
	}
}
