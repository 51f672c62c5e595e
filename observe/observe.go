// Package observe carries what one served request did to the parts that watch requests once they
// have ended: metrics, usage records, traces and the token and tool-call charges of rate limits.
// It owns the Report and the fan-out, nothing else: each observer lives in its own package and
// reads only the Report.
package observe

import (
	"context"
	"time"

	"toolrouter/access"
	"toolrouter/council"
	"toolrouter/provider"
	"toolrouter/router"
)

// Report is one served request, complete: the front door fills it while serving and hands it to
// the observers once the client has its answer (for a stream, once its last event is sent).
type Report struct {
	// Start is when the request arrived; Duration is how long it took to answer.
	Start    time.Time
	Duration time.Duration
	// Endpoint is the route served, a closed set: the HTTP route pattern ("/v1/route",
	// "/v1/chat/completions", ...; "other" for an unmatched path), or "mcp:TOOL" for a call of
	// the MCP server mode's tool TOOL.
	Endpoint string
	// Method is the HTTP method ("" for an MCP call over stdio).
	Method string
	// Status is the HTTP status sent (an MCP call: 200, or its error's status). ErrorCode is the
	// error's code when the request failed ("" when it did not).
	Status    int
	ErrorCode string
	// Identity is who the request acted for; Authenticated is false when none was established
	// (the credential was missing or refused).
	Identity      access.Identity
	Authenticated bool
	// Outcome is the routing, nil when nothing was routed; Council is the council's run, nil when
	// none ran.
	Outcome *router.Outcome
	Council *council.Result
	// ModelCalls are the model calls made outside routing and the council (an OpenAI-compatible
	// completion).
	ModelCalls []ModelCall
	// Header reads a request header (trace context); nil when the request had none (stdio).
	Header func(name string) string
}

// ModelCall is one model call made outside routing and the council.
type ModelCall struct {
	Phase            string // "completion"
	Model            string
	Start            time.Time
	Duration         time.Duration
	PromptTokens     int
	CompletionTokens int
	// Breakdown splits the server's time and counts the prompt tokens not served from its cache.
	provider.Breakdown
	Err string // "" when it succeeded
}

// Observer takes the report of each request. Observe must not block: an observer that writes
// somewhere slow queues, and drops (counting) when its queue is full.
type Observer interface {
	Observe(ctx context.Context, r *Report)
}

// Fanout hands each report to every observer in order.
type Fanout []Observer

// Observe calls each observer.
func (f Fanout) Observe(ctx context.Context, r *Report) {
	for _, o := range f {
		o.Observe(ctx, r)
	}
}
