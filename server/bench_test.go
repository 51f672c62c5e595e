package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/ollama/ollama/api"

	"toolrouter/internal/fakeollama"
	"toolrouter/inventory"
	"toolrouter/provider"
	"toolrouter/router"
	"toolrouter/server"
)

// The benchmarks measure what toolrouter adds to the work it cannot avoid. BenchmarkRoute is one
// POST /v1/route end to end over a real loopback listener: two chat calls to a zero-latency fake
// model and one in-process calculator call. BenchmarkFloor makes the same two chat calls and the
// same tool call directly, so overhead ≈ Route − Floor at the same concurrency.
//
//	go test -run x -bench . -benchtime 2000x ./server/

var concurrencies = []int{1, 32}

// benchEnv is a fake model that answers selection with calculator.add and arguments with {a:2, b:3},
// a started inventory, and a keep-alive client for the model like main's.
type benchEnv struct {
	model  *fakeollama.Server
	inv    *inventory.Manager
	ollama *provider.Ollama
}

func newBenchEnv(b *testing.B) *benchEnv {
	b.Helper()
	model := fakeollama.NewFunc(b, func(req api.ChatRequest) fakeollama.Reply {
		if bytes.Contains(req.Format, []byte(`"use_tool"`)) {
			return fakeollama.Reply{Content: `{"reasoning":"r","use_tool":true,"tool":"calculator.add","direct":true}`}
		}
		return fakeollama.Reply{Content: `{"a":2,"b":3}`}
	})
	u, err := url.Parse(model.URL)
	if err != nil {
		b.Fatal(err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second}
	b.Cleanup(tr.CloseIdleConnections)
	return &benchEnv{model: model, inv: newInventory(b), ollama: provider.NewOllama(u, &http.Client{Transport: tr})}
}

func (e *benchEnv) app() *fiber.App {
	rt := router.New(e.ollama, e.inv, e.inv, router.Settings{Model: "fake", CallTimeout: 10 * time.Second, OnModelFailure: router.Fail}, quiet)
	return server.New(server.Deps{Router: rt, Inventory: e.inv, Model: e.ollama}, server.Options{Model: "fake", Logger: quiet})
}

func BenchmarkRoute(b *testing.B) {
	e := newBenchEnv(b)
	base := listen(b, e.app())
	tr := &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second}
	b.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	body := []byte(`{"query":"what is 2 plus 3?"}`)
	route := func() error {
		resp, err := client.Post(base+"/v1/route", "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK || !bytes.Contains(raw, []byte(`"text":"5"`)) {
			return fmt.Errorf("got %d %s, want 200 with result 5", resp.StatusCode, raw)
		}
		return nil
	}
	for _, n := range concurrencies {
		b.Run(fmt.Sprintf("conc=%d", n), func(b *testing.B) { runConcurrent(b, n, route) })
	}
}

func BenchmarkFloor(b *testing.B) {
	e := newBenchEnv(b)
	// Replay exactly the two chat requests the router sends for the query.
	rt := router.New(e.ollama, e.inv, e.inv, router.Settings{Model: "fake", OnModelFailure: router.Fail}, quiet)
	if _, err := rt.Route(context.Background(), router.Request{Query: "what is 2 plus 3?"}); err != nil {
		b.Fatal(err)
	}
	reqs := e.model.Requests()
	if len(reqs) != 2 {
		b.Fatalf("got %d chat requests from one route, want 2", len(reqs))
	}
	chat := func(req *api.ChatRequest) error {
		done := false
		err := e.ollama.Chat(context.Background(), req, func(r api.ChatResponse) error {
			done = done || r.Done
			return nil
		})
		if err == nil && !done {
			err = fmt.Errorf("chat ended before done")
		}
		return err
	}
	args := map[string]any{"a": 2, "b": 3}
	floor := func() error {
		for i := range reqs {
			if err := chat(&reqs[i]); err != nil {
				return err
			}
		}
		res, err := e.inv.CallTool(context.Background(), "calculator", "add", args)
		if err != nil {
			return err
		}
		if len(res.Content) == 0 || !strings.Contains(text(res.Content[0]), "5") {
			return fmt.Errorf("got result %+v, want 5", res.Content)
		}
		return nil
	}
	for _, n := range concurrencies {
		b.Run(fmt.Sprintf("conc=%d", n), func(b *testing.B) { runConcurrent(b, n, floor) })
	}
}

func text(c mcp.Content) string {
	switch v := c.(type) {
	case mcp.TextContent:
		return v.Text
	case *mcp.TextContent:
		return v.Text
	}
	return ""
}

// runConcurrent runs op b.N times on a fixed pool of n goroutines and reports, besides ns/op (wall
// time over b.N, so the inverse of throughput), the median and 99th-percentile latency of one op.
func runConcurrent(b *testing.B, n int, op func() error) {
	lat := make([][]time.Duration, n)
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		errs = make(chan error, n) // each worker sends at most one
	)
	b.ResetTimer()
	start := time.Now()
	for w := range n {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				if err := op(); err != nil {
					errs <- err
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(micros(percentile(all, 0.50)), "p50-µs")
	b.ReportMetric(micros(percentile(all, 0.99)), "p99-µs")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// timedChatter and timedCaller add up the time spent waiting on the model and the tool.
type timedChatter struct {
	router.Chatter
	spent *atomic.Int64
}

func (c timedChatter) Chat(ctx context.Context, req *api.ChatRequest, fn api.ChatResponseFunc) error {
	t0 := time.Now()
	defer func() { c.spent.Add(int64(time.Since(t0))) }()
	return c.Chatter.Chat(ctx, req, fn)
}

type timedCaller struct {
	router.ToolCaller
	spent *atomic.Int64
}

func (c timedCaller) CallTool(ctx context.Context, server, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	t0 := time.Now()
	defer func() { c.spent.Add(int64(time.Since(t0))) }()
	return c.ToolCaller.CallTool(ctx, server, tool, args)
}

// timedRouter adds up the time spent in Route.
type timedRouter struct {
	*router.Router
	spent *atomic.Int64
}

func (r timedRouter) Route(ctx context.Context, req router.Request) (*router.Outcome, error) {
	t0 := time.Now()
	defer func() { r.spent.Add(int64(time.Since(t0))) }()
	return r.Router.Route(ctx, req)
}

// BenchmarkOverhead measures the sidecar's own time per /v1/route, one request at a time: the
// client-side latency of the request minus the time the router spent waiting on the model and the
// tool. It includes the HTTP hop into the sidecar, decoding, prompt assembly, validation and
// encoding the response; router-p50-µs is the part spent inside Route (all but model and tool).
//
//	go test -run x -bench Overhead -benchtime 3000x ./server/
func BenchmarkOverhead(b *testing.B) {
	e := newBenchEnv(b)
	var waited, routed atomic.Int64
	rt := router.New(timedChatter{e.ollama, &waited}, e.inv, timedCaller{e.inv, &waited},
		router.Settings{Model: "fake", CallTimeout: 10 * time.Second, OnModelFailure: router.Fail}, quiet)
	base := listen(b, server.New(server.Deps{Router: timedRouter{rt, &routed}, Inventory: e.inv, Model: e.ollama}, server.Options{Model: "fake", Logger: quiet}))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}, Timeout: 10 * time.Second}
	body := []byte(`{"query":"what is 2 plus 3?"}`)
	over := make([]time.Duration, 0, b.N)
	inRouter := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		waited.Store(0)
		routed.Store(0)
		t0 := time.Now()
		resp, err := client.Post(base+"/v1/route", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		total := time.Since(t0)
		if !bytes.Contains(raw, []byte(`"text":"5"`)) {
			b.Fatalf("got %s, want result 5", raw)
		}
		over = append(over, total-time.Duration(waited.Load()))
		inRouter = append(inRouter, time.Duration(routed.Load()-waited.Load()))
	}
	b.StopTimer()
	slices.Sort(over)
	slices.Sort(inRouter)
	b.ReportMetric(micros(percentile(over, 0.50)), "overhead-p50-µs")
	b.ReportMetric(micros(percentile(over, 0.99)), "overhead-p99-µs")
	b.ReportMetric(micros(percentile(inRouter, 0.50)), "router-p50-µs")
}

// BenchmarkBareHop is the loopback HTTP round trip alone, through fiber and the same kind of
// client, with a response the size of a routing outcome: the part of BenchmarkOverhead any HTTP
// sidecar pays.
//
//	go test -run x -bench BareHop -benchtime 3000x ./server/
func BenchmarkBareHop(b *testing.B) {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	payload := bytes.Repeat([]byte("x"), 2000)
	app.Post("/", func(c *fiber.Ctx) error { return c.Send(payload) })
	base := listen(b, app)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}, Timeout: 10 * time.Second}
	body := []byte(`{"query":"what is 2 plus 3?"}`)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		resp, err := client.Post(base+"/", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(micros(percentile(lat, 0.50)), "p50-µs")
}

// instantChat is an in-process zero-latency model: selection of calculator.add, then {a:2, b:3}.
type instantChat struct{}

func (instantChat) Chat(_ context.Context, req *api.ChatRequest, fn api.ChatResponseFunc) error {
	text := `{"a":2,"b":3}`
	if bytes.Contains(req.Format, []byte(`"needs_more"`)) {
		text = `{"reasoning":"r","use_tool":true,"calls":[{"tool":"calculator.add","task":"add"}],"needs_more":false,"direct":true}`
	}
	return fn(api.ChatResponse{Done: true, Message: api.Message{Role: "assistant", Content: text}})
}

// instantAdd answers calculator.add in-process without MCP.
type instantAdd struct{}

func (instantAdd) CallTool(context.Context, string, string, map[string]any) (*mcp.CallToolResult, error) {
	return mcp.NewToolResultText("5"), nil
}

// BenchmarkSidecarOnly is /v1/route over loopback with the model and the tool replaced by
// zero-latency in-process fakes: no model server competes for the cores, so the latency is the
// sidecar's own work plus the HTTP hop.
//
//	go test -run x -bench SidecarOnly -benchtime 5000x ./server/
func BenchmarkSidecarOnly(b *testing.B) {
	inv := newInventory(b)
	rt := router.New(instantChat{}, inv, instantAdd{}, router.Settings{Model: "fake", OnModelFailure: router.Fail}, quiet)
	base := listen(b, server.New(server.Deps{Router: rt, Inventory: inv}, server.Options{Model: "fake", Logger: quiet}))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}, Timeout: 10 * time.Second}
	body := []byte(`{"query":"what is 2 plus 3?"}`)
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		resp, err := client.Post(base+"/v1/route", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		lat = append(lat, time.Since(t0))
		if !bytes.Contains(raw, []byte(`"text":"5"`)) {
			b.Fatalf("got %s", raw)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(micros(percentile(lat, 0.50)), "p50-µs")
	b.ReportMetric(micros(percentile(lat, 0.99)), "p99-µs")
}

// BenchmarkSidecarPath is BenchmarkSidecarOnly and BenchmarkBareHop in one loop, a bare hop then a
// route in each iteration, so both see the machine in the same state: on a shared machine two
// separate runs can differ by more than the sidecar's own work. ratio is the sidecar's p50 over
// the bare hop's (the target is at most 2); route-allocs counts the heap allocations during each
// route's round trip, client and server together, as SidecarOnly's allocs/op does.
// `go run ./bench load -path` runs it and writes the figures into docs/benchmarks.md.
//
//	go test -run '^$' -bench SidecarPath -benchtime 20000x ./server/
func BenchmarkSidecarPath(b *testing.B) {
	bare := fiber.New(fiber.Config{DisableStartupMessage: true})
	payload := bytes.Repeat([]byte("x"), 2000)
	bare.Post("/", func(c *fiber.Ctx) error { return c.Send(payload) })
	bareURL := listen(b, bare) + "/"
	inv := newInventory(b)
	rt := router.New(instantChat{}, inv, instantAdd{}, router.Settings{Model: "fake", OnModelFailure: router.Fail}, quiet)
	routeURL := listen(b, server.New(server.Deps{Router: rt, Inventory: inv}, server.Options{Model: "fake", Logger: quiet})) + "/v1/route"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}, Timeout: 10 * time.Second}
	body := []byte(`{"query":"what is 2 plus 3?"}`)
	post := func(url string) (time.Duration, []byte) {
		t0 := time.Now()
		resp, err := client.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return time.Since(t0), raw
	}
	// Heap allocations as allocs/op counts them: the tiny ones are counted apart.
	allocs := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}, {Name: "/gc/heap/tiny/allocs:objects"}}
	readAllocs := func() uint64 {
		metrics.Read(allocs)
		return allocs[0].Value.Uint64() + allocs[1].Value.Uint64()
	}
	hop := make([]time.Duration, 0, b.N)
	route := make([]time.Duration, 0, b.N)
	var routeAllocs uint64
	b.ResetTimer()
	for range b.N {
		d, _ := post(bareURL)
		hop = append(hop, d)
		before := readAllocs()
		d, raw := post(routeURL)
		routeAllocs += readAllocs() - before
		route = append(route, d)
		if !bytes.Contains(raw, []byte(`"text":"5"`)) {
			b.Fatalf("got %s", raw)
		}
	}
	b.StopTimer()
	slices.Sort(hop)
	slices.Sort(route)
	b.ReportMetric(micros(percentile(hop, 0.50)), "hop-p50-µs")
	b.ReportMetric(micros(percentile(route, 0.50)), "sidecar-p50-µs")
	b.ReportMetric(float64(percentile(route, 0.50))/float64(percentile(hop, 0.50)), "ratio")
	b.ReportMetric(float64(routeAllocs)/float64(b.N), "route-allocs")
}
