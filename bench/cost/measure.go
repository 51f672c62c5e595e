package cost

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/ollama/ollama/api"

	"toolrouter/config"
	"toolrouter/internal/bfcltools"
	"toolrouter/inventory"
	"toolrouter/router"
	"toolrouter/trajectory"
)

// DefaultQueries are the queries the rounds route in turn.
var DefaultQueries = []string{"what is 2 plus 40?", "what time is it in Tokyo?", "add 17 and 25"}

// SizeNumCtx is the num_ctx of the routes over BFCL inventories: room for 200 tools' phase-1 prompt.
const SizeNumCtx = 32768

// Server is what the benchmark needs of the model server: the router's chat, and a raw generate
// that counts a text's tokens with the model's tokenizer. *api.Client satisfies it.
type Server interface {
	router.Chatter
	Generate(ctx context.Context, req *api.GenerateRequest, fn api.GenerateResponseFunc) error
}

// Options configure Run.
type Options struct {
	Server Server
	// Settings are the router's settings: harness.Settings, the sidecar's defaults for the model.
	// Run raises their time bounds (see bounded) and sets what each part varies.
	Settings router.Settings
	// TokenizerModel counts the phase-1 answers' tokens ("": Settings.Model).
	TokenizerModel string
	// Reasonings are the router.reasoning settings of the rounds (empty: no rounds).
	Reasonings []router.Reasoning
	// Queries are routed in turn by the rounds (empty: DefaultQueries), RoundsReps routes per
	// setting (0: 3) after one warm-up route of the first query.
	Queries    []string
	RoundsReps int
	// Sizes are the BFCL inventory sizes of the rest by size (empty: none), each measured over
	// Reps routes (0: 3) after one warm-up route.
	Sizes []int
	Reps  int
	// Arguments, when above 0, measures phase 2 alone on that many BFCL functions' schemas.
	Arguments int
	// OneTool, when above 0, routes that many queries (after one warm-up route) with a budget of
	// one tool call, reasoning none, prefill on and off: a whole one-tool route.
	OneTool int
	// GenerateExamples, when above 0, measures writing that many example queries for each built-in
	// tool (retrieval.generate_examples).
	GenerateExamples int
	// Progress receives a line per part (nil: none); Logger the router's and the inventory's logs
	// (nil: none).
	Progress io.Writer
	Logger   *slog.Logger
}

// Run measures the rounds by reasoning, the rest by inventory size and the examples written per
// tool, and returns them with the
// parameters they were measured with; the caller fills in the command, the machine and the model.
// A route the router fails (a Go error, not a degraded answer) stops the run: its figures would
// be missing a route.
func Run(ctx context.Context, o Options) (*Results, error) {
	if len(o.Queries) == 0 {
		o.Queries = DefaultQueries
	}
	if o.RoundsReps <= 0 {
		o.RoundsReps = 3
	}
	if o.Reps <= 0 {
		o.Reps = 3
	}
	if o.TokenizerModel == "" {
		o.TokenizerModel = o.Settings.Model
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Settings = bounded(o.Settings)
	res := &Results{TokenizerModel: o.TokenizerModel, RoundsReps: o.RoundsReps, Reps: o.Reps}
	if len(o.Reasonings) > 0 {
		res.Queries = o.Queries
		settings, err := rounds(ctx, o)
		if err != nil {
			return nil, err
		}
		res.Settings = settings
	}
	if o.OneTool > 0 {
		one, err := oneTool(ctx, o)
		if err != nil {
			return nil, fmt.Errorf("one-tool routes: %w", err)
		}
		res.OneTool = one
	}
	for _, n := range o.Sizes {
		z, err := size(ctx, o, n)
		if err != nil {
			return nil, fmt.Errorf("%d tools: %w", n, err)
		}
		res.Sizes = append(res.Sizes, z[:]...)
	}
	if o.Arguments > 0 {
		a, err := arguments(ctx, o, o.Arguments)
		if err != nil {
			return nil, fmt.Errorf("phase 2 on BFCL: %w", err)
		}
		res.Arguments = a[:]
	}
	if o.GenerateExamples > 0 {
		g, err := generated(ctx, o, o.GenerateExamples)
		if err != nil {
			return nil, fmt.Errorf("generated examples: %w", err)
		}
		res.Generated = &g
	}
	return res, nil
}

// bounded raises the settings' time bounds so that a slow CPU does not cut a route short: each
// model call and phase may take 2 minutes, a route 5.
func bounded(s router.Settings) router.Settings {
	s.CallTimeout = max(s.CallTimeout, 2*time.Minute)
	s.SelectTimeout = max(s.SelectTimeout, 2*time.Minute)
	s.ArgumentsTimeout = max(s.ArgumentsTimeout, 2*time.Minute)
	s.Deadline = max(s.Deadline, 5*time.Minute)
	return s
}

// rounds routes the queries over the built-in calculator and clock under each reasoning setting,
// then counts the phase-1 answers' tokens: only once every route is made, so the tokenizer's calls
// (which may load another model) do not disturb the measured routes.
func rounds(ctx context.Context, o Options) ([]Setting, error) {
	d := config.Default()
	servers := map[string]config.Server{"calculator": d.Servers["calculator"], "clock": d.Servers["clock"]}
	inv, err := serve(ctx, servers, nil, o.Logger)
	if err != nil {
		return nil, err
	}
	defer inv.Close()
	// Each reasoning setting is measured with router.prefill on and off, the two routers' routes
	// alternating (the same query each pair, the order switching), so both see the same machine.
	runs := make([][2][]Route, len(o.Reasonings))
	for i, r := range o.Reasonings {
		set := o.Settings
		set.Reasoning = r
		fmt.Fprintf(o.Progress, "bench cost: reasoning %s: a warm-up route and %d routes over the calculator and clock, prefill on and off in turn\n", r, o.RoundsReps)
		on, off, err := measurePair(ctx, o.Server, inv, set, o.Logger, o.RoundsReps, func(k int) router.Request { return router.Request{Query: o.Queries[k%len(o.Queries)]} })
		if err != nil {
			return nil, fmt.Errorf("reasoning %s: %w", r, err)
		}
		runs[i] = [2][]Route{on, off}
	}
	fmt.Fprintf(o.Progress, "bench cost: counting the answers' tokens with %s\n", o.TokenizerModel)
	numCtx := router.NumCtx(o.Settings.Options)
	out := make([]Setting, 0, 2*len(o.Reasonings))
	for i, pair := range runs {
		for k, routes := range pair {
			for _, rt := range routes {
				for j := range rt.Answers {
					a := &rt.Answers[j]
					if a.TextTokens, err = countTokens(ctx, o.Server, o.TokenizerModel, numCtx, a.Text); err != nil {
						return nil, err
					}
				}
			}
			s := SummariseSetting(o.Reasonings[i], routes)
			s.Prefill = k == 0
			s.Parts = SummariseParts(routes)
			s.SameSelections, s.SameArguments, s.Pairs = agreement(pair[0], pair[1])
			out = append(out, s)
		}
	}
	return out, nil
}

// oneTool routes the queries in turn over the built-in calculator and clock with a budget of one
// tool call (max_tool_calls 1) and reasoning none, prefill on and off: phase 1, phase 2 and the end
// of a one-tool route, each route's cost whole.
func oneTool(ctx context.Context, o Options) ([]Setting, error) {
	d := config.Default()
	servers := map[string]config.Server{"calculator": d.Servers["calculator"], "clock": d.Servers["clock"]}
	inv, err := serve(ctx, servers, nil, o.Logger)
	if err != nil {
		return nil, err
	}
	defer inv.Close()
	set := o.Settings
	set.Reasoning = router.ReasoningNone
	fmt.Fprintf(o.Progress, "bench cost: one-tool routes: a warm-up route and %d routes, prefill on and off in turn\n", o.OneTool)
	on, off, err := measurePair(ctx, o.Server, inv, set, o.Logger, o.OneTool, func(k int) router.Request {
		return router.Request{Query: o.Queries[k%len(o.Queries)], MaxToolCalls: 1}
	})
	if err != nil {
		return nil, err
	}
	out := make([]Setting, 0, 2)
	for k, routes := range [][]Route{on, off} {
		s := SummariseSetting(router.ReasoningNone, routes)
		s.Prefill = k == 0
		s.Parts = SummariseParts(routes)
		s.SameSelections, s.SameArguments, s.Pairs = agreement(on, off)
		out = append(out, s)
	}
	return out, nil
}

// measurePair makes two routers of set on chat over inv, router.prefill on and off, routes
// query(0) once with each to warm the server up (the model loaded, the prompt's prefix cached),
// then query(1) … query(reps) with each, alternating, the one that goes first switching every
// pair, and returns those routes.
func measurePair(ctx context.Context, chat router.Chatter, inv *inventory.Manager, set router.Settings, log *slog.Logger, reps int,
	query func(int) router.Request) (on, off []Route, err error) {
	var (
		recs [2]*answers
		rts  [2]*router.Router
	)
	for k, prefill := range []bool{true, false} {
		recs[k] = &answers{byID: map[string][]trajectory.Record{}}
		s := set
		s.Recorder, s.Prefill = recs[k], prefill
		rts[k] = router.New(chat, inv, inv, s, log)
		if _, err := route(ctx, rts[k], recs[k], query(0)); err != nil {
			return nil, nil, fmt.Errorf("warm-up (prefill %v): %w", prefill, err)
		}
	}
	var out [2][]Route
	for i := range reps {
		for _, k := range [][]int{{0, 1}, {1, 0}}[i%2] {
			r, err := route(ctx, rts[k], recs[k], query(i+1))
			if err != nil {
				return nil, nil, err
			}
			out[k] = append(out[k], r)
		}
	}
	return out[0], out[1], nil
}

// agreement counts the pairs of routes (the same query, prefill on and off) whose first selection
// was the same, and of those the ones whose round-1 calls had the same arguments.
func agreement(on, off []Route) (selections, arguments, pairs int) {
	for i := range min(len(on), len(off)) {
		pairs++
		if firstSelection(on[i].Outcome) == firstSelection(off[i].Outcome) {
			selections++
			if firstArguments(on[i].Outcome) == firstArguments(off[i].Outcome) {
				arguments++
			}
		}
	}
	return selections, arguments, pairs
}

// firstSelection is a route's round-1 selection as the trace describes it.
func firstSelection(o *router.Outcome) string {
	for _, s := range o.Trace {
		if s.Kind == router.StepSelect && s.Round == 1 {
			return s.Detail
		}
	}
	return ""
}

// firstArguments are the tools and arguments of a route's round-1 calls, as text.
func firstArguments(o *router.Outcome) string {
	var b strings.Builder
	for _, c := range o.Calls {
		if c.Round == 1 {
			a, _ := json.Marshal(c.Arguments)
			fmt.Fprintf(&b, "%s.%s %s|", c.Server, c.Tool, a)
		}
	}
	return b.String()
}

// size routes over an inventory of n BFCL functions with a budget of one call and num_ctx
// SizeNumCtx, router.prefill on and off in turn: the warm-up asks for the first function, each
// route after it for the next.
func size(ctx context.Context, o Options, n int) ([2]Size, error) {
	inv, fns, set, err := bfcl(ctx, o, n)
	if err != nil {
		return [2]Size{}, err
	}
	defer inv.Close()
	fmt.Fprintf(o.Progress, "bench cost: %d tools: a warm-up route and %d routes, prefill on and off in turn\n", n, o.Reps)
	asked := min(n, len(fns))
	on, off, err := measurePair(ctx, o.Server, inv, set, o.Logger, o.Reps, func(i int) router.Request { return router.Request{Query: fns[i%asked].Question} })
	if err != nil {
		return [2]Size{}, err
	}
	out := [2]Size{SummariseSize(n, on), SummariseSize(n, off)}
	out[0].Prefill = true
	return out, nil
}

// route routes one request and pairs the trace's select steps with their trajectory records.
func route(ctx context.Context, rt *router.Router, rec *answers, req router.Request) (Route, error) {
	start := time.Now()
	out, err := rt.Route(ctx, req)
	wall := time.Since(start)
	query := req.Query
	if err != nil {
		return Route{}, fmt.Errorf("routing %q: %w", query, err)
	}
	recs := rec.take(out.RequestID)
	steps := 0
	for _, s := range out.Trace {
		if s.Kind == router.StepSelect {
			steps++
		}
	}
	if steps != len(recs) {
		return Route{}, fmt.Errorf("routing %q: %d select steps in the trace, %d phase-1 trajectory records", query, steps, len(recs))
	}
	r := Route{Outcome: out, Wall: wall}
	for _, x := range recs {
		r.Answers = append(r.Answers, Answer{Text: x.Action.Raw, FormatBytes: len(x.Format)})
	}
	return r, nil
}

// serve starts servers (inProcess serves those of transport builtin it names) and waits for their
// first connection; a server that is not up fails it.
func serve(ctx context.Context, servers map[string]config.Server, inProcess map[string]*server.MCPServer, log *slog.Logger) (*inventory.Manager, error) {
	inv := inventory.New(servers, inventory.Options{Logger: log, InProcess: inProcess})
	inv.Start(ctx)
	for _, s := range inv.Snapshot().Servers {
		if s.Status != inventory.StateUp {
			inv.Close()
			return nil, fmt.Errorf("server %s is %s: %s", s.Name, s.Status, s.Error)
		}
	}
	return inv, nil
}

// answers keeps the phase-1 trajectory records of each request until its route takes them; it is
// the routers' router.Recorder.
type answers struct {
	mu   sync.Mutex // guards byID
	byID map[string][]trajectory.Record
}

// Record keeps a phase-1 record and ignores the others; it never blocks for long.
func (a *answers) Record(r trajectory.Record) bool {
	if r.Kind != string(router.StepSelect) {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.byID[r.RequestID] = append(a.byID[r.RequestID], r)
	return true
}

// take removes and returns a request's records in step order.
func (a *answers) take(id string) []trajectory.Record {
	a.mu.Lock()
	recs := a.byID[id]
	delete(a.byID, id)
	a.mu.Unlock()
	slices.SortStableFunc(recs, func(x, y trajectory.Record) int { return x.Step - y.Step })
	return recs
}

// countTokens is how many tokens the model's tokenizer makes of text, counted by the server: a raw
// prompt of the text alone (no template), one token generated, and the prompt's count read back.
// num_ctx is the router's, so that the same model is not reloaded with another context size.
func countTokens(ctx context.Context, s Server, model string, numCtx int, text string) (int, error) {
	if text == "" {
		return 0, nil
	}
	stream := false
	opts := map[string]any{"num_predict": 1}
	if numCtx > 0 {
		opts["num_ctx"] = numCtx
	}
	n := -1
	err := s.Generate(ctx, &api.GenerateRequest{Model: model, Prompt: text, Raw: true, Stream: &stream, Options: opts},
		func(r api.GenerateResponse) error {
			if r.Done {
				n = r.PromptEvalCount
			}
			return nil
		})
	if err != nil {
		return 0, fmt.Errorf("counting tokens with %s: %w", model, err)
	}
	if n < 0 {
		return 0, fmt.Errorf("counting tokens with %s: the server sent no final message", model)
	}
	return n, nil
}

// arguments routes each of the first n BFCL functions' questions naming that function
// (router.Request.Tool: phase 1 skipped), router.prefill on and off in turn, over an inventory of
// those n functions with a budget of one call: phase 2 alone on BFCL's schemas.
func arguments(ctx context.Context, o Options, n int) ([2]Arguments, error) {
	inv, fns, set, err := bfcl(ctx, o, n)
	if err != nil {
		return [2]Arguments{}, err
	}
	defer inv.Close()
	n = min(n, len(fns))
	fmt.Fprintf(o.Progress, "bench cost: phase 2 on %d BFCL functions: a warm-up route and %d routes, prefill on and off in turn\n", n, n)
	on, off, err := measurePair(ctx, o.Server, inv, set, o.Logger, n, func(i int) router.Request {
		fn := fns[i%n]
		return router.Request{Query: fn.Question, Tool: inventory.Qualify("big", fn.Name)}
	})
	if err != nil {
		return [2]Arguments{}, err
	}
	out := [2]Arguments{SummariseArguments(n, on), SummariseArguments(n, off)}
	out[0].Prefill = true
	return out, nil
}

// bfcl serves n BFCL functions in process as server "big" and returns its inventory (the caller
// closes it), the functions, and the settings that route over them: a budget of one call and
// num_ctx SizeNumCtx.
func bfcl(ctx context.Context, o Options, n int) (*inventory.Manager, []bfcltools.Function, router.Settings, error) {
	big, fns, err := bfcltools.NewServer(n)
	if err != nil {
		return nil, nil, router.Settings{}, err
	}
	servers := map[string]config.Server{"big": {Purpose: "BFCL functions", Transport: config.TransportBuiltin, Builtin: "big",
		ConnectTimeout: config.Duration(time.Minute), CallTimeout: config.Duration(time.Minute)}}
	inv, err := serve(ctx, servers, map[string]*server.MCPServer{"big": big}, o.Logger)
	if err != nil {
		return nil, nil, router.Settings{}, err
	}
	set := o.Settings
	set.MaxToolCalls = 1
	set.Options = maps.Clone(set.Options)
	if set.Options == nil {
		set.Options = map[string]any{}
	}
	set.Options["num_ctx"] = SizeNumCtx
	return inv, fns, set, nil
}
