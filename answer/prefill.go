package answer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/types/model"

	"toolrouter/prefill"
	"toolrouter/provider"
)

// Prefill of chat completions with a response_format (see package prefill): when the format's
// schema fixes the answer's text but for its values (an object whose properties are all
// required, in order), an Ollama provider is asked for each value in turn, the answer so far
// written as the start of the model's turn, and the keys and punctuation are written here. The
// client sees the same answer: the forced text is streamed as deltas with the values, and the
// usage counts the whole answer's tokens.

// maxTemplates bounds what is remembered of models' templates: model names come from requests.
const maxTemplates = 256

// templateState is what is known of continuing answers with one model at one provider.
type templateState struct {
	prefill.Template
	// thinks says whether the model thinks when a request does not say (its capabilities list
	// thinking); nil until the provider answered. Guarded by the completer's mu.
	thinks *bool
}

// template is the state of provider p's model with think unset or off (unset: the model's default).
func (c *ProviderCompleter) template(p, model string, thinkUnset bool) *templateState {
	key := fmt.Sprintf("%s\x00%s\x00%v", p, model, thinkUnset)
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.templates[key]; ok {
		return t
	}
	if len(c.templates) >= maxTemplates {
		c.templates = map[string]*templateState{}
	}
	t := &templateState{}
	c.templates[key] = t
	return t
}

// continuedValues says whether req is answered by continuations on provider p: prefill is on,
// p speaks Ollama's protocol, the request has a format that fixes its text but for its values,
// no tools, no num_predict (max_tokens), no thinking before the answer and at most
// maxContinuedValues properties. It returns the format's values.
func (c *ProviderCompleter) continuedValues(p string, req *api.ChatRequest) ([]prefill.Value, bool) {
	if !c.o.Prefill || !c.o.Providers[p].Ollama || len(req.Tools) > 0 || len(req.Format) == 0 {
		return nil, false
	}
	if req.Think != nil && req.Think.Value != false {
		return nil, false // thinking comes before the answer: nothing to continue
	}
	if _, ok := req.Options["num_predict"]; ok {
		return nil, false // a bound on the whole answer, which each continuation would not keep
	}
	values, ok := prefill.ObjectValues(req.Format)
	if !ok || len(values) > maxContinuedValues {
		return nil, false // each value is a model call: a wide object is asked for whole
	}
	return values, true
}

// maxContinuedValues bounds the model calls a continued answer makes: a client's schema with more
// properties is answered as one whole object, as without prefill.
const maxContinuedValues = 16

// lead reports whether answers of req's model at provider p are continued now, and the lead they
// start with. With think unset, a model that thinks by default (its capabilities, asked once) is
// never continued: its answer comes after its thinking.
func (c *ProviderCompleter) lead(ctx context.Context, p string, req *api.ChatRequest) (string, bool) {
	prov := c.o.Providers[p]
	t := c.template(p, req.Model, req.Think == nil)
	if req.Think == nil {
		if prov.Show == nil {
			return "", false
		}
		c.mu.Lock()
		thinks := t.thinks
		c.mu.Unlock()
		if thinks == nil {
			show, err := prov.Show.Show(ctx, &api.ShowRequest{Model: req.Model})
			if err != nil {
				return "", false // asked again next time
			}
			th := slices.Contains(show.Capabilities, model.CapabilityThinking)
			c.mu.Lock()
			t.thinks, thinks = &th, &th
			c.mu.Unlock()
		}
		if *thinks {
			return "", false
		}
	}
	return t.Continuing(ctx, prefill.Probe{Renders: true, Timeout: c.probeTimeout(), Model: req.Model,
		Learn: func(ctx context.Context) (string, error) {
			return prefill.LearnLead(ctx, func(ctx context.Context, msgs []api.Message) (string, error) {
				r := *req
				r.Messages, r.Format, r.Tools = msgs, nil, nil
				return prefill.Render(ctx, prov.Client, r)
			})
		}})
}

// probeTimeout bounds a template's probe: it may load the model.
func (c *ProviderCompleter) probeTimeout() time.Duration {
	if c.o.ProbeTimeout > 0 {
		return c.o.ProbeTimeout
	}
	return 2 * time.Minute
}

// errStreamed is a continuation that failed after part of the answer went to the client: it
// cannot be taken back by answering with a whole object instead.
var errStreamed = errors.New("the model server stopped continuing the answer after part of it was sent")

// completeContinued answers req value by value (package prefill) and returns it as one answer:
// the whole text and the calls' times added up. Its prompt tokens are the first call's (the
// request's and the answer's first key), its decode tokens the rest of the answer, the forced text
// included: together, the whole conversation as the model's tokenizer counts it. Each value goes
// to onText with the forced text before it once the server wrote it whole, so an answer that is
// not continued (prefill.ErrNotContinued) before the first value was sent has sent nothing. A
// value cut at num_predict ends the answer there, as a whole object cut there would be.
func completeContinued(ctx context.Context, client provider.Chatter, req *api.ChatRequest, lead string, values []prefill.Value,
	o provider.CallOptions) (provider.Answer, error) {
	var (
		a          prefill.Answer
		out        = provider.Answer{Model: req.Model}
		sent       int // bytes of the answer sent to onText
		calls      int
		decoded    int
		first      provider.Stats
		last       provider.Stats
		cut        bool
		onText     = o.OnText
		bound      = o.MaxResponseBytes
		continuing = slices.Clip(req.Messages)
	)
	if bound <= 0 {
		bound = provider.DefaultMaxResponseBytes
	}
	send := func(upTo string) {
		if onText != nil && len(upTo) > sent {
			onText(upTo[sent:])
		}
		sent = len(upTo)
	}
	ask := func(ctx context.Context, v prefill.Value) (string, error) {
		r := *req
		r.Messages = append(continuing, api.Message{Role: "assistant", Content: lead + a.String()})
		r.Format = v.Format
		r.Options = maps.Clone(req.Options)
		left := bound - len(a.String())
		if left <= 0 {
			return "", provider.ErrResponseTooLarge
		}
		ans, err := provider.Call(ctx, client, &r, provider.CallOptions{MaxResponseBytes: left})
		calls++
		if calls == 1 {
			first = ans.Stats
		}
		last = ans.Stats
		decoded += ans.Stats.DecodeTokens
		out.Stats.TotalMS += ans.Stats.TotalMS
		out.Stats.Breakdown.Add(ans.Stats.Breakdown)
		out.Wall += ans.Wall
		if err != nil {
			return "", err
		}
		got, ok := prefill.Continued(ans.Text, prefill.Any)
		ok = ok && prefill.OfType(got, v.Type) // checked before any of it is sent
		switch {
		case !ok && ans.DoneReason == "length":
			cut = true
			a.Literal(ans.Text)
			return "", errCut
		case !ok && sent > 0:
			return "", fmt.Errorf("%w: %w", errStreamed, prefill.ErrNotContinued)
		case !ok:
			return "", prefill.ErrNotContinued
		}
		send(a.String() + got)
		return got, nil
	}
	text, err := prefill.Object(ctx, &a, values, ask)
	if cut {
		text, err, out.DoneReason = a.String(), nil, "length"
	}
	if err != nil {
		return out, err
	}
	send(text)
	if out.DoneReason == "" {
		out.DoneReason = "stop"
	}
	out.Text = text
	out.Stats.PromptTokens = first.PromptTokens
	// Each call's prompt is the request's and the answer so far, as the model's tokenizer counts
	// it: the answer's tokens are the last prompt's growth, the last value and the closing brace.
	out.Stats.DecodeTokens = last.PromptTokens - first.PromptTokens + last.DecodeTokens
	if !cut {
		out.Stats.DecodeTokens++
	}
	if first.PromptTokens == 0 || out.Stats.DecodeTokens < decoded {
		out.Stats.DecodeTokens = decoded // a server that does not count prompts
	}
	return out, nil
}

// errCut ends a continued answer whose value stopped at num_predict.
var errCut = errors.New("the answer stopped at num_predict")
