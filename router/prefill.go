package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/provider"
	"toolrouter/tokens"
)

// Prefill. Under a format schema the model server samples every token of the answer, even the
// ones the grammar allows no alternative to: the keys, the quotes, the commas and brackets. Each
// costs a forward pass and a grammar check over the whole vocabulary. With Settings.Prefill the
// router writes those parts itself, as the start of the assistant's turn (a final assistant
// message, which Ollama's templates leave open for the model to continue), and the model
// generates only the values it decides, each under its own schema: an answer becomes a short
// sequence of continuations, each reusing the server's prompt cache. The text the router records
// is the whole answer, exactly as the whole-object path would have it.

// errNotContinued means the model server answered a continuation with text that does not continue
// it: it ignores a final assistant message. The router then stops prefilling (stopPrefill) and
// asks for whole objects.
var errNotContinued = errors.New("the model server did not continue the answer")

// prefillRetry is how long a lead probe that failed (the server was down) waits before it is
// tried again; until then answers are whole objects.
const prefillRetry = time.Minute

// prefillMarker stands for an answer's text in the probe of a template.
const prefillMarker = "\x1etoolrouter-prefill\x1e"

type prefillState int

const (
	prefillUnknown prefillState = iota
	prefillOn
	prefillOff
)

// prefiller is what the router knows of continuing answers on its model server.
type prefiller struct {
	mu    sync.Mutex // guards the fields; held while the template is probed
	state prefillState
	// lead is what the model's template writes between the assistant's header and its answer
	// when the user's turn is last (a thinking template's empty think block with think off): a
	// continued answer starts with it, so the model sees the turn it was trained on.
	lead  string
	tried time.Time
	// probing says a probe of the template is under way.
	probing bool
}

// continuing reports whether answers are prefilled now, and the lead they start with. On a server
// that renders templates (Settings.Renders) the lead is learnt first, by one probe at a time: the
// request that starts it waits for it (no longer than its own deadline), others meanwhile answer
// with whole objects.
func (r *Router) continuing(ctx context.Context) (string, bool) {
	if !r.set.Prefill || r.set.Think {
		return "", false // thinking comes before the answer: nothing to continue
	}
	p := &r.pf
	p.mu.Lock()
	switch {
	case p.state == prefillOn:
		defer p.mu.Unlock()
		return p.lead, true
	case p.state == prefillOff, p.probing, !p.tried.IsZero() && time.Since(p.tried) < prefillRetry:
		p.mu.Unlock()
		return "", false
	case !r.set.Renders:
		defer p.mu.Unlock()
		p.state = prefillOn // detected on the first answer instead (errNotContinued)
		return "", true
	}
	p.probing, p.tried = true, time.Now()
	p.mu.Unlock()
	// The probe may load the model: it has a model call's bound, not the request's, and goes on
	// when the request stops waiting.
	probe, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.probeTimeout())
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer cancel()
		lead, err := r.learnLead(probe)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.probing = false
		switch {
		case errors.Is(err, errNotContinued):
			p.state = prefillOff
			r.log.Warn("the model's template does not continue a final assistant message; answers are whole objects",
				"model", r.set.Model, "err", err)
		case err != nil:
			r.log.Debug("could not read the model's template; answers are whole objects for now", "model", r.set.Model, "err", err)
		case p.state == prefillUnknown:
			p.state, p.lead = prefillOn, lead
		}
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return "", false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lead, p.state == prefillOn
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
	r.pf.mu.Lock()
	defer r.pf.mu.Unlock()
	if r.pf.state != prefillOff {
		r.log.Warn("the model server does not continue a final assistant message; answers are whole objects",
			"model", r.set.Model, "err", err)
	}
	r.pf.state = prefillOff
}

// learnLead reads the model's template through the server's rendering (Ollama's
// _debug_render_only): what it writes before an answer when the user's turn is last, and whether a
// final assistant message that starts with that is rendered as exactly that prompt followed by the
// message's text, left open. errNotContinued when it is not.
func (r *Router) learnLead(ctx context.Context) (string, error) {
	base := []api.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "u"}}
	open, err := r.renderPrompt(ctx, base)
	if err != nil {
		return "", err
	}
	cont, err := r.renderPrompt(ctx, append(base[:2:2], api.Message{Role: "assistant", Content: prefillMarker}))
	if err != nil {
		return "", err
	}
	n := 0
	for n < len(open) && n < len(cont) && open[n] == cont[n] {
		n++
	}
	if !strings.HasPrefix(cont[n:], prefillMarker) {
		return "", errNotContinued
	}
	lead := open[n:]
	check, err := r.renderPrompt(ctx, append(base[:2:2], api.Message{Role: "assistant", Content: lead + prefillMarker}))
	if err != nil {
		return "", err
	}
	if check != open+prefillMarker {
		return "", errNotContinued
	}
	return lead, nil
}

// render returns the prompt the server's template makes of msgs, without running the model.
func (r *Router) renderPrompt(ctx context.Context, msgs []api.Message) (string, error) {
	stream := false
	think := api.ThinkValue{Value: r.set.Think}
	// The options and keep_alive of every call, so a model the probe loads is the one they use.
	req := &api.ChatRequest{Model: r.set.Model, Messages: msgs, Stream: &stream, Think: &think, DebugRenderOnly: true,
		Options: *r.options.Load()}
	if r.set.KeepAlive != 0 {
		req.KeepAlive = &api.Duration{Duration: r.set.KeepAlive}
	}
	var out *api.DebugInfo
	err := r.chat.Chat(ctx, req, func(resp api.ChatResponse) error {
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

// valueKind is how a continuation's value ends.
type valueKind int

const (
	// anyValue ends where the grammar lets the model end its turn.
	anyValue valueKind = iota
	// boolValue is true or false: the first token decides (no two of its candidates share a first
	// character), so the call asks for one token.
	boolValue
	// listValue is an array of names without "]": the call stops at the first "]", and no end of
	// turn is sampled.
	listValue
)

// continuation builds one JSON object answer as a sequence of continued values.
type continuation struct {
	r    *Router
	msgs []api.Message // the prompt; each call adds the answer so far as a final assistant message
	est  tokens.Estimate
	lead string
	text strings.Builder // the answer so far
	rep  reply           // the calls' costs, added up, and their number (Calls)
}

func (r *Router) newContinuation(msgs []api.Message, est tokens.Estimate, lead string) *continuation {
	return &continuation{r: r, msgs: msgs[:len(msgs):len(msgs)], est: est, lead: lead}
}

// key writes the next key of the object (and the "{" or "," before it).
func (c *continuation) key(k string) {
	if c.text.Len() == 0 {
		c.text.WriteByte('{')
	} else {
		c.text.WriteByte(',')
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the key as the schema's grammar writes it
	_ = enc.Encode(k)
	c.text.Write(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	c.text.WriteByte(':')
}

// literal writes a value the model does not decide.
func (c *continuation) literal(v string) { c.text.WriteString(v) }

// value asks the model for the value at the end of the answer so far, under format, and writes it.
// topLogprobs > 0 asks for the tokens' log probabilities. The value is returned as written; an
// answer that is not a value of kind is errNotContinued.
func (c *continuation) value(ctx context.Context, format []byte, kind valueKind, topLogprobs int) (string, []api.Logprob, error) {
	last := api.Message{Role: "assistant", Content: c.lead + c.text.String()}
	msgs := append(c.msgs, last)
	var set map[string]any
	switch kind {
	case boolValue:
		set = map[string]any{"num_predict": 1}
	case listValue:
		set = map[string]any{"stop": append(c.r.stops(), "]")}
	}
	// The prompt is the request's and the answer so far.
	est := c.est.Plus(c.r.est.Messages(c.r.set.Model, []api.Message{last}))
	rep, err := c.r.completeWith(ctx, msgs, format, nil, est, topLogprobs, set)
	c.add(rep)
	var ae *provider.APIError
	if err != nil && !c.r.set.Renders && errors.As(err, &ae) && ae.StatusCode == http.StatusBadRequest {
		// An OpenAI-compatible server that refuses the request (a final assistant message, or a
		// format that is not an object) does not continue answers either.
		return "", nil, fmt.Errorf("%w: %w", errNotContinued, err)
	}
	if err != nil {
		return "", nil, err
	}
	v, ok := continued(rep.Text, kind)
	switch {
	case !ok && kind != boolValue && rep.DoneReason == "length":
		// Cut at the configured num_predict: the answer is the model's, unfinished, as a whole
		// object cut there would be.
		return "", nil, fmt.Errorf("the answer stopped at num_predict: %q", clipText(rep.Text))
	case !ok:
		return "", nil, errNotContinued
	}
	c.text.WriteString(v)
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

// add adds a call's costs to the sequence's.
func (c *continuation) add(rep reply) { c.rep.add(rep) }

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
	c.text.WriteByte('}')
	c.rep.Text = c.text.String()
	return c.rep
}

// continued is the value a continuation wrote, when text is one of kind: a boolean cut after its
// first token is completed from it, a list cut at its stop gets its "]" back.
func continued(text string, kind valueKind) (string, bool) {
	t := strings.TrimSpace(text)
	switch kind {
	case boolValue:
		for _, v := range []string{"true", "false"} {
			if t != "" && (strings.HasPrefix(v, t) || strings.HasPrefix(t, v) && strings.TrimSpace(t[len(v):]) == "") {
				return v, true
			}
		}
		return "", false
	case listValue:
		if !strings.HasPrefix(t, "[") {
			return "", false
		}
		if !json.Valid([]byte(t)) {
			t += "]"
		}
	}
	if t == "" || !json.Valid([]byte(t)) {
		return "", false
	}
	return t, true
}

// objectValue is one property of an object format that a continuation writes: its key, the
// format of its value, and the JSON type the value must have ("" when the format does not say
// one plainly).
type objectValue struct {
	key, typ string
	format   []byte
}

// objectKeys are the keys an object format may have for its text to be written by a continuation.
var objectKeys = map[string]bool{"type": true, "properties": true, "required": true, "additionalProperties": true,
	"$defs": true, "description": true, "title": true}

// objectValues splits an object format whose text is fixed but for its values (an object whose
// properties are all required, no other allowed) into its properties, in the order of the
// format's text, which is the order the grammar writes them in. A value's format carries the
// root's $defs. false for any other format: its answer is a whole object.
func objectValues(format []byte) ([]objectValue, bool) {
	root, vals, ok := orderedObject(format)
	if !ok {
		return nil, false
	}
	for _, k := range root {
		if !objectKeys[k] {
			return nil, false
		}
	}
	var typ string
	if json.Unmarshal(vals["type"], &typ) != nil || typ != "object" {
		return nil, false
	}
	if extra, ok := vals["additionalProperties"]; ok && strings.TrimSpace(string(extra)) != "false" {
		return nil, false
	}
	keys, props, ok := orderedObject(vals["properties"])
	var required []string
	if !ok || len(keys) == 0 || json.Unmarshal(vals["required"], &required) != nil || len(required) != len(keys) {
		return nil, false
	}
	defs := vals["$defs"]
	out := make([]objectValue, len(keys))
	for i, k := range keys {
		if !slices.Contains(required, k) {
			return nil, false
		}
		sub := bytes.TrimSpace(props[k])
		if len(sub) < 2 || sub[0] != '{' {
			return nil, false
		}
		var t struct {
			Type any `json:"type"`
		}
		_ = json.Unmarshal(sub, &t)
		v := objectValue{key: k, format: sub}
		v.typ, _ = t.Type.(string)
		if defs != nil {
			f := []byte(`{"$defs":`)
			f = append(f, defs...)
			if rest := bytes.TrimSpace(sub[1:]); len(rest) > 0 && rest[0] != '}' {
				f = append(f, ',')
			}
			v.format = append(f, sub[1:]...)
		}
		out[i] = v
	}
	return out, true
}

// orderedObject reads a JSON object's keys in the order of its text, and their values.
func orderedObject(raw []byte) ([]string, map[string]json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, false
	}
	var keys []string
	vals := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		k, isKey := t.(string)
		if err != nil || !isKey {
			return nil, nil, false
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return nil, nil, false
		}
		keys = append(keys, k)
		vals[k] = v
	}
	return keys, vals, true
}

// continueObject writes an object answer value by value (see objectValues). A value whose JSON
// type is not its format's is errNotContinued: a server that ignores the answer so far writes a
// whole object instead.
func (r *Router) continueObject(ctx context.Context, msgs []api.Message, est tokens.Estimate, lead string, values []objectValue) (reply, error) {
	c := r.newContinuation(msgs, est, lead)
	for _, v := range values {
		c.key(v.key)
		got, _, err := c.value(ctx, v.format, anyValue, 0)
		if err != nil {
			return c.rep, err
		}
		if !ofType(got, v.typ) {
			return c.rep, errNotContinued
		}
	}
	return c.close(), nil
}

// ofType reports whether a JSON value's text is of the JSON Schema type typ ("": any).
func ofType(v, typ string) bool {
	if typ == "" || v == "" {
		return typ == "" && v != ""
	}
	switch v[0] {
	case '{':
		return typ == "object"
	case '[':
		return typ == "array"
	case '"':
		return typ == "string"
	case 't', 'f':
		return typ == "boolean"
	case 'n':
		return typ == "null"
	}
	return typ == "number" || typ == "integer"
}
