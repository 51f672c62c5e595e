package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"os"
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
	bin := buildBinary(t)
	srv := redistest.Start(t)
	dir := t.TempDir()
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
	bases := []string{startBinary(t, bin, "-config", path).Base, startBinary(t, bin, "-config", path).Base}

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
