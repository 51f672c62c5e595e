package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"toolrouter/bench/baseline"
	"toolrouter/bench/dataset"
	"toolrouter/bench/metrics"
	"toolrouter/config"
	"toolrouter/inventory"
	"toolrouter/router"
)

// env is one toolset brought up the production way: MCP servers in an inventory.Manager, the
// model-free routers' indexes built from its snapshot, and the model routers on top of it.
type env struct {
	inv   *inventory.Manager
	tools []baseline.Tool
	specs map[string]metrics.FunctionSpec
	cncl  *baseline.Council
	ovl   *baseline.Overlap
	bm25  *baseline.BM25
	// twoPh is the two-phase router by reasoning setting (empty without a model).
	twoPh  map[router.Reasoning]*router.Router
	native *router.Router // nil until the router has a native mode
	// inProcess says the toolset is served by the benchmark's recording handlers.
	inProcess bool
	// unavailable lists tools whose schema did not compile, with the reason.
	unavailable []string
}

// envDeps are what every env is built from.
type envDeps struct {
	servers map[string]config.Server // the project's servers, by name (scenario toolsets)
	chat    router.Chatter           // nil without a model
	set     router.Settings
	// reasonings are the settings of router.reasoning the two-phase router runs with, one router each.
	reasonings []router.Reasoning
	log        *slog.Logger
}

// startEnv starts the toolset's servers and waits for their first connection. A toolset of
// functions is served by an in-process mcp-go server whose handlers record the arguments they
// receive (see recorder); a toolset of the project's servers uses their configuration.
func startEnv(ctx context.Context, ts *dataset.Toolset, d envDeps) (*env, error) {
	servers := map[string]config.Server{}
	opts := inventory.Options{Logger: d.log}
	if ts.Server != "" {
		servers[ts.Server] = config.Server{
			Purpose: ts.Purpose, Transport: config.TransportBuiltin, Builtin: ts.Server,
			ConnectTimeout: config.Duration(20 * time.Second), CallTimeout: config.Duration(30 * time.Second),
		}
		opts.InProcess = map[string]*server.MCPServer{ts.Server: functionServer(ts)}
	}
	for _, name := range ts.External {
		sc, ok := d.servers[name]
		if !ok {
			return nil, fmt.Errorf("toolset %s: server %q is not configured", ts.ID, name)
		}
		servers[name] = sc
	}
	e := &env{inv: inventory.New(servers, opts), inProcess: ts.Server != ""}
	e.inv.Start(ctx)
	snap := e.inv.Snapshot()
	for _, s := range snap.Servers {
		if s.Status != inventory.StateUp {
			e.close()
			return nil, fmt.Errorf("toolset %s: server %s is %s: %s", ts.ID, s.Name, s.Status, s.Error)
		}
		for _, t := range s.Tools {
			if !t.Available {
				e.unavailable = append(e.unavailable, t.Qualified+": "+t.Unavailable)
			}
		}
	}
	e.specs = ts.Specs()
	for _, t := range snap.Available() {
		bt := baseline.Tool{Name: t.Qualified, Description: t.Description}
		for _, p := range t.Parameters {
			bt.Params = append(bt.Params, baseline.Param{Name: p.Name, Description: p.Description})
		}
		e.tools = append(e.tools, bt)
		if _, ok := e.specs[t.Qualified]; !ok {
			spec, err := metrics.SpecFromSchema(t.Qualified, t.InputSchema)
			if err != nil {
				e.close()
				return nil, err
			}
			e.specs[t.Qualified] = spec
		}
	}
	e.cncl = baseline.NewCouncil(e.tools)
	e.ovl = baseline.NewOverlap(e.tools)
	e.bm25 = baseline.NewBM25(e.tools)
	if d.chat != nil {
		e.twoPh = map[router.Reasoning]*router.Router{}
		for _, r := range d.reasonings {
			set := d.set
			set.Reasoning = r
			e.twoPh[r] = router.New(d.chat, e.inv, e.inv, set, d.log)
		}
		if set, ok := nativeSettings(d.set); ok {
			e.native = router.New(d.chat, e.inv, e.inv, set, d.log)
		}
	}
	return e, nil
}

func (e *env) close() { e.inv.Close() }

// functionServer serves a toolset's functions. Each handler records the arguments it receives
// in the recorder carried by the call's context (the in-process transport passes the caller's
// context through), so the harness compares what reached the tool with what the router reported.
func functionServer(ts *dataset.Toolset) *server.MCPServer {
	srv := server.NewMCPServer(ts.Server, "1.0.0", server.WithToolCapabilities(false))
	for _, f := range ts.Functions {
		name := ts.Qualified(f)
		srv.AddTool(mcp.NewToolWithRawSchema(f.Name, f.Description, f.Schema),
			func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if rec, ok := ctx.Value(recorderKey{}).(*recorder); ok {
					rec.add(metrics.Call{Name: name, Args: req.GetArguments()})
				}
				return mcp.NewToolResultText("recorded call of " + f.Original), nil
			})
	}
	return srv
}

// recorder collects the calls one route made to the benchmark's own handlers.
type recorder struct {
	mu    sync.Mutex // guards calls
	calls []metrics.Call
}

type recorderKey struct{}

func (r *recorder) add(c metrics.Call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
}

func (r *recorder) list() []metrics.Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]metrics.Call(nil), r.calls...)
}

// withRecorder returns a context whose calls to the benchmark's handlers are recorded in rec.
func withRecorder(ctx context.Context, rec *recorder) context.Context {
	return context.WithValue(ctx, recorderKey{}, rec)
}

// sameArgs compares argument maps as JSON values.
func sameArgs(a, b map[string]any) bool {
	ja, err1 := json.Marshal(normalized(a))
	jb, err2 := json.Marshal(normalized(b))
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

func normalized(m map[string]any) any {
	if m == nil {
		m = map[string]any{}
	}
	v, err := metrics.Normalize(m)
	if err != nil {
		return m
	}
	return v
}
