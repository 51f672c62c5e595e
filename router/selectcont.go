package router

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ollama/ollama/api"

	"toolrouter/prefill"
	"toolrouter/tokens"
)

// The formats of a continued selection's values besides the list of calls.
var (
	boolFormat = []byte(`{"type":"boolean"}`)
	// mayFormat and mustFormat are the search words' (searchFormat).
	mayFormat  = []byte(fmt.Sprintf(`{"type":"string","maxLength":%d}`, maxSearch))
	mustFormat = []byte(fmt.Sprintf(`{"type":"string","minLength":1,"maxLength":%d}`, maxSearch))
)

// searchFormat is the schema of the search words under rule s (not searchNone): words or none,
// or words.
func searchFormat(s searchRule) []byte {
	if s == searchMust {
		return mustFormat
	}
	return mayFormat
}

// selectContinued makes phase 1's selection as a continuation (see package prefill): the router writes
// the keys and punctuation of the selection object, and the model decides, each in its own call
// reusing the prompt cache, the reasoning (when configured), use_tool, the list of calls, and,
// only when it listed calls, needs_more and direct; when it lists none and may search, the words
// of its search ("" for none). Values that no longer decide anything are written by the router: no
// calls, needs_more and direct false. The reply is the whole selection object, as the
// whole-object format would have it, with the calls' costs added up; the confidence is read from
// the use_tool and list values' logprobs. prefill.ErrNotContinued when the server does not continue.
func (tp *twoPhase) selectContinued(ctx context.Context, msgs []api.Message, est tokens.Estimate, lead string,
	remaining int, search searchRule) (reply, *Confidence, error) {
	c := tp.r.newContinuation(msgs, est, lead)
	reasoning := tp.r.set.Reasoning
	if reasoning != ReasoningNone {
		limit := maxBriefReasoning
		if reasoning == ReasoningFull {
			limit = maxFullReasoning
		}
		c.a.Key("reasoning")
		if _, _, err := c.value(ctx, []byte(fmt.Sprintf(`{"type":"string","maxLength":%d}`, limit)), prefill.Any, 0); err != nil {
			return c.rep, nil, err
		}
	}
	c.a.Key("use_tool")
	var conf Confidence
	use := "true"
	if tp.least > 0 {
		c.a.Literal(use) // a call is required: nothing to decide
	} else {
		var useLps []api.Logprob
		var err error
		if use, useLps, err = c.value(ctx, boolFormat, prefill.Bool, topLogprobs); err != nil {
			return c.rep, nil, err
		}
		if p, ok := valueConfidence(useLps, use, []string{"true", "false"}); ok {
			conf.UseTool = &p
		}
	}
	c.a.Key("calls")
	if use != "true" {
		c.a.Literal("[]")
		c.a.Key("needs_more")
		c.a.Literal("false")
		c.a.Key("direct")
		c.a.Literal("false")
		if search != searchNone {
			c.a.Key("search")
			if _, _, err := c.value(ctx, searchFormat(search), prefill.Any, 0); err != nil {
				return c.rep, nil, err
			}
		}
		return c.close(), conf.orNil(), nil
	}
	kind := prefill.List
	if reasoning == ReasoningFull || slices.ContainsFunc(tp.view.names, func(n string) bool { return strings.Contains(n, "]") }) {
		kind = prefill.Any // a task or a name may hold "]"
	}
	list, listLps, err := c.value(ctx, tp.callsFormat(remaining), kind, topLogprobs)
	if err != nil {
		return c.rep, nil, err
	}
	conf.Tool = listConfidence(listLps, list, tp.view.names)
	for _, k := range []string{"needs_more", "direct"} {
		c.a.Key(k)
		if _, _, err := c.value(ctx, boolFormat, prefill.Bool, 0); err != nil {
			return c.rep, nil, err
		}
	}
	return c.close(), conf.orNil(), nil
}

// callsFormat is the schema of a continued selection's list of calls: at least one (use_tool is
// true), at most remaining. A whole-inventory view shares it across requests.
func (tp *twoPhase) callsFormat(remaining int) []byte {
	build := func() []byte {
		var b strings.Builder
		callsFormat(&b, tp.view.enum, 1, remaining, tp.r.set.Reasoning)
		return []byte(b.String())
	}
	if tp.view.own() {
		return build()
	}
	return tp.r.views.format(tp.ps.version, tp.view, formatKey{remaining: remaining, calls: true}, build)
}
