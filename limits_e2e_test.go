package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/internal/fakeollama"
	"toolrouter/internal/redistest"
)

// TestRateLimitSharedByTwoSidecars builds the binary and runs two sidecars, as two replicas, on
// one redis-server with a small requests_per_minute for an org: driven at once, together they
// admit what the one limit allows (its burst plus the refill over the run), not twice that.
func TestRateLimitSharedByTwoSidecars(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	srv := redistest.Start(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "toolrouter")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	model := fakeollama.NewFunc(t, func(api.ChatRequest) fakeollama.Reply {
		return fakeollama.Reply{Content: `{"reasoning":"no tool needed","use_tool":false}`}
	})
	const (
		key = "tr_limits-e2e-key-0123456789ab"
		rpm = 60
	)
	sum := sha256.Sum256([]byte(key))
	cfg := map[string]any{
		"listen": "127.0.0.1:0",
		"ollama": map[string]any{"host": model.URL, "model": "fake"},
		"auth": map[string]any{
			"keys":   []any{map[string]any{"name": "e2e", "sha256": hex.EncodeToString(sum[:]), "org": "acme"}},
			"admins": []string{"acme"},
		},
		"orgs": map[string]any{"acme": map[string]any{"limits": map[string]any{"requests_per_minute": rpm}}},
		// A generous redis_timeout: a loaded test machine must not look like Redis being down.
		"limits": map[string]any{"redis_url": srv.URL(), "replicas": 2, "redis_timeout": "1s"},
	}
	path := filepath.Join(dir, "config.json")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	bases := []string{startSidecar(t, bin, path), startSidecar(t, bin, path)}

	client := &http.Client{Timeout: 10 * time.Second}
	post := func(base string) int {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/route", strings.NewReader(`{"query":"hello"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := client.Do(req)
		if err != nil {
			t.Errorf("POST %s/v1/route: %v", base, err)
			return 0
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusTooManyRequests && (resp.Header.Get("Retry-After") == "" || !strings.Contains(string(raw), `"code":"rate_limited"`)) {
			t.Errorf("429 without Retry-After or rate_limited: %s", raw)
		}
		return resp.StatusCode
	}
	var (
		mu     sync.Mutex
		counts = map[int]int{}
		wg     sync.WaitGroup
	)
	const run = 3 * time.Second
	start := time.Now()
	for _, base := range bases {
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 200 && time.Since(start) < run; i++ {
					status := post(base)
					mu.Lock()
					counts[status]++
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	want := rpm + rpm/60.0*elapsed.Seconds()
	got := counts[http.StatusOK]
	if math.Abs(float64(got)-want) > 0.05*want {
		t.Errorf("admitted by both sidecars: got %d, want %.1f ± 5%% (statuses %v over %v)", got, want, counts, elapsed)
	} else {
		t.Logf("admitted by both sidecars: %d, expected %.1f (statuses %v over %v)", got, want, counts, elapsed)
	}
	if len(counts) != 2 || counts[http.StatusTooManyRequests] == 0 {
		t.Errorf("statuses: got %v, want only 200 and 429", counts)
	}
	for _, base := range bases {
		req, _ := http.NewRequest(http.MethodGet, base+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(raw), `"limits":{"backend":"redis"`) {
			t.Errorf("%s/readyz: got %s, want limits backend redis", base, raw)
		}
	}
}

// startSidecar runs the binary with the config and returns its base URL once it serves; the
// test's cleanup stops it.
func startSidecar(t *testing.T, bin, config string) string {
	t.Helper()
	cmd := exec.Command(bin, "-config", config)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var line struct{ Msg, Listen string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving" {
				addr <- line.Listen
			}
			if !strings.Contains(sc.Text(), `"level":"DEBUG"`) {
				t.Logf("toolrouter: %s", sc.Bytes())
			}
		}
	}()
	exited := make(chan error, 1)
	go func() {
		<-logged // Wait closes the pipe: read it whole first
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	select {
	case a := <-addr:
		return "http://" + a
	case err := <-exited:
		t.Fatalf("toolrouter exited before serving: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("toolrouter did not start serving within 60s")
	}
	return ""
}
