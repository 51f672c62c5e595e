package server

import (
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
)

// This file is the route table: every door the API serves after authentication is one row, with
// its methods, path and handler, whether it is work (rate limited), the dialect its errors are
// written in and how it streams. build mounts the rows; the rate limits, the error handler and
// the stream writer read them. Each property is a type whose zero value is not a valid value, so
// a row that leaves one out is refused when the app is built (and by the table's test), never a
// door that silently skips its rate limits or speaks the wrong dialect.

// work is whether a door does work for its caller (model and tool calls): work doors are rate
// limited before their handler runs.
type work int

const (
	// workNone: no model or tool call (listings, probes, admin); not rate limited.
	workNone work = iota + 1
	// workDoor: rate limited at the door, once per request (see limit).
	workDoor
	// workPerCall: the handler admits each call it makes itself (/mcp: the MCP server admits each
	// tool call against the identity's limits).
	workPerCall
)

// dialect is the shape of a door's error bodies; the status is always problemOf's.
type dialect int

const (
	// dialectToolrouter: {"error": {"code", "message"}}.
	dialectToolrouter dialect = iota + 1
	// dialectOpenAI: {"error": {"message", "type", "param", "code"}}.
	dialectOpenAI
	// dialectOllama: {"error": "message"}, as Ollama's server writes it.
	dialectOllama
)

// framing is how a door's stream (stream) writes its events.
type framing int

const (
	// frameNone: the door never streams through stream (a JSON body, or /mcp's own transport).
	frameNone framing = iota + 1
	// frameSSE: Server-Sent Events, text/event-stream, with keep-alive comments.
	frameSSE
	// frameNDJSON: one JSON object a line, application/x-ndjson, as Ollama streams.
	frameNDJSON
)

// door is one row of the route table.
type door struct {
	methods []string
	// path is fiber's route path; one ending in "*" serves every path below it.
	path    string
	handler fiber.Handler
	work    work
	dialect dialect
	framing framing
}

// doors is the route table of h: every door served after authentication, the console's API and
// the optional doors (metrics, /mcp) when their parts are configured.
func (h *handlers) doors() []door {
	post, get := []string{fiber.MethodPost}, []string{fiber.MethodGet}
	t := []door{
		{post, "/v1/route", h.route, workDoor, dialectToolrouter, frameNone},
		{post, "/v1/route/stream", h.routeStream, workDoor, dialectToolrouter, frameSSE},
		{post, "/v1/answer", h.answer, workDoor, dialectToolrouter, frameNone},
		{post, "/v1/answer/stream", h.answerStream, workDoor, dialectToolrouter, frameSSE},
		{post, "/v1/chat/completions", h.chatCompletions, workDoor, dialectOpenAI, frameSSE},
		{get, "/v1/models", h.models, workNone, dialectOpenAI, frameNone},
		{get, "/v1/models/*", h.model, workNone, dialectOpenAI, frameNone},
		{get, "/v1/inventory", h.inventory, workNone, dialectToolrouter, frameNone},
		{get, "/v1/inventory/search", h.search, workNone, dialectToolrouter, frameNone},
		{get, "/v1/usage", h.usageQuery, workNone, dialectToolrouter, frameNone},
	}
	t = append(t, h.ollamaDoors()...)
	t = append(t, h.consoleDoors()...)
	t = append(t,
		door{get, pathHealthz, func(c *fiber.Ctx) error { return c.JSON(fiber.Map{"status": "ok"}) }, workNone, dialectToolrouter, frameNone},
		door{get, pathReadyz, h.readyz, workNone, dialectToolrouter, frameNone},
		door{post, pathReload, h.reload, workNone, dialectToolrouter, frameNone},
		door{post, pathApprove, h.approve, workNone, dialectToolrouter, frameNone},
		door{post, pathApproveCall, h.approveCall, workDoor, dialectToolrouter, frameNone},
	)
	if h.d.Metrics != nil {
		t = append(t, door{get, pathMetrics, h.metrics(adaptor.HTTPHandler(h.d.Metrics)), workNone, dialectToolrouter, frameNone})
	}
	if h.d.MCP != nil {
		t = append(t, door{[]string{fiber.MethodPost, fiber.MethodGet, fiber.MethodDelete}, pathMCP, h.mcp, workPerCall, dialectToolrouter, frameNone})
	}
	return t
}

// check says what a row leaves out; nil when it is complete.
func (d door) check() error {
	switch {
	case d.path == "" || d.path[0] != '/':
		return fmt.Errorf("door %q: path must start with /", d.path)
	case len(d.methods) == 0:
		return fmt.Errorf("door %s: no methods", d.path)
	case d.handler == nil:
		return fmt.Errorf("door %s: no handler", d.path)
	case d.work < workNone || d.work > workPerCall:
		return fmt.Errorf("door %s: work is not set", d.path)
	case d.dialect < dialectToolrouter || d.dialect > dialectOllama:
		return fmt.Errorf("door %s: dialect is not set", d.path)
	case d.framing < frameNone || d.framing > frameNDJSON:
		return fmt.Errorf("door %s: framing is not set", d.path)
	}
	return nil
}

// mount routes the rows on app: each method of a row runs the rate limits first when it is a
// work door and a Limiter is configured, then its handler. A row that is not complete is a
// programming error: build panics rather than serve a door without its properties.
func (h *handlers) mount(app *fiber.App, table []door) {
	for _, d := range table {
		if err := d.check(); err != nil {
			panic(err)
		}
		handlers := []fiber.Handler{d.handler}
		if d.work == workDoor && h.d.Limiter != nil {
			handlers = []fiber.Handler{h.limit, d.handler}
		}
		for _, m := range d.methods {
			app.Add(m, d.path, handlers...)
		}
	}
	h.table = table
}

// doorFor is the row serving a path, as fiber routes it (in any case, with or without a trailing
// slash); nil when no row does.
func (h *handlers) doorFor(path string) *door {
	path = strings.ToLower(path)
	if len(path) > 1 {
		path = strings.TrimSuffix(path, "/")
	}
	for i := range h.table {
		p, prefix := strings.CutSuffix(strings.ToLower(h.table[i].path), "*")
		if path == p || prefix && strings.HasPrefix(path, p) && len(path) > len(p) {
			return &h.table[i]
		}
	}
	return nil
}

// dialectPrefixes are the dialects of the paths no door serves, by the API their prefix names:
// an unrouted path under /api/ is answered as Ollama answers, one under /v1/chat/ as OpenAI does.
var dialectPrefixes = []struct {
	prefix  string
	dialect dialect
}{
	{"/api/", dialectOllama},
	{"/v1/chat/", dialectOpenAI},
}

// dialectOf is the error dialect of a request's path: its door's; for a path no door serves, the
// dialect of the API its prefix names (dialectPrefixes), else toolrouter's.
func (h *handlers) dialectOf(path string) dialect {
	if d := h.doorFor(path); d != nil {
		return d.dialect
	}
	lower := strings.ToLower(path)
	for _, p := range dialectPrefixes {
		if strings.HasPrefix(lower, p.prefix) {
			return p.dialect
		}
	}
	return dialectToolrouter
}
