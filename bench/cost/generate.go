package cost

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/config"
	"toolrouter/retrieve"
)

// Generated is what writing example queries costs per tool (retrieval.generate_examples): one
// call per built-in tool, as retrieve.Generator makes it. The sums are kept beside the means.
type Generated struct {
	PerTool int `json:"per_tool"`
	// Tools counts the tools; Calls the calls the server answered with its counters; Written the
	// tools that got examples.
	Tools        int     `json:"tools"`
	Calls        int     `json:"calls"`
	Written      int     `json:"written"`
	PromptTokens int     `json:"prompt_tokens"`
	DecodeTokens int     `json:"decode_tokens"`
	DecodeMSSum  float64 `json:"decode_ms_sum"`
	RestMSSum    float64 `json:"rest_ms_sum"`
	WallMSSum    float64 `json:"wall_ms_sum"`
	// Means per call; DecodeMSPerToken is decode ms over decode tokens.
	MeanPrompt       float64 `json:"mean_prompt_tokens"`
	MeanDecode       float64 `json:"mean_decode_tokens"`
	MeanRestMS       float64 `json:"mean_rest_ms"`
	MeanWallMS       float64 `json:"mean_wall_ms"`
	DecodeMSPerToken float64 `json:"decode_ms_per_token"`
}

// metering passes the generator's calls to the server and keeps each call's final counters and
// wall time.
type metering struct {
	Server
	mu    sync.Mutex
	calls []metered
}

type metered struct {
	final api.ChatResponse
	wall  time.Duration
}

func (m *metering) Chat(ctx context.Context, req *api.ChatRequest, fn api.ChatResponseFunc) error {
	start := time.Now()
	var final *api.ChatResponse
	err := m.Server.Chat(ctx, req, func(r api.ChatResponse) error {
		if r.Done {
			final = &r
		}
		return fn(r)
	})
	if final != nil {
		m.mu.Lock()
		m.calls = append(m.calls, metered{final: *final, wall: time.Since(start)})
		m.mu.Unlock()
	}
	return err
}

// generated writes perTool example queries for each built-in tool, after one warm-up call of the
// first tool that is not counted, and sums the calls.
func generated(ctx context.Context, o Options, perTool int) (Generated, error) {
	d := config.Default()
	inv, err := serve(ctx, map[string]config.Server{"calculator": d.Servers["calculator"], "clock": d.Servers["clock"]}, nil, o.Logger)
	if err != nil {
		return Generated{}, err
	}
	defer inv.Close()
	snap := inv.Snapshot()
	tools := len(snap.Available())
	m := &metering{Server: o.Server}
	fill := func(calls int) (int, error) {
		ex, err := retrieve.OpenExamples("", 0)
		if err != nil {
			return 0, err
		}
		g, err := retrieve.NewGenerator(m, ex, retrieve.GenerateOptions{Model: o.Settings.Model, PerTool: perTool, Max: calls,
			CallTimeout: 2 * time.Minute, Options: o.Settings.Options, Logger: o.Logger})
		if err != nil {
			return 0, err
		}
		written, _ := g.Fill(ctx, snap)
		return written, nil
	}
	if _, err := fill(1); err != nil { // the warm-up: the model loaded
		return Generated{}, err
	}
	m.calls = nil
	fmt.Fprintf(o.Progress, "bench cost: %d examples for each of %d tools, after a warm-up call\n", perTool, tools)
	written, err := fill(tools)
	if err != nil {
		return Generated{}, err
	}
	return summariseGenerated(perTool, tools, written, m.calls), nil
}

// summariseGenerated sums the metered calls of the examples written for tools.
func summariseGenerated(perTool, tools, written int, calls []metered) Generated {
	g := Generated{PerTool: perTool, Tools: tools, Written: written}
	for _, c := range calls {
		f := c.final.Metrics
		g.Calls++
		g.PromptTokens += f.PromptEvalCount
		g.DecodeTokens += f.EvalCount
		g.DecodeMSSum += ms(f.EvalDuration)
		g.RestMSSum += ms(f.TotalDuration - f.LoadDuration - f.PromptEvalDuration - f.EvalDuration)
		g.WallMSSum += ms(c.wall)
	}
	if g.Calls > 0 {
		n := float64(g.Calls)
		g.MeanPrompt, g.MeanDecode = float64(g.PromptTokens)/n, float64(g.DecodeTokens)/n
		g.MeanRestMS, g.MeanWallMS = g.RestMSSum/n, g.WallMSSum/n
	}
	if g.DecodeTokens > 0 {
		g.DecodeMSPerToken = g.DecodeMSSum / float64(g.DecodeTokens)
	}
	return g
}
