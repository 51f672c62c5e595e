package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"toolrouter/router"
)

// sseEvent is one Server-Sent Event.
type sseEvent struct {
	name string
	data any
}

// routeStream serves POST /v1/route/stream: the same routing as /v1/route, with each step sent as
// a Server-Sent Event as it happens and a final complete (the outcome) or error event. When the
// client goes away the request's context is cancelled, which stops the model and tool calls.
func (h *handlers) routeStream(c *fiber.Ctx) error {
	body := c.Body()
	if !utf8.Valid(body) {
		return badRequest("bad_encoding", "body must be UTF-8")
	}
	req, err := h.decodeRoute(body)
	if err != nil {
		return err
	}
	// The stream outlives the handler, so its context cannot derive from the fiber context.
	ctx, cancel := context.WithTimeout(context.Background(), h.o.RequestTimeout)
	events := make(chan sseEvent, 32)
	send := func(ev sseEvent) {
		select {
		case events <- ev:
		case <-ctx.Done():
		}
	}
	req.OnEvent = func(ev router.Event) { send(sseEvent{name: string(ev.Type), data: ev}) }
	go func() {
		defer close(events)
		out, err := h.d.Router.Route(ctx, req)
		if err != nil {
			status, code, msg := h.classify(err)
			send(sseEvent{name: string(router.EventError), data: fiber.Map{"error": fiber.Map{"code": code, "message": msg, "status": status}}})
			return
		}
		send(sseEvent{name: string(router.EventComplete), data: out})
	}()

	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set(fiber.HeaderConnection, "keep-alive")
	c.Set("X-Accel-Buffering", "no")
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer cancel()
		heartbeat := time.NewTicker(h.o.StreamHeartbeat)
		defer heartbeat.Stop()
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					return
				}
				if writeEvent(w, ev) != nil {
					return // the client is gone: cancel stops the router
				}
			case <-heartbeat.C:
				// A comment line: clients ignore it, and a failed write tells us the client left.
				if _, err := w.WriteString(": keep-alive\n\n"); err != nil || w.Flush() != nil {
					return
				}
			}
		}
	})
	return nil
}

func writeEvent(w *bufio.Writer, ev sseEvent) error {
	data, err := json.Marshal(ev.data)
	if err != nil {
		data, _ = json.Marshal(fiber.Map{"error": fiber.Map{"code": "internal", "message": err.Error()}})
	}
	if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.name, data); err != nil {
		return err
	}
	return w.Flush()
}
