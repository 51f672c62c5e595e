package router

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/prefill"
	"toolrouter/provider"
	"toolrouter/tokens"
)

// Prefill (package prefill): with Settings.Prefill the router writes the parts of an answer its
// format forces, as the start of the assistant's turn, and the model generates only the values it
// decides, each under its own schema. The text the router records is the whole answer, exactly as
// the whole-object path would have it.

// continuing reports whether answers are prefilled now, and the lead they start with (see
// prefill.Template.Continuing).
func (r *Router) continuing(ctx context.Context) (string, bool) {
	if !r.set.Prefill || r.set.Think {
		return "", false // thinking comes before the answer: nothing to continue
	}
	return r.pf.Continuing(ctx, prefill.Probe{Renders: r.set.Renders, Learn: r.learnLead, Timeout: r.probeTimeout(),
		Log: r.log, Model: r.set.Model})
}

// probeTimeout bounds the template probe: a model call's bound (it may load the model).
func (r *Router) probeTimeout() time.Duration {
	if r.set.CallTimeout > 0 {
		return r.set.CallTimeout
	}
	return DefaultPhaseTimeout
}

// stopPrefill turns prefilling off for good: the server did not continue an answer.
func (r *Router) stopPrefill(err error) {
	if r.pf.Stop() {
		r.log.Warn("the model server does not continue a final assistant message; answers are whole objects",
			"model", r.set.Model, "err", err)
	}
}

// learnLead reads the model's template through the server's rendering (prefill.LearnLead).
func (r *Router) learnLead(ctx context.Context) (string, error) {
	return prefill.LearnLead(ctx, r.renderPrompt)
}

// renderPrompt returns the prompt the server's template makes of msgs, without running the model,
// with the options and keep_alive of every call, so a model the probe loads is the one they use.
func (r *Router) renderPrompt(ctx context.Context, msgs []api.Message) (string, error) {
	think := api.ThinkValue{Value: r.set.Think}
	req := api.ChatRequest{Model: r.set.Model, Messages: msgs, Think: &think, Options: *r.options.Load()}
	if r.set.KeepAlive != 0 {
		req.KeepAlive = &api.Duration{Duration: r.set.KeepAlive}
	}
	return prefill.Render(ctx, r.chat, req)
}

// continuation builds one JSON object answer as a sequence of continued values.
type continuation struct {
	r    *Router
	msgs []api.Message // the prompt; each call adds the answer so far as a final assistant message
	est  tokens.Estimate
	lead string
	a    prefill.Answer // the answer so far
	rep  reply          // the calls' costs, added up, and their number (Calls)
}

func (r *Router) newContinuation(msgs []api.Message, est tokens.Estimate, lead string) *continuation {
	return &continuation{r: r, msgs: msgs[:len(msgs):len(msgs)], est: est, lead: lead}
}

// value asks the model for the value at the end of the answer so far (ask) and writes it.
func (c *continuation) value(ctx context.Context, format []byte, kind prefill.Kind, topLogprobs int) (string, []api.Logprob, error) {
	v, lps, err := c.ask(ctx, format, kind, topLogprobs)
	if err == nil {
		c.a.Literal(v)
	}
	return v, lps, err
}

// ask asks the model for the value at the end of the answer so far, under format, and returns it
// as written. topLogprobs > 0 asks for the tokens' log probabilities. An answer that is not a
// value of kind is prefill.ErrNotContinued.
func (c *continuation) ask(ctx context.Context, format []byte, kind prefill.Kind, topLogprobs int) (string, []api.Logprob, error) {
	last := api.Message{Role: "assistant", Content: c.lead + c.a.String()}
	msgs := append(c.msgs, last)
	// The prompt is the request's and the answer so far.
	est := c.est.Plus(c.r.est.Messages(c.r.set.Model, []api.Message{last}))
	rep, err := c.r.completeWith(ctx, msgs, format, nil, est, topLogprobs, prefill.Options(kind, c.r.stops()))
	c.rep.add(rep)
	var ae *provider.APIError
	if err != nil && !c.r.set.Renders && errors.As(err, &ae) && ae.StatusCode == http.StatusBadRequest {
		// An OpenAI-compatible server that refuses the request (a final assistant message, or a
		// format that is not an object) does not continue answers either.
		return "", nil, fmt.Errorf("%w: %w", prefill.ErrNotContinued, err)
	}
	if err != nil {
		return "", nil, err
	}
	v, ok := prefill.Continued(rep.Text, kind)
	switch {
	case !ok && kind != prefill.Bool && rep.DoneReason == "length":
		// Cut at the configured num_predict: the answer is the model's, unfinished, as a whole
		// object cut there would be.
		return "", nil, fmt.Errorf("the answer stopped at num_predict: %q", clipText(rep.Text))
	case !ok:
		return "", nil, prefill.ErrNotContinued
	}
	return v, rep.Logprobs, nil
}

// stops are the configured stop strings.
func (r *Router) stops() []string {
	var out []string
	switch s := (*r.options.Load())["stop"].(type) {
	case []string:
		out = append(out, s...)
	case []any:
		for _, v := range s {
			if t, ok := v.(string); ok {
				out = append(out, t)
			}
		}
	case string:
		out = append(out, s)
	}
	return out
}

func clipText(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// add adds another answer's model calls and costs to r's.
func (r *reply) add(o reply) {
	r.Calls += max(o.Calls, 1)
	s := &r.Stats
	s.PromptTokens += o.Stats.PromptTokens // each call's whole prompt, mostly from the cache
	s.DecodeTokens += o.Stats.DecodeTokens
	s.TotalMS += o.Stats.TotalMS
	s.Breakdown.Add(o.Stats.Breakdown)
	r.Duration += o.Duration
	r.Estimated = max(r.Estimated, o.Estimated)
	r.Exceeded = r.Exceeded || o.Exceeded
}

// afterContinuation is whole, the answer asked for after a continuation that was not continued,
// with that continuation's calls and costs added.
func afterContinuation(partial, whole reply) reply {
	if partial.Calls == 0 {
		return whole
	}
	out := partial
	out.add(whole)
	out.Text, out.ToolCalls, out.Logprobs, out.DoneReason = whole.Text, whole.ToolCalls, whole.Logprobs, whole.DoneReason
	return out
}

// close ends the object and returns the sequence as one reply: the whole answer's text and the
// calls' costs.
func (c *continuation) close() reply {
	c.rep.Text = c.a.Close()
	return c.rep
}

// continueObject writes an object answer value by value (prefill.Object).
func (r *Router) continueObject(ctx context.Context, msgs []api.Message, est tokens.Estimate, lead string, values []prefill.Value) (reply, error) {
	c := r.newContinuation(msgs, est, lead)
	text, err := prefill.Object(ctx, &c.a, values, func(ctx context.Context, v prefill.Value) (string, error) {
		got, _, err := c.ask(ctx, v.Format, prefill.Any, 0)
		return got, err
	})
	if err != nil {
		return c.rep, err
	}
	c.rep.Text = text
	return c.rep, nil
}
