package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/gofiber/fiber/v2"

	"toolrouter/answer"
	"toolrouter/router"
)

// sseEvent is one Server-Sent Event.
type sseEvent struct {
	name string
	data any
}

// sendFunc sends one event to the client; it never blocks past the request's end.
type sendFunc func(name string, data any)

// stream runs work in the background and sends its events to the client as they come, then
// complete (work's result) or error ({"error": {code, message, status}}). work's context ends at
// the request timeout, when the server shuts down (the last event is then an error shutting_down)
// and as soon as the client goes away, which stops the model and tool calls: the connection is
// watched (watchConn), and a failed write tells it too.
func (h *handlers) stream(c *fiber.Ctx, work func(ctx context.Context, send sendFunc) (any, error)) error {
	return h.streamAs(c, namedEvents, work)
}

// eventFormat is what a stream sends last: work's result out, or e when it failed. How each
// event is written is the door's framing (writeFrame).
type eventFormat struct {
	end func(send sendFunc, out any, e *answer.Problem)
}

// namedEvents is the format of toolrouter's own streams: named events, ending with complete or
// error ({"error": {code, message, status}}).
var namedEvents = eventFormat{end: func(send sendFunc, out any, e *answer.Problem) {
	if e != nil {
		send(string(router.EventError), fiber.Map{"type": router.EventError, "error": fiber.Map{"code": e.Code, "message": e.Message, "status": e.Status}})
		return
	}
	send(string(router.EventComplete), completeEvent(out))
}}

// streamAs is stream with the events ended in format f and written in the framing of the
// request's door (SSE or NDJSON).
func (h *handlers) streamAs(c *fiber.Ctx, f eventFormat, work func(ctx context.Context, send sendFunc) (any, error)) error {
	d := h.doorFor(c.Path())
	if d == nil || d.framing == frameNone {
		return fmt.Errorf("streaming on %s, a door that does not stream", c.Path())
	}
	framing, dialect := d.framing, d.dialect
	// The stream outlives the handler, so its context cannot derive from the fiber context.
	ctx, end, err := h.request(context.Background(), c.Context().Conn())
	if err != nil {
		return err
	}
	rep := reportOf(c)
	rep.streaming = true
	rep.identify(c)
	events := make(chan sseEvent, 32)
	gone := make(chan struct{}) // closed when the writer stops: nobody reads events any more
	send := func(name string, data any) {
		select {
		case events <- sseEvent{name: name, data: data}:
		case <-gone:
		}
	}
	go func() {
		defer close(events)
		out, err := h.safely(ctx, send, work)
		if cause := answer.Interrupted(ctx); cause != nil {
			err = cause // whatever the work made of its cancelled calls
		}
		var e *answer.Problem
		if err != nil {
			out, e = nil, h.problemOf(err)
			rep.failed = e.Status
		}
		rep.finish(fiber.StatusOK, e)
		f.end(send, out, e)
		// The observers and the log see the stream once its work is done: the last event is
		// queued, the client has it as soon as the writer sends it.
		rep.Duration = time.Since(rep.Start)
		h.observe(rep)
		h.logRequest(rep)
	}()

	if framing == frameNDJSON {
		c.Set(fiber.HeaderContentType, "application/x-ndjson")
	} else {
		c.Set(fiber.HeaderContentType, "text/event-stream")
		c.Set(fiber.HeaderCacheControl, "no-cache")
		c.Set(fiber.HeaderConnection, "keep-alive")
	}
	c.Set("X-Accel-Buffering", "no")
	// The status and headers go out at once: a client waits for them, and an NDJSON stream's
	// first line may come only once the routing is done.
	c.Response().ImmediateHeaderFlush = true
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer end()       // second: stops the watch before fasthttp reads the connection again
		defer close(gone) // first: the work's last sends do not wait for a writer that left
		heartbeat := time.NewTicker(h.o.StreamHeartbeat)
		defer heartbeat.Stop()
		beats := heartbeat.C
		if framing == frameNDJSON {
			beats = nil // NDJSON has no comment: every line is an object its clients parse
		}
		ended := ctx.Done()
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					return
				}
				if writeFrame(w, framing, dialect, ev) != nil {
					return // the client is gone: end stops the work
				}
			case <-ended:
				if errors.Is(context.Cause(ctx), answer.ErrClientGone) {
					return
				}
				ended = nil // a timeout or a shutdown: the work's error event is still to come
			case <-beats:
				// A comment line: clients ignore it, and a failed write tells us the client left.
				if _, err := w.WriteString(": keep-alive\n\n"); err != nil || w.Flush() != nil {
					return
				}
			}
		}
	})
	return nil
}

// safely runs work, turning a panic into an error: the stream runs outside the handler, where the
// recover middleware cannot catch it, and one request must never take the process down.
func (h *handlers) safely(ctx context.Context, send sendFunc, work func(context.Context, sendFunc) (any, error)) (out any, err error) {
	defer func() {
		if p := recover(); p != nil {
			h.o.Logger.Error("panic in stream", "panic", p, "stack", string(debug.Stack()))
			out, err = nil, fmt.Errorf("panic: %v", p)
		}
	}()
	return work(ctx, send)
}

// sseDone is the data of OpenAI's last stream event, sent as [DONE].
type sseDone struct{}

// writeFrame writes one event in a framing: an SSE event (named when ev has a name; [DONE] for
// sseDone) or an NDJSON line. An event that cannot be encoded is written as an internal error in
// the door's dialect.
func writeFrame(w *bufio.Writer, f framing, d dialect, ev sseEvent) error {
	var data []byte
	if _, ok := ev.data.(sseDone); ok {
		data = []byte("[DONE]")
	} else if b, err := json.Marshal(ev.data); err == nil {
		data = b
	} else {
		data, _ = json.Marshal(errorBody(d, &answer.Problem{Status: fiber.StatusInternalServerError, Code: "internal", Message: err.Error()}))
	}
	var err error
	switch {
	case f == frameNDJSON:
		data = append(data, '\n')
		_, err = w.Write(data)
	case ev.name != "":
		_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.name, data)
	default:
		_, err = fmt.Fprintf(w, "data: %s\n\n", data)
	}
	if err != nil {
		return err
	}
	return w.Flush()
}

// completeEvent is the complete event's data: the result with the event's type beside its
// fields, as every other event has it.
func completeEvent(out any) any {
	data, err := json.Marshal(out)
	if err != nil || len(data) < 2 || data[0] != '{' {
		return fiber.Map{"type": router.EventComplete, "result": out}
	}
	if string(data) == "{}" {
		return json.RawMessage(`{"type":"complete"}`)
	}
	return json.RawMessage(append([]byte(`{"type":"complete",`), data[1:]...))
}
