package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The test binary doubles as a stand-in sidecar (BENCH_LOAD_STANDIN=1): it reads the config the
// load test writes, serves POST /v1/route by making two chat calls to the configured model, and
// logs "serving" like toolrouter. It lets the tests check process handling, the floor replay and
// the ratios without building the real binary (the real run is `go run ./bench load`).
func TestMain(m *testing.M) {
	if os.Getenv("BENCH_LOAD_STANDIN") == "1" {
		standIn()
		return
	}
	os.Exit(m.Run())
}

func standIn() {
	var cfgPath string
	for i, a := range os.Args {
		if a == "-config" && i+1 < len(os.Args) {
			cfgPath = os.Args[i+1]
		}
	}
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		os.Exit(2)
	}
	var cfg struct {
		Listen string
		Ollama struct{ Host string }
	}
	_ = json.Unmarshal(raw, &cfg)
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		os.Exit(2)
	}
	chat := func(body string) error {
		resp, err := http.Post(cfg.Ollama.Host+"/api/chat", "application/json", strings.NewReader(body))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		return err
	}
	http.HandleFunc("POST /v1/route", func(w http.ResponseWriter, r *http.Request) {
		sel := `{"model":"fake","stream":false,"messages":[{"role":"user","content":"q"}],"format":{"type":"object","properties":{"use_tool":{"type":"boolean"},"tool":{"type":"string","enum":["calculator.add"]},"reasoning":{"type":"string"}}}}`
		args := `{"model":"fake","stream":false,"messages":[{"role":"user","content":"q"}],"format":{"type":"object","properties":{"a":{"type":"number"}},"required":["a"]}}`
		if chat(sel) != nil || chat(args) != nil {
			http.Error(w, "model", http.StatusBadGateway)
			return
		}
		fmt.Fprint(w, `{"use_tool":true}`)
	})
	fmt.Fprintf(os.Stderr, `{"level":"INFO","msg":"serving","listen":%q}`+"\n", ln.Addr().String())
	_ = http.Serve(ln, nil)
}

func TestRunTest(t *testing.T) {
	t.Setenv("BENCH_LOAD_STANDIN", "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := RunTest(ctx, Options{Binary: exe, WorkDir: t.TempDir(), Concurrency: []int{1, 4}, Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.RoundTrips != 2 || len(res.Levels) != 2 {
		t.Fatalf("got %d round trips and %d levels, want 2 and 2", res.RoundTrips, len(res.Levels))
	}
	for _, l := range res.Levels {
		s, f := l.Sidecar, l.Floor
		if s.Requests == 0 || f.Requests == 0 || s.Errors != 0 || f.Errors != 0 {
			t.Errorf("concurrency %d: sidecar %d ok %d errors (%s), floor %d ok %d errors (%s)", l.Concurrency, s.Requests, s.Errors, s.FirstError, f.Requests, f.Errors, f.FirstError)
		}
		if l.RatioRPS != s.RPS/f.RPS || s.P50MS > s.P99MS {
			t.Errorf("concurrency %d: ratio %v, want %v; p50 %v p99 %v", l.Concurrency, l.RatioRPS, s.RPS/f.RPS, s.P50MS, s.P99MS)
		}
		if _, err := os.Stat("/proc/self/status"); err == nil && s.PeakRSSMB <= 0 {
			t.Errorf("concurrency %d: no peak memory read from /proc", l.Concurrency)
		}
	}
}

func TestDrive(t *testing.T) {
	var calls atomic.Int64
	r := Drive(context.Background(), 3, 100*time.Millisecond, func(ctx context.Context) error {
		if calls.Add(1)%5 == 0 {
			return errors.New("every fifth fails")
		}
		return nil
	})
	if r.Requests == 0 || r.Errors == 0 || r.FirstError != "every fifth fails" || r.Seconds < 0.1 {
		t.Errorf("got %+v, want successes, errors with the first one kept, at least 0.1 s", r)
	}
	if got := int64(r.Requests + r.Errors); got > calls.Load() {
		t.Errorf("counted %d ops, only %d ran", got, calls.Load())
	}
}

func TestLoopbackOnly(t *testing.T) {
	for url, ok := range map[string]bool{"http://127.0.0.1:8090": true, "http://10.0.0.1:80": false, "http://example.com": false} {
		if err := loopback(url); (err == nil) != ok {
			t.Errorf("%s: got %v, want allowed %v", url, err, ok)
		}
	}
}

// TestVariants: each variant runs its rounds with its own configuration, and its cost is
// measured against the first.
func TestVariants(t *testing.T) {
	t.Setenv("BENCH_LOAD_STANDIN", "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	work := t.TempDir()
	var progress strings.Builder
	res, err := RunTest(ctx, Options{Binary: exe, WorkDir: work, Concurrency: []int{2}, Duration: 200 * time.Millisecond, Rounds: 2,
		Progress: &progress,
		Variants: []Variant{{Name: "off"}, {Name: "on", Config: map[string]any{"metrics": map[string]any{"enabled": true}}}}})
	if err != nil {
		t.Fatal(err)
	}
	l := res.Levels[0]
	if len(l.Variants) != 2 || l.Variants[0].Name != "off" || l.Variants[1].Name != "on" {
		t.Fatalf("got variants %+v, want off then on", l.Variants)
	}
	for _, v := range l.Variants {
		if len(v.Rounds) != 2 || v.Run.Requests != v.Rounds[0].Requests+v.Rounds[1].Requests || v.Run.Requests == 0 {
			t.Errorf("%s: got %d rounds pooled to %d requests, want 2 rounds summed", v.Name, len(v.Rounds), v.Run.Requests)
		}
	}
	on, off := l.Variants[1], l.Variants[0]
	if on.RatioRPS != on.Run.RPS/off.Run.RPS || on.AddedP99MS != on.Run.P99MS-off.Run.P99MS || off.RatioRPS != 1 {
		t.Errorf("got ratio %v added p99 %v (off ratio %v), want on/off", on.RatioRPS, on.AddedP99MS, off.RatioRPS)
	}
	if l.Sidecar != off.Run {
		t.Errorf("level's sidecar run is not the first variant's")
	}
	// The order alternates: off, on, then on, off; the last sidecar started (off) had the base
	// configuration alone.
	var ran []string
	for _, line := range strings.Split(strings.TrimSpace(progress.String()), "\n") {
		if _, rest, ok := strings.Cut(line, "concurrency 2: "); ok && (strings.HasPrefix(rest, "off ") || strings.HasPrefix(rest, "on ")) {
			ran = append(ran, strings.Fields(rest)[0])
		}
	}
	if want := []string{"off", "on", "on", "off"}; !slices.Equal(ran, want) {
		t.Errorf("variants ran in the order %v, want %v", ran, want)
	}
	raw, _ := os.ReadFile(work + "/load-config.json")
	if strings.Contains(string(raw), `"metrics"`) || !strings.Contains(string(raw), `"listen":"127.0.0.1:0"`) {
		t.Errorf("last config %s: want the base alone", raw)
	}
}
