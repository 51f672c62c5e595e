package prefill

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/ollama/ollama/api"
)

// Retry is how long a lead probe that failed (the server was down) waits before it is tried
// again; until then answers are whole objects.
const Retry = time.Minute

// marker stands for an answer's text in the probe of a template.
const marker = "\x1etoolrouter-prefill\x1e"

type state int

const (
	unknown state = iota
	on
	off
)

// Template is what is known of continuing answers with one model on one server: whether its
// template continues a final assistant message, and the lead a continued answer starts with. The
// zero value knows nothing yet. Safe for concurrent use.
type Template struct {
	mu    sync.Mutex // guards the fields; never held over a model call
	state state
	// lead is what the model's template writes between the assistant's header and its answer
	// when the user's turn is last (a thinking template's empty think block with think off): a
	// continued answer starts with it, so the model sees the turn it was trained on.
	lead  string
	tried time.Time
	// probing says a probe of the template is under way.
	probing bool
}

// Probe is how Template.Continuing learns a model's template.
type Probe struct {
	// Renders says the server renders its templates (Ollama's _debug_render_only): the lead is
	// learnt first, by Learn. Otherwise answers are continued until one is not (Template.Stop).
	Renders bool
	// Learn reads the lead (LearnLead over the server's rendering).
	Learn func(context.Context) (string, error)
	// Timeout bounds the probe, which may load the model: a model call's bound.
	Timeout time.Duration
	// Log hears a template that does not continue; Model names it there.
	Log   *slog.Logger
	Model string
}

// Continuing reports whether answers are continued now, and the lead they start with. On a
// server that renders templates the lead is learnt first, by one probe at a time: the request that
// starts it waits for it (no longer than its own deadline), others meanwhile answer with whole
// objects. The probe goes on when the request stops waiting.
func (t *Template) Continuing(ctx context.Context, p Probe) (string, bool) {
	t.mu.Lock()
	switch {
	case t.state == on:
		defer t.mu.Unlock()
		return t.lead, true
	case t.state == off, t.probing, !t.tried.IsZero() && time.Since(t.tried) < Retry:
		t.mu.Unlock()
		return "", false
	case !p.Renders:
		defer t.mu.Unlock()
		t.state = on // detected on the first answer instead (ErrNotContinued)
		return "", true
	}
	t.probing, t.tried = true, time.Now()
	t.mu.Unlock()
	probe, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.Timeout)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer cancel()
		lead, err := p.Learn(probe)
		t.mu.Lock()
		defer t.mu.Unlock()
		t.probing = false
		switch {
		case errors.Is(err, ErrNotContinued):
			t.state = off
			p.log().Warn("the model's template does not continue a final assistant message; answers are whole objects",
				"model", p.Model, "err", err)
		case err != nil:
			p.log().Debug("could not read the model's template; answers are whole objects for now", "model", p.Model, "err", err)
		case t.state == unknown:
			t.state, t.lead = on, lead
		}
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return "", false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lead, t.state == on
}

func (p Probe) log() *slog.Logger {
	if p.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Log
}

// Stop turns continuing off for good: the server did not continue an answer. It reports whether
// continuing was not already off (the caller logs it once).
func (t *Template) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	was := t.state != off
	t.state = off
	return was
}

// Render returns the prompt the server's template makes of req's messages, without running the
// model (Ollama's _debug_render_only). req is sent as it is otherwise: give it the options and
// keep_alive of the calls it stands for, so a model the probe loads is the one they use.
func Render(ctx context.Context, chat interface {
	Chat(context.Context, *api.ChatRequest, api.ChatResponseFunc) error
}, req api.ChatRequest) (string, error) {
	stream := false
	req.Stream, req.DebugRenderOnly = &stream, true
	var out *api.DebugInfo
	err := chat.Chat(ctx, &req, func(resp api.ChatResponse) error {
		if resp.DebugInfo != nil {
			out = resp.DebugInfo
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("rendering the model's template: %w", err)
	}
	if out == nil {
		return "", errors.New("rendering the model's template: the server sent none")
	}
	return out.RenderedTemplate, nil
}

// LearnLead reads a model's template through render (the prompt the template makes of a
// conversation): what it writes before an answer when the user's turn is last, and whether a
// final assistant message that starts with that is rendered as exactly that prompt followed by
// the message's text, left open. ErrNotContinued when it is not.
func LearnLead(ctx context.Context, render func(context.Context, []api.Message) (string, error)) (string, error) {
	base := []api.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "u"}}
	open, err := render(ctx, base)
	if err != nil {
		return "", err
	}
	cont, err := render(ctx, append(base[:2:2], api.Message{Role: "assistant", Content: marker}))
	if err != nil {
		return "", err
	}
	n := 0
	for n < len(open) && n < len(cont) && open[n] == cont[n] {
		n++
	}
	if !strings.HasPrefix(cont[n:], marker) {
		return "", ErrNotContinued
	}
	lead := open[n:]
	check, err := render(ctx, append(base[:2:2], api.Message{Role: "assistant", Content: lead + marker}))
	if err != nil {
		return "", err
	}
	if check != open+marker {
		return "", ErrNotContinued
	}
	return lead, nil
}
