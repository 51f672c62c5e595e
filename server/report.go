package server

import (
	"context"
	"strings"

	"github.com/gofiber/fiber/v2"

	"toolrouter/answer"
	"toolrouter/observe"
	"toolrouter/router"
)

// served is the report of the request being served, kept in its fiber locals (reportKey) from
// the access log's start: handlers add what they routed, and whoever answers last hands it to the
// observers, the access log or, for a stream, the stream's writer once its last event is sent.
type served struct {
	observe.Report
	streaming bool // the stream reports it
	// unobserved requests are logged but not handed to the observers: /mcp's, whose tool calls
	// the MCP server reports itself.
	unobserved bool

	// For the request's log line (logRequest): its method and path (copies: fasthttp reuses its
	// buffers), who answered a /v1/answer request, and the status of a stream's error event (0
	// when it sent none).
	method, path string
	answeredBy   string
	failed       int
	// release, if not nil, ends the request's hold on its rate limits' concurrent slots.
	release func()
}

type reportKey struct{}

// reportOf returns the request's report; a request served without the access log (a test of one
// middleware) gets a fresh one nobody reports.
func reportOf(c *fiber.Ctx) *served {
	if r, ok := c.Locals(reportKey{}).(*served); ok {
		return r
	}
	return &served{}
}

// identify records the route served, its method and the identity the request acted for.
func (r *served) identify(c *fiber.Ctx) {
	r.Endpoint, r.Method = endpoint(c), strings.Clone(c.Method())
	if id, ok := identity(c); ok {
		r.Identity, r.Authenticated = id, true
	}
}

// observe hands a finished request's report to the observers, once the request is over: its
// concurrent slots are released first.
func (h *handlers) observe(r *served) {
	if r.release != nil {
		r.release()
		r.release = nil
	}
	if h.d.Observer != nil {
		h.d.Observer.Observe(context.Background(), &r.Report)
	}
}

// finish records how the request ended: status is the HTTP status sent, e the error it ended with
// (nil when none; a stream's error event). It is the one place a report's status is decided.
//
// A request whose client left is reported as 499 client_closed_request, streamed or not (a stream
// had sent its 200, to nobody who stayed for the answer), and without the degraded reason the
// router made of its cancelled calls: that reads as a deadline, and nothing degraded an answer
// nobody received. Its model calls stay in the report: they were made.
func (r *served) finish(status int, e *answer.Problem) {
	r.Status = status
	if e == nil {
		return
	}
	r.ErrorCode = e.Code
	if e.Status != answer.StatusClientClosed {
		return
	}
	r.Status = answer.StatusClientClosed
	if o := r.Outcome; o != nil && o.DegradedReason != "" {
		cut := *o // the router's outcome is left as it made it
		cut.Degraded, cut.DegradedReason = "", ""
		r.Outcome = &cut
	}
}

// reportAnswer records an answer's routing and council run in the report.
func reportAnswer(r *served, out *answer.Response) {
	if out != nil {
		r.Outcome, r.Council, r.answeredBy = out.Routing, out.Council, out.AnsweredBy
	}
}

// reportChat records a chat completion's routing, council run and model calls in the report.
func reportChat(r *served, out *answer.ChatResult) {
	if out == nil {
		return
	}
	if out.Answered != nil {
		reportAnswer(r, out.Answered)
	} else {
		reportRoute(r, out.Trace.Routing)
	}
	r.ModelCalls = append(r.ModelCalls, out.Calls...)
}

// reportRoute records a routing in the report.
func reportRoute(r *served, out *router.Outcome) {
	if out != nil {
		r.Outcome = out
	}
}

// traceHeaders copies the request's trace context headers: a stream reports after its handler
// has returned, when the request's own headers are gone.
func traceHeaders(c *fiber.Ctx) func(string) string {
	var h map[string]string
	for _, name := range []string{"traceparent", "tracestate", "baggage"} {
		if v := c.Get(name); v != "" {
			if h == nil {
				h = map[string]string{}
			}
			h[name] = string([]byte(v))
		}
	}
	if h == nil {
		return noHeader
	}
	return func(name string) string { return h[name] }
}

// noHeader is the trace context of a request that sent none.
func noHeader(string) string { return "" }

// endpoint is the route pattern the request matched, "other" when none did: a closed set, fit
// for a metric label.
func endpoint(c *fiber.Ctx) string {
	if r := c.Route(); r != nil && r.Path != "/" && r.Path != "" {
		return r.Path
	}
	return "other"
}
