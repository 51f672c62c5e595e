package server_test

import (
	"context"
	"net"
	"testing"

	"github.com/valyala/fasthttp"

	"toolrouter/console"
	"toolrouter/observe"
	"toolrouter/router"
	"toolrouter/server"
)

// BenchmarkConsoleRoutePath is what the console adds to a request of the API: one POST /v1/route
// through the fiber app's handler (no network), with a router that answers at once (a call and its
// result, as a real routing reports them), the console off and on (its routes, its Origin
// exception, its ring of recent requests as an observer). The difference is the console's cost per
// request:
//
//	go test -run '^$' -bench ConsoleRoutePath -count 6 ./server/
func BenchmarkConsoleRoutePath(b *testing.B) {
	files, err := console.NewFiles()
	if err != nil {
		b.Fatal(err)
	}
	out := &router.Outcome{UseTool: true, Server: "calculator", Tool: "add", Direct: true, Rounds: 1, Stopped: router.StopDone,
		Calls: []router.Call{{Step: 1, Round: 1, Server: "calculator", Tool: "add", Arguments: map[string]any{"a": 2, "b": 3},
			Result: &router.Result{Text: "5", Structured: map[string]any{"result": 5}}}},
		Trace: []router.Step{{Index: 1, Kind: router.StepSelect}, {Index: 2, Kind: router.StepArguments}, {Index: 3, Kind: router.StepExecute}},
		Usage: router.Usage{LLMCalls: 2, PromptTokens: 600, CompletionTokens: 40}}
	rt := routerFunc(func(context.Context, router.Request) (*router.Outcome, error) { return out, nil })
	for _, on := range []bool{false, true} {
		name := "off"
		d := server.Deps{Router: rt, Observer: observe.Fanout{}}
		if on {
			name = "on"
			recent := console.NewRecent(100, 0)
			d.Observer = observe.Fanout{recent}
			d.Console = &server.Console{Files: files, Recent: recent}
		}
		b.Run(name, func(b *testing.B) {
			handler := server.New(d, server.Options{Logger: quiet, Listen: "127.0.0.1:8090"}).Handler()
			var req fasthttp.Request
			req.Header.SetMethod("POST")
			req.SetRequestURI("/v1/route")
			req.Header.SetHost("127.0.0.1:8090")
			req.Header.SetContentType("application/json")
			req.SetBodyString(`{"query":"what is 2 plus 3?"}`)
			var ctx fasthttp.RequestCtx
			remote := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}
			b.ReportAllocs()
			for b.Loop() {
				ctx.Init(&req, remote, nil)
				handler(&ctx)
				if ctx.Response.StatusCode() != 200 {
					b.Fatalf("got %d %s, want 200", ctx.Response.StatusCode(), ctx.Response.Body())
				}
			}
		})
	}
}
