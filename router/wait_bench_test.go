//go:build unix

package router_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/approval"
	"toolrouter/internal/fakeollama"
	"toolrouter/router"
)

// BenchmarkWaitingRoutes measures what routes that wait for a person's decision cost
// (safety.approval_wait): each iteration starts waitingRoutes routes that each hold a call and
// wait, and once all of them wait, measures the heap and goroutine stacks they hold above what
// was in use before (per route), and the process's CPU time over a window of waiting (and over
// the same window before any route started, for comparison); then it
// approves every call, and each route runs its call and ends. `go run ./bench approvals` runs it
// and writes the figures into docs/benchmarks.md.
func BenchmarkWaitingRoutes(b *testing.B) {
	const waitingRoutes = 1000
	const window = time.Second
	keeper := approval.NewKeeper(approval.NewMemory(), time.Hour)
	model := fakeollama.NewFunc(b, func(req api.ChatRequest) fakeollama.Reply {
		if strings.Contains(string(req.Format), `"use_tool"`) {
			if len(req.Messages) > 2 { // a round after the held call ran
				return choose(false, false)
			}
			return choose(false, false, "faults.echo")
		}
		return args(`{"message": "wipe it"}`)
	})
	e := newEnvWith(b, router.Settings{Approvals: keeper, ApprovalWait: time.Hour,
		HeldShare: approval.Share{Calls: waitingRoutes, Bytes: 1 << 30, ArgumentBytes: 64 << 10}}, model)
	var perRoute, cpuMsPerS, cpuIdle float64
	for b.Loop() {
		var before, during runtime.MemStats
		idle0, i0 := cpuTime(), time.Now()
		<-time.After(window) // the same window with no route waiting, for comparison
		cpuIdle = float64(cpuTime()-idle0) / float64(time.Millisecond) / time.Since(i0).Seconds()
		runtime.GC()
		runtime.ReadMemStats(&before)
		// Routes start in batches, each batch once the one before waits, so that the fake model
		// server is not asked 1,000 questions at once; then all of them wait together.
		const batch = 50
		tokens := make(chan string, waitingRoutes)
		var wg sync.WaitGroup
		held := make([]string, 0, waitingRoutes)
		for len(held) < waitingRoutes {
			for range min(batch, waitingRoutes-len(held)) {
				wg.Go(func() {
					token := ""
					out, err := e.router.Route(context.Background(), router.Request{Query: "echo it", OnEvent: func(ev router.Event) {
						if ev.Type == router.EventApprovalRequired {
							token = ev.Pending.Token
							tokens <- token
						}
					}})
					if token == "" {
						b.Errorf("a route ended without holding its call: %v, %+v", err, out)
						tokens <- ""
					}
				})
			}
			for range min(batch, waitingRoutes-len(held)) {
				tok := <-tokens
				if tok == "" {
					b.FailNow()
				}
				held = append(held, tok)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&during)
		inUse := func(m *runtime.MemStats) float64 { return float64(m.HeapAlloc + m.StackInuse) }
		perRoute = (inUse(&during) - inUse(&before)) / waitingRoutes
		cpu0, t0 := cpuTime(), time.Now()
		<-time.After(window) // the window measured: every route waits through it
		cpuMsPerS = float64(cpuTime()-cpu0) / float64(time.Millisecond) / time.Since(t0).Seconds()
		for _, tok := range held {
			if c, _, err := e.router.Approve(context.Background(), acme0, tok); err != nil || c != nil {
				b.Fatalf("approve: call %v, err %v; want the waiting route to run it", c, err)
			}
		}
		wg.Wait()
	}
	if runs := len(e.faults.Calls()); runs != b.N*waitingRoutes {
		b.Fatalf("%d calls ran, want %d (each approved call once)", runs, b.N*waitingRoutes)
	}
	b.ReportMetric(waitingRoutes, "routes")
	b.ReportMetric(perRoute, "bytes/waiting-route")
	b.ReportMetric(cpuMsPerS, "cpu-ms/s-waiting")
	b.ReportMetric(cpuIdle, "cpu-ms/s-idle")
	b.ReportMetric(0, "ns/op")
}

// acme0 is the identity of a request without one.
var acme0 = router.Request{}.Identity

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
