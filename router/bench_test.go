package router_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/ollama/ollama/api"

	"toolrouter/config"
	"toolrouter/inventory"
	"toolrouter/router"
)

// instantModel is a zero-latency in-process model: phase-1 requests (their format has
// "needs_more") are answered by sel(round), phase-2 requests by args. It records prompt sizes.
type instantModel struct {
	sel  func(round int) string
	args string

	mu     sync.Mutex // guards round, prompt
	round  int
	prompt []int // bytes of each phase-1 prompt
}

func (m *instantModel) Chat(_ context.Context, req *api.ChatRequest, fn api.ChatResponseFunc) error {
	text := m.args
	if strings.Contains(string(req.Format), "needs_more") {
		n := 0
		for _, msg := range req.Messages {
			n += len(msg.Content)
		}
		m.mu.Lock()
		m.round++
		m.prompt = append(m.prompt, n)
		text = m.sel(m.round)
		m.mu.Unlock()
	}
	return fn(api.ChatResponse{Done: true, Message: api.Message{Role: "assistant", Content: text}, Metrics: api.Metrics{PromptEvalCount: 1, EvalCount: 1}})
}

func (m *instantModel) reset() {
	m.mu.Lock()
	m.round, m.prompt = 0, m.prompt[:0]
	m.mu.Unlock()
}

// instantTool answers every call at once with a fixed text.
type instantTool string

func (t instantTool) CallTool(context.Context, string, string, map[string]any) (*mcp.CallToolResult, error) {
	return mcp.NewToolResultText(string(t)), nil
}

// selectN asks for the calculator in rounds 1..n (with different arguments each time through the
// task) and stops after.
func selectN(n int) func(int) string {
	return func(round int) string {
		if round > n {
			return `{"reasoning":"done","use_tool":false,"calls":[],"needs_more":false,"direct":false}`
		}
		return fmt.Sprintf(`{"reasoning":"r","use_tool":true,"calls":[{"tool":"calculator.add","task":"round %d"}],"needs_more":%v,"direct":false}`, round, round < n)
	}
}

func benchInventory(b *testing.B) *inventory.Manager {
	inv := inventory.New(map[string]config.Server{"calculator": builtinServer("calculator")}, inventory.Options{Logger: quiet})
	inv.Start(context.Background())
	b.Cleanup(inv.Close)
	return inv
}

// BenchmarkLoop is the router's own cost per request for 1, 2 and 4 rounds with a zero-latency
// in-process model and tool, so the per-round overhead is the difference between rows. Each call
// has its own arguments (the model answers {"a":1,"b":2} every time, so rounds 2+ are dedup hits:
// the "fresh" variant varies the tool's answer through a counter instead).
//
//	go test -run x -bench Loop -benchmem ./router/
func BenchmarkLoop(b *testing.B) {
	inv := benchInventory(b)
	for _, rounds := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("rounds=%d", rounds), func(b *testing.B) {
			var n int
			model := &instantModel{sel: selectN(rounds)}
			rt := router.New(&countingArgs{model: model, n: &n}, inv, instantTool("3"), router.Settings{Model: "m"}, quiet)
			b.ReportAllocs()
			for b.Loop() {
				model.reset()
				out, err := rt.Route(context.Background(), router.Request{Query: "add"})
				if err != nil || len(out.Calls) != rounds {
					b.Fatalf("got %v, %d calls; want %d", err, len(out.Calls), rounds)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(rounds)/1000, "µs/round")
		})
	}
}

// countingArgs gives each phase-2 answer fresh arguments so no round is a dedup hit.
type countingArgs struct {
	model *instantModel
	mu    sync.Mutex // guards n
	n     *int
}

func (c *countingArgs) Chat(ctx context.Context, req *api.ChatRequest, fn api.ChatResponseFunc) error {
	if !strings.Contains(string(req.Format), "needs_more") {
		c.mu.Lock()
		*c.n++
		c.model.args = fmt.Sprintf(`{"a":%d,"b":2}`, *c.n)
		c.mu.Unlock()
	}
	return c.model.Chat(ctx, req, fn)
}

// BenchmarkPromptGrowth reports the phase-1 prompt size of each of four rounds whose calls each
// return 6 KB, without trimming (num_ctx 32768) and with it (num_ctx 4096, reserve 1024): the
// estimated tokens (bytes/3) of rounds 1..5, where round 5 is the one that says "no more".
//
//	go test -run x -bench PromptGrowth ./router/
func BenchmarkPromptGrowth(b *testing.B) {
	inv := benchInventory(b)
	result := instantTool(strings.Repeat("a 6 KB tool result line. ", 6000/25))
	for _, tc := range []struct {
		name   string
		numCtx int
	}{{"untrimmed", 32768}, {"trimmed", 4096}} {
		b.Run(tc.name, func(b *testing.B) {
			var n int
			model := &instantModel{sel: selectN(4)}
			rt := router.New(&countingArgs{model: model, n: &n}, inv, result,
				router.Settings{Model: "m", Options: map[string]any{"num_ctx": tc.numCtx}, ContextReserve: 1024}, quiet)
			var prompt []int
			for b.Loop() {
				model.reset()
				out, err := rt.Route(context.Background(), router.Request{Query: "add"})
				if err != nil || len(out.Calls) != 4 {
					b.Fatalf("got %v, %d calls", err, len(out.Calls))
				}
				prompt = append(prompt[:0], model.prompt...)
			}
			for i, p := range prompt {
				b.ReportMetric(float64(p/3), fmt.Sprintf("r%d-tokens", i+1))
			}
		})
	}
}
