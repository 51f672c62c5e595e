package server

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"toolrouter/answer"
	"toolrouter/config"
	"toolrouter/observe"
)

// accessLog renders a handler's error itself (through errorHandler, as fiber would), then reports
// and logs each request once it has ended: a plain request here, after it is served; a stream by
// its writer, once its last event is queued (see stream). It is the outermost middleware, so it
// also renders and logs the 500 that recover makes of a panic.
func (h *handlers) accessLog(c *fiber.Ctx) error {
	start := time.Now()
	rep := &served{Report: observe.Report{Start: start, Header: traceHeaders(c)}, method: methodName(c.Method()), path: h.pathName(c.Path())}
	c.Locals(reportKey{}, rep)
	var e *answer.Problem
	if err := c.Next(); err != nil {
		e = h.problemOf(err) // once: it logs an internal error
		if err := h.errorHandler(c, e); err != nil {
			return err
		}
	}
	if rep.streaming { // a stream's report and log line are its writer's
		return nil
	}
	rep.identify(c)
	rep.finish(c.Response().StatusCode(), e)
	rep.Duration = time.Since(start)
	if !rep.unobserved {
		h.observe(rep)
	}
	h.logRequest(rep)
	return nil
}

// methodName is a copy of a request's method (fasthttp reuses its buffers): one of the constant
// names for the methods served, a clone of any other.
func methodName(m string) string {
	for _, known := range []string{fiber.MethodGet, fiber.MethodPost, fiber.MethodHead, fiber.MethodDelete, fiber.MethodOptions} {
		if m == known {
			return known
		}
	}
	return strings.Clone(m)
}

// pathName is a copy of a request's path (fasthttp reuses its buffers): a served path's own string
// when it is one, a clone of any other.
func (h *handlers) pathName(p string) string {
	for _, r := range h.routes {
		if !r.prefix && r.path == p {
			return r.path
		}
	}
	return strings.Clone(p)
}

// logRequest writes the request's one log line: what was asked (method and path), for whom
// (identity and the credential's name), what came of it (status, error code, the routing decision
// and who answered) and how long it took. It never logs a header, the query or a credential.
//
// The level is log.requests' (Options.RequestLog), off logging nothing; readiness probes are
// logged at debug, even a 503 from /readyz; a request that failed on the server's side (a 5xx, or
// a stream's error event with one) at warn, so an operator sees it whatever log.requests says.
func (h *handlers) logRequest(r *served) {
	level, ok := slog.LevelInfo, true
	switch {
	case r.Endpoint == pathHealthz || r.Endpoint == pathReadyz:
		level, ok = slog.LevelDebug, h.o.RequestLog != config.RequestLogOff
	case r.Status >= fiber.StatusInternalServerError || r.failed >= fiber.StatusInternalServerError:
		level = slog.LevelWarn
	case h.o.RequestLog == config.RequestLogDebug:
		level = slog.LevelDebug
	case h.o.RequestLog == config.RequestLogOff:
		ok = false
	}
	ctx := context.Background()
	if !ok || !h.o.Logger.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 12)
	attrs = append(attrs, slog.String("method", r.method), slog.String("path", r.path), slog.Int("status", r.Status),
		slog.Float64("duration_ms", ms(r.Duration)))
	if r.Authenticated {
		attrs = append(attrs, slog.String("identity", r.Identity.String()), slog.String("credential", r.Identity.Name))
	}
	if r.ErrorCode != "" {
		attrs = append(attrs, slog.String("error_code", r.ErrorCode))
	}
	if out := r.Outcome; out != nil {
		attrs = append(attrs, slog.Bool("use_tool", out.UseTool))
		var tools []string
		for _, c := range out.Calls {
			if c.Server != "" {
				tools = append(tools, c.Server+"."+c.Tool)
			}
		}
		if len(tools) > 0 {
			attrs = append(attrs, slog.Any("tools", tools))
		}
		if out.DegradedReason != "" {
			attrs = append(attrs, slog.String("degraded", string(out.DegradedReason)))
		}
	}
	if r.answeredBy != "" {
		attrs = append(attrs, slog.String("answered_by", r.answeredBy))
	}
	h.o.Logger.LogAttrs(ctx, level, "request", attrs...)
}
