// Package testmcp provides real mcp-go servers for tests: tools that fail, hang, count their calls,
// echo or attack their client, served in-process or over stdio by a re-executed test binary; and
// hostile input schemas.
package testmcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Faults is a server whose tools misbehave on purpose, and which records what it received.
type Faults struct {
	*server.MCPServer

	mu        sync.Mutex // guards calls, intervals, arrived, released
	calls     []Call
	intervals []Interval
	arrived   int
	released  bool
	release   chan struct{} // closed when a barrier call sees enough parties
}

// Interval is when one call of a tool ran.
type Interval struct {
	Tool       string
	Start, End time.Time
}

// Call is one call a Faults tool received.
type Call struct {
	Tool string
	Args map[string]any
}

// RawSchema is the input schema of the "strict" tool: keywords (top-level anyOf, minProperties,
// $schema) that mcp-go's client-side Tool struct drops.
const RawSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` +
	`"properties":{"id":{"type":"integer","description":"Record id"},"name":{"type":"string","description":"Record name"}},` +
	`"anyOf":[{"required":["id"]},{"required":["name"]}],"minProperties":1,"additionalProperties":false}`

// NewFaults returns a server with the tools:
//   - fail: always answers isError
//   - hang: blocks until its call is cancelled
//   - count: {n: integer, required} answers "n=<n>"
//   - echo: {message: string, required} answers the message
//   - strict: RawSchema; answers the arguments as JSON
//   - crash: exits the process (only meaningful over stdio)
//   - barrier: {parties: integer} returns once that many barrier calls are running at the same
//     time (or its call is cancelled), so a test can prove calls overlap without sleeping
//   - long: {bytes: integer} answers that many bytes of text
//   - records: {bytes: integer} answers structured content {"records": [...]} whose JSON is at
//     least that many bytes, and the text "N records"; it is read-only (readOnlyHint), so it
//     runs under every safety.auto_execute level
func NewFaults() *Faults {
	f := &Faults{MCPServer: server.NewMCPServer("faults", "1.0.0", server.WithToolCapabilities(true)), release: make(chan struct{})}
	f.AddTool(mcp.NewTool("barrier", mcp.WithDescription("Waits for its peers."),
		mcp.WithNumber("parties", mcp.Required(), mcp.Description("How many calls must run at once")),
		mcp.WithString("id", mcp.Description("Tells calls apart"))),
		f.record(func(ctx context.Context, args map[string]any) (*mcp.CallToolResult, error) {
			parties, _ := args["parties"].(float64)
			f.mu.Lock()
			f.arrived++
			if !f.released && float64(f.arrived) >= parties {
				f.released = true
				close(f.release)
			}
			f.mu.Unlock()
			select {
			case <-f.release:
				return mcp.NewToolResultText("released"), nil
			case <-ctx.Done():
				return mcp.NewToolResultError("barrier: not enough parties arrived"), nil
			}
		}))
	f.AddTool(mcp.NewTool("long", mcp.WithDescription("Answers a long text."),
		mcp.WithNumber("bytes", mcp.Required(), mcp.Description("Length of the answer"))),
		f.record(func(_ context.Context, args map[string]any) (*mcp.CallToolResult, error) {
			n, _ := args["bytes"].(float64)
			var b strings.Builder
			for i := 0; b.Len() < int(n); i++ {
				fmt.Fprintf(&b, "line %d of a long tool result. ", i)
			}
			return mcp.NewToolResultText(b.String()[:int(n)]), nil
		}))
	f.AddTool(mcp.NewTool("records", mcp.WithDescription("Lists records."), mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithNumber("bytes", mcp.Required(), mcp.Description("Length of the records' JSON"))),
		f.record(func(_ context.Context, args map[string]any) (*mcp.CallToolResult, error) {
			n, _ := args["bytes"].(float64)
			recs := Records(int(n))
			return mcp.NewToolResultStructured(map[string]any{"records": recs}, fmt.Sprintf("%d records", len(recs))), nil
		}))
	f.AddTool(mcp.NewTool("fail", mcp.WithDescription("Always fails.")), f.record(func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultError("the tool failed on purpose"), nil
	}))
	f.AddTool(mcp.NewTool("hang", mcp.WithDescription("Never answers.")), f.record(func(ctx context.Context, _ map[string]any) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	f.AddTool(mcp.NewTool("count", mcp.WithDescription("Counts to n."),
		mcp.WithNumber("n", mcp.Required(), mcp.Description("How far to count"))),
		f.record(func(_ context.Context, args map[string]any) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(fmt.Sprintf("n=%v", args["n"])), nil
		}))
	f.AddTool(mcp.NewTool("echo", mcp.WithDescription("Echoes a message back."),
		mcp.WithString("message", mcp.Required(), mcp.Description("Message to echo"))),
		f.record(func(_ context.Context, args map[string]any) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(fmt.Sprint(args["message"])), nil
		}))
	f.AddTool(mcp.NewToolWithRawSchema("strict", "Looks a record up by id or name.", json.RawMessage(RawSchema)),
		f.record(func(_ context.Context, args map[string]any) (*mcp.CallToolResult, error) {
			b, _ := json.Marshal(args)
			return mcp.NewToolResultText(string(b)), nil
		}))
	f.AddTool(mcp.NewTool("crash", mcp.WithDescription("Kills its server.")), f.record(func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
		os.Exit(3)
		return nil, nil
	}))
	return f
}

func (f *Faults) record(h func(context.Context, map[string]any) (*mcp.CallToolResult, error)) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		start := time.Now()
		f.mu.Lock()
		f.calls = append(f.calls, Call{Tool: req.Params.Name, Args: req.GetArguments()})
		f.mu.Unlock()
		res, err := h(ctx, req.GetArguments())
		f.mu.Lock()
		f.intervals = append(f.intervals, Interval{Tool: req.Params.Name, Start: start, End: time.Now()})
		f.mu.Unlock()
		return res, err
	}
}

// Calls returns the calls received so far.
func (f *Faults) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// Intervals returns when each finished call ran.
func (f *Faults) Intervals() []Interval {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Interval(nil), f.intervals...)
}

// Records returns records whose JSON array is at least n bytes: objects of about 100 bytes each,
// as a listing tool would answer.
func Records(n int) []any {
	var recs []any
	for size := 2; size < n; size += 100 {
		recs = append(recs, map[string]any{"id": float64(len(recs)), "name": fmt.Sprintf("record %08d", len(recs)),
			"note": "a row of a listing that a read-only tool answers in full"})
	}
	return recs
}

// EnvServe is the environment variable that makes a test binary serve Faults over stdio.
const EnvServe = "TOOLROUTER_TEST_SERVE_FAULTS"

// EnvServeHostile is the environment variable that makes a test binary serve NewHostile over
// stdio.
const EnvServeHostile = "TOOLROUTER_TEST_SERVE_HOSTILE"

// ServeIfAsked serves Faults (EnvServe) or NewHostile (EnvServeHostile) over stdio and exits when
// the test binary was re-executed with either set; call it first in TestMain.
func ServeIfAsked() {
	var srv *server.MCPServer
	switch {
	case os.Getenv(EnvServe) != "":
		srv = NewFaults().MCPServer
	case os.Getenv(EnvServeHostile) != "":
		srv = NewHostile()
	default:
		return
	}
	if err := server.ServeStdio(srv); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// NewHostile returns a server whose tools attack their client over stdio:
//   - echo: {message: string, required} answers the message, to show a session works
//   - spew: {bytes: integer, required} writes that many bytes to standard output with no
//     newline (one line without end, as far as a line reader knows), then answers "done"
func NewHostile() *server.MCPServer {
	s := server.NewMCPServer("hostile", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("echo", mcp.WithDescription("Echoes a message back."),
		mcp.WithString("message", mcp.Required(), mcp.Description("Message to echo"))),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(fmt.Sprint(req.GetArguments()["message"])), nil
		})
	s.AddTool(mcp.NewTool("spew", mcp.WithDescription("Writes output without a newline."),
		mcp.WithNumber("bytes", mcp.Required(), mcp.Description("How many bytes"))),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n, _ := req.GetArguments()["bytes"].(float64)
			chunk := []byte(strings.Repeat("x", 64<<10))
			for left := int(n); left > 0; left -= len(chunk) {
				if _, err := os.Stdout.Write(chunk[:min(left, len(chunk))]); err != nil {
					return nil, err
				}
			}
			return mcp.NewToolResultText("done"), nil
		})
	return s
}

// DeepSchema returns an object schema whose property "a" nests depth levels of objects (each
// level two JSON levels: the schema and its "properties").
func DeepSchema(depth int) json.RawMessage {
	return json.RawMessage(strings.Repeat(`{"type":"object","properties":{"a":`, depth) + `{"type":"string"}` +
		strings.Repeat(`}}`, depth))
}

// WideSchema returns an object schema of at least n bytes: properties "p0", "p1", ..., each an
// object nested depth levels deep (see DeepSchema).
func WideSchema(n, depth int) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d":%s`, i, DeepSchema(depth))
	}
	b.WriteString(`}}`)
	return json.RawMessage(b.String())
}

// DeafStdioScript is a shell script (sh -c) for a stdio server that answers initialize, then
// closes its standard input and sends the client a ping: the client's answer to the ping cannot
// be written, which mcp-go's stdio transport logs, and the listing of tools that follows fails
// (at once, or at the connect timeout), so the server is reported down and retried.
const DeafStdioScript = `read -r line
id=$(printf '%s\n' "$line" | sed -n 's/.*"id":\([^,}]*\).*/\1/p')
ver=$(printf '%s\n' "$line" | sed -n 's/.*"protocolVersion":"\([^"]*\)".*/\1/p')
printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"%s","capabilities":{"tools":{}},"serverInfo":{"name":"deaf","version":"1"}}}\n' "$id" "$ver"
read -r line
exec 0<&-
printf '{"jsonrpc":"2.0","id":"ping-1","method":"ping"}\n'
exec sleep 60
`
