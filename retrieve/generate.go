package retrieve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/inventory"
	"toolrouter/prompts"
)

// A Generator has the router's model write example queries for each tool
// (retrieval.generate_examples), once per tool definition (its pin) and model, in the background:
// after start and whenever the inventory changes, never on a request's path. The queries go to
// Examples, which ranks them as it ranks configured ones, and to a JSON Lines file so that a
// restart does not pay for them again. Calls are paced (PerMinute) and capped (Max per process).

// Writer makes one chat call; *api.Client and *provider.Ollama satisfy it.
type Writer interface {
	Chat(ctx context.Context, req *api.ChatRequest, fn api.ChatResponseFunc) error
}

// Tools gives the current inventory and tells when it changes; *inventory.Manager satisfies it.
type Tools interface {
	Snapshot() *inventory.Snapshot
	Changed() <-chan struct{}
}

// GenerateOptions tune a Generator.
type GenerateOptions struct {
	// Model writes the examples; PerTool is how many each tool gets.
	Model   string
	PerTool int
	// PerMinute paces the calls (≤ 0: 30); Max caps them per process (≤ 0: 1000).
	PerMinute int
	Max       int
	// Path keeps the generated examples ("": in memory only).
	Path string
	// CallTimeout bounds one call (≤ 0: 60 s).
	CallTimeout time.Duration
	// Options are the model options sent with each call (num_ctx, seed, …).
	Options map[string]any
	Logger  *slog.Logger
}

// maxGeneratedAnswer bounds the answer of one call; past it the call fails.
const maxGeneratedAnswer = 64 << 10

// genKey is what a tool's generated examples belong to.
type genKey struct{ tool, pin, model string }

// genRecord is one line of the generated examples' file.
type genRecord struct {
	Tool    string   `json:"tool"`
	Pin     string   `json:"pin"`
	Model   string   `json:"model"`
	Queries []string `json:"queries"`
}

// Generator writes example queries in the background; Run drives it.
type Generator struct {
	w  Writer
	ex *Examples
	o  GenerateOptions

	mu    sync.Mutex // guards done, lf and calls
	done  map[genKey][]string
	lf    lineFile
	calls int // model calls made by this process
}

// NewGenerator returns a Generator over ex, loading the examples already generated at o.Path
// (created if missing; unreadable lines are skipped).
func NewGenerator(w Writer, ex *Examples, o GenerateOptions) (*Generator, error) {
	if o.PerMinute <= 0 {
		o.PerMinute = 30
	}
	if o.Max <= 0 {
		o.Max = 1000
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	g := &Generator{w: w, ex: ex, o: o, done: map[genKey][]string{}, lf: lineFile{path: o.Path, what: "generated examples"}}
	damaged, err := g.lf.load(func(line []byte) bool {
		var r genRecord
		if json.Unmarshal(line, &r) != nil || r.Tool == "" {
			return false
		}
		g.done[genKey{r.Tool, r.Pin, r.Model}] = r.Queries
		return true
	})
	if err != nil {
		return nil, err
	}
	if damaged || g.lf.n > max(2*len(g.done), 64) {
		err = g.rewrite()
	} else {
		err = g.lf.open()
	}
	if err != nil {
		return nil, err
	}
	return g, nil
}

// rewrite replaces the file with the one record kept per tool definition and model. g.mu is held
// or g is not yet shared.
func (g *Generator) rewrite() error {
	return g.lf.rewrite(func(emit func([]byte)) {
		for k, qs := range g.done {
			line, _ := json.Marshal(genRecord{Tool: k.tool, Pin: k.pin, Model: k.model, Queries: qs})
			emit(append(line, '\n'))
		}
	})
}

// Close closes the file.
func (g *Generator) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lf.close()
}

// Run gives every tool of the inventory its generated examples, writing those it lacks, then
// again after each change, until ctx ends.
func (g *Generator) Run(ctx context.Context, tools Tools) {
	pace := time.NewTicker(time.Minute / time.Duration(g.o.PerMinute))
	defer pace.Stop()
	for {
		changed := tools.Changed()
		g.pass(ctx, tools.Snapshot(), pace.C, changed)
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// Fill applies the examples known for snap's tools and writes the missing ones at once, one call
// after another, within the cap; it returns how many tools got examples written and how many calls
// failed. Run does the same in the background, paced.
func (g *Generator) Fill(ctx context.Context, snap *inventory.Snapshot) (written, failed int) {
	now := make(chan time.Time)
	close(now)
	return g.pass(ctx, snap, now, nil)
}

// pass applies the examples known for snap's tools and writes the missing ones, one per tick of
// pace, until they are all written, the cap is reached, the inventory changes or ctx ends.
func (g *Generator) pass(ctx context.Context, snap *inventory.Snapshot, pace <-chan time.Time, changed <-chan struct{}) (written, failed int) {
	var todo []*inventory.Tool
	for _, t := range snap.Available() {
		g.mu.Lock()
		qs, ok := g.done[genKey{t.Qualified, t.Pin, g.o.Model}]
		g.mu.Unlock()
		if ok {
			g.ex.SetGenerated(t.Qualified, qs)
		} else {
			todo = append(todo, t)
		}
	}
	if len(todo) == 0 {
		return 0, 0
	}
	g.o.Logger.Info("writing example queries for tools", "tools", len(todo), "model", g.o.Model, "per_tool", g.o.PerTool)
	for i, t := range todo {
		g.mu.Lock()
		capped := g.calls >= g.o.Max
		g.mu.Unlock()
		if capped {
			g.o.Logger.Warn("example queries: the cap of model calls is reached (retrieval.generate_max)", "max", g.o.Max, "left", len(todo)-i)
			return written, failed
		}
		select {
		case <-pace:
		case <-changed:
			return written, failed // the next pass takes the new inventory
		case <-ctx.Done():
			return written, failed
		}
		qs, err := g.write(ctx, t)
		if err != nil {
			failed++
			g.o.Logger.Warn("example queries: the model failed", "tool", t.Qualified, "err", err)
			continue
		}
		written++
		g.ex.SetGenerated(t.Qualified, qs)
		if (i+1)%10 == 0 && i+1 < len(todo) {
			g.o.Logger.Info("writing example queries", "done", i+1, "of", len(todo), "failed", failed)
		}
	}
	g.o.Logger.Info("example queries written", "tools", written, "failed", failed)
	return written, failed
}

// write has the model write the examples of t, and keeps them.
func (g *Generator) write(ctx context.Context, t *inventory.Tool) ([]string, error) {
	prompt, err := prompts.GenerateExamples(prompts.ToolOf(t), g.o.PerTool)
	if err != nil {
		return nil, err
	}
	format := fmt.Appendf(nil, `{"type":"array","items":{"type":"string","minLength":3,"maxLength":%d},"minItems":1,"maxItems":%d}`,
		maxExampleBytes/5, g.o.PerTool)
	stream := false
	req := &api.ChatRequest{Model: g.o.Model, Messages: []api.Message{{Role: "user", Content: prompt}}, Format: format,
		Stream: &stream, Options: g.o.Options}
	ctx, cancel := context.WithTimeout(ctx, g.o.CallTimeout)
	defer cancel()
	g.mu.Lock()
	g.calls++
	g.mu.Unlock()
	var text strings.Builder
	err = g.w.Chat(ctx, req, func(r api.ChatResponse) error {
		if text.Len()+len(r.Message.Content) > maxGeneratedAnswer {
			return fmt.Errorf("the answer is over %d bytes", maxGeneratedAnswer)
		}
		text.WriteString(r.Message.Content)
		return nil
	})
	if err != nil {
		return nil, err
	}
	var raw []string
	if err := json.Unmarshal([]byte(strings.TrimSpace(text.String())), &raw); err != nil {
		return nil, fmt.Errorf("the answer is not a JSON array of strings: %w", err)
	}
	var qs []string
	for _, q := range raw {
		q = strings.Join(strings.Fields(q), " ")
		if q != "" && len(q) <= maxExampleBytes && !containsFold(qs, q) {
			qs = append(qs, q)
		}
	}
	if len(qs) == 0 {
		return nil, errors.New("the answer holds no question")
	}
	if err := g.keep(genRecord{Tool: t.Qualified, Pin: t.Pin, Model: g.o.Model, Queries: qs}); err != nil {
		g.o.Logger.Warn("example queries: keeping them in the file", "err", err) // they are kept in memory
	}
	return qs, nil
}

// keep records r in memory and in the file.
func (g *Generator) keep(r genRecord) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.done[genKey{r.Tool, r.Pin, r.Model}] = r.Queries
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return g.lf.append(append(line, '\n'), 1)
}

// containsFold reports whether qs holds q, ignoring case and spacing.
func containsFold(qs []string, q string) bool {
	key := normaliseExample(q)
	for _, c := range qs {
		if normaliseExample(c) == key {
			return true
		}
	}
	return false
}
