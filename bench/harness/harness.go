// Package harness runs the benchmark: for every dataset and router it brings each toolset up the
// production way (MCP servers in an inventory.Manager; the real router on top), routes every query,
// tunes the model-free routers' "no tool" thresholds per source by cross-fitting, and scores the
// predictions into report rows. It owns no metric definitions (metrics), no data formats (dataset) and no
// output formats (report).
package harness

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"toolrouter/bench/dataset"
	"toolrouter/bench/report"
	"toolrouter/config"
	"toolrouter/router"
)

// Options configure a run. The zero value of Concurrency is 1.
type Options struct {
	Datasets []*dataset.Dataset
	// Routers to run, by name (see Routers); empty means all.
	Routers []string
	// Reasoning lists the router.reasoning settings the routers that select with phase 1
	// (two-phase, hybrid) run with, each setting its own rows and lines (see Variant); empty:
	// DefaultReasoning alone. It overrides Settings.Reasoning.
	Reasoning []router.Reasoning
	// Servers are the project's servers by name, for toolsets that use them (the scenario set).
	Servers map[string]config.Server
	// Chat is the model server; nil skips the model routers with SkipReason.
	Chat       router.Chatter
	Settings   router.Settings
	Model      report.Model
	SkipReason string
	// Plumbing says Chat is the fake model: its rows are plumbing checks, not measurements.
	Plumbing bool
	// RandomWeights says Chat serves a model with random weights (scripts/real-ollama's tiny
	// models): its rows check shape, model calls and tokens, and are never accuracy figures.
	RandomWeights bool
	// Cases is the per-case file: each answer is written to it as soon as it is made, and answers
	// it already holds are taken from it instead of being made again (nil: none).
	Cases *CaseLog
	// CaseTimeout bounds one router's work on one case (0: no bound). A case over it is cancelled
	// and counted as timed out: an outcome of its own, never right.
	CaseTimeout time.Duration
	Concurrency int
	Seed        uint64
	Limit       int
	Command     string
	// Progress receives a progress bar (nil: none).
	Progress io.Writer
	Logger   *slog.Logger
}

// Run runs every router on every dataset and returns the results. A toolset that cannot be
// brought up (a server that does not start) stops the run with its error: a benchmark missing
// part of a dataset would report wrong figures.
func Run(ctx context.Context, o Options) (*report.Results, error) {
	start := time.Now()
	if o.Concurrency <= 0 {
		o.Concurrency = 1
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if len(o.Routers) == 0 {
		o.Routers = Routers
	}
	for _, r := range o.Routers {
		if !slices.Contains(Routers, r) {
			return nil, fmt.Errorf("unknown router %q (known: %v)", r, Routers)
		}
	}
	if err := checkReasonings(o.Reasoning); err != nil {
		return nil, err
	}
	res := &report.Results{
		Command: o.Command, Started: start.UTC(), Seed: o.Seed, Limit: o.Limit, Model: o.Model,
		Resumed: o.Cases.Resumed(),
		Machine: report.Machine{GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU()},
	}
	total := 0
	for _, ds := range o.Datasets {
		total += len(ds.Cases)
	}
	prog := newProgress(o.Progress, total)
	defer prog.finish()
	runs := expand(o.Routers, o.Reasoning)
	active := activeRuns(o, runs)
	var activeNames []string // the keyword routers' names are their runs' names
	for _, rn := range active {
		activeNames = append(activeNames, rn.name)
	}
	specs := &specBook{}
	all := make([][][]prediction, len(o.Datasets)) // dataset → active run → case
	for i, ds := range o.Datasets {
		preds, notes, err := runDataset(ctx, o, ds, active, prog, specs)
		if err != nil {
			return nil, fmt.Errorf("dataset %s: %w", ds.Name, err)
		}
		all[i] = preds
		info := report.Dataset{Name: ds.Name, Family: ds.Family, Source: ds.Source, Cases: len(ds.Cases), Notes: append(slices.Clone(ds.Notes), notes...)}
		for _, c := range ds.Cases {
			if c.NeedsTool {
				info.NeedTool++
			} else {
				info.NoTool++
			}
		}
		res.Datasets = append(res.Datasets, info)
	}
	var notes map[string]string
	res.Thresholds, notes = tune(o.Seed, o.Datasets, activeNames, all)
	for i := range res.Datasets {
		if n, ok := notes[res.Datasets[i].Family]; ok {
			res.Datasets[i].Notes = append(res.Datasets[i].Notes, n)
		}
	}
	if slices.ContainsFunc(activeNames, thresholded) {
		res.Tuning = tuningLine(o.Datasets, activeNames)
	}
	for i, ds := range o.Datasets {
		for _, rn := range runs {
			j := slices.Index(active, rn)
			if j < 0 {
				res.Rows = append(res.Rows, inactiveRow(o, ds.Name, rn))
				continue
			}
			row := score(ds, rn, all[i][j], specs)
			if needsModel(rn.router) && o.Plumbing {
				row = unmeasuredRow(row, report.Plumbing, PlumbingNote)
			} else if needsModel(rn.router) && o.RandomWeights {
				row = unmeasuredRow(row, report.RandomWeights, RandomWeightsNote)
			}
			res.Rows = append(res.Rows, row)
		}
	}
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// activeRuns are the runs that can run: model routers need a model, and native needs the
// router's native mode.
func activeRuns(o Options, runs []routerRun) []routerRun {
	var out []routerRun
	for _, rn := range runs {
		switch {
		case rn.router == Native && !NativeReady:
		case needsModel(rn.router) && o.Chat == nil:
		default:
			out = append(out, rn)
		}
	}
	return out
}

func inactiveRow(o Options, ds string, rn routerRun) report.Row {
	row := report.Row{Dataset: ds, Router: rn.name, Reasoning: string(rn.reasoning), Status: report.Skipped, Reason: o.SkipReason}
	if rn.router == Native && !NativeReady {
		row.Status, row.Reason = report.Unavailable, "the router's native mode (Ollama tool calling) has not landed"
	}
	return row
}

// runDataset routes every case of a dataset with every active run, taking the answers the
// per-case file already holds from it and writing each new one to it. Cases run Concurrency at a
// time; a toolset is started when its first case needs it and closed after its last (also when
// every answer comes from the file: its tools' declarations score the arguments). One failing case
// (an error that is not a timeout) stops the run: its figures would be wrong.
func runDataset(ctx context.Context, o Options, ds *dataset.Dataset, active []routerRun, prog *progress, specs *specBook) ([][]prediction, []string, error) {
	preds := make([][]prediction, len(active))
	for j := range preds {
		preds[j] = make([]prediction, len(ds.Cases))
	}
	p := newPool(envDeps{servers: o.Servers, chat: o.Chat, set: o.Settings, reasonings: reasoningsOf(active), log: o.Logger}, ds.Cases, specs)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Concurrency)
	for i, c := range ds.Cases {
		g.Go(func() error {
			e, err := p.acquire(gctx, c.Toolset)
			if err != nil {
				return err
			}
			defer p.release(c.Toolset)
			for j, rn := range active {
				rec, ok := o.Cases.lookup(rn.name, ds.Name, c.ID)
				if !ok {
					pr, err := predictCase(gctx, o.CaseTimeout, rn, e, c)
					if err != nil {
						return fmt.Errorf("%s on %s: %w", rn.name, c.ID, err)
					}
					rec = pr.record(rn, ds.Name, c.ID)
					if judged(o, rn.router) {
						_, right := judge(c, pr)
						rec.RoutingRight = &right
					}
					if err := o.Cases.add(rec); err != nil {
						return err
					}
				}
				preds[j][i] = rec.prediction()
			}
			prog.add(ds.Name)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		p.closeAll()
		return nil, nil, err
	}
	return preds, p.notes(), nil
}

// pool starts each toolset once, shares it between its cases and closes it after the last one.
type pool struct {
	deps  envDeps
	specs *specBook

	mu          sync.Mutex // guards envs, unavailable
	envs        map[*dataset.Toolset]*pooled
	unavailable []string
}

type pooled struct {
	ready chan struct{} // closed once env or err is set
	env   *env
	err   error
	left  int // cases still to run on the toolset
}

func newPool(deps envDeps, cases []dataset.Case, specs *specBook) *pool {
	p := &pool{deps: deps, specs: specs, envs: map[*dataset.Toolset]*pooled{}}
	for _, c := range cases {
		pe := p.envs[c.Toolset]
		if pe == nil {
			pe = &pooled{}
			p.envs[c.Toolset] = pe
		}
		pe.left++
	}
	return p
}

func (p *pool) acquire(ctx context.Context, ts *dataset.Toolset) (*env, error) {
	p.mu.Lock()
	pe := p.envs[ts]
	if pe.ready != nil {
		p.mu.Unlock()
		<-pe.ready
		return pe.env, pe.err
	}
	pe.ready = make(chan struct{})
	p.mu.Unlock()
	pe.env, pe.err = startEnv(ctx, ts, p.deps)
	if pe.err == nil {
		p.specs.put(ts, pe.env.specs)
	}
	if pe.err == nil && len(pe.env.unavailable) > 0 {
		p.mu.Lock()
		p.unavailable = append(p.unavailable, pe.env.unavailable...)
		p.mu.Unlock()
	}
	close(pe.ready)
	return pe.env, pe.err
}

func (p *pool) release(ts *dataset.Toolset) {
	p.mu.Lock()
	pe := p.envs[ts]
	pe.left--
	last := pe.left == 0
	p.mu.Unlock()
	if last && pe.env != nil {
		pe.env.close()
	}
}

// closeAll closes the toolsets still open after a failed run (their remaining cases never ran).
func (p *pool) closeAll() {
	p.mu.Lock()
	var open []*pooled
	for _, pe := range p.envs {
		if pe.ready != nil && pe.left > 0 {
			pe.left = 0
			open = append(open, pe)
		}
	}
	p.mu.Unlock()
	for _, pe := range open {
		<-pe.ready
		if pe.env != nil {
			pe.env.close()
		}
	}
}

// notes reports tools that could not be offered.
func (p *pool) notes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.unavailable) == 0 {
		return nil
	}
	slices.Sort(p.unavailable)
	shown := p.unavailable[:min(3, len(p.unavailable))]
	return []string{fmt.Sprintf("%d tools were not offered because their schema did not compile, e.g. %v", len(p.unavailable), shown)}
}
