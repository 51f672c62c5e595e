package router_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"toolrouter/provider"
	"toolrouter/router"
	"toolrouter/trajectory"
)

// records keeps trajectory records in memory.
type records struct {
	mu   sync.Mutex // guards list
	list []trajectory.Record
}

func (r *records) Record(rec trajectory.Record) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, rec)
	return true
}

func (r *records) all() []trajectory.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]trajectory.Record(nil), r.list...)
}

// TestModelCallCosts: each model call's tokens and server times, as the fake model scripts them,
// reach its trace step and trajectory record, and add up in the outcome's usage; tool calls carry
// none.
func TestModelCallCosts(t *testing.T) {
	selectReply := sel("calculator.add", true)
	cached := 900
	selectReply.PromptTokens, selectReply.CachedTokens, selectReply.CompletionTokens = 1000, &cached, 12
	selectReply.LoadDuration, selectReply.PrefillDuration, selectReply.DecodeDuration, selectReply.TotalDuration =
		time.Millisecond, 40*time.Millisecond, 120*time.Millisecond, 170*time.Millisecond
	argsReply := args(`{"a": 2, "b": 40}`) // an older server: no cached count, no durations
	argsReply.PromptTokens, argsReply.CompletionTokens = 300, 9

	rec := &records{}
	e := newEnv(t, router.Settings{Recorder: rec}, selectReply, argsReply)
	out, err := e.router.Route(context.Background(), router.Request{Query: "what is 2 plus 40?"})
	if err != nil {
		t.Fatal(err)
	}

	wantSelect := provider.Breakdown{LoadMS: 1, PrefillMS: 40, DecodeMS: 120, RestMS: 9, UncachedTokens: 100}
	wantArgs := provider.Breakdown{UncachedTokens: 300}
	want := map[router.StepKind]struct {
		prompt, completion int
		b                  provider.Breakdown
	}{
		router.StepSelect:    {1000, 12, wantSelect},
		router.StepArguments: {300, 9, wantArgs},
	}
	seen := 0
	for _, s := range out.Trace {
		w, model := want[s.Kind]
		switch {
		case !model && s.Breakdown != nil:
			t.Errorf("%s step: got breakdown %+v, want none on a step that is no model call", s.Kind, *s.Breakdown)
		case !model:
		case s.Breakdown == nil || *s.Breakdown != w.b || s.PromptTokens != w.prompt || s.CompletionTokens != w.completion:
			t.Errorf("%s step: got %d/%d tokens and breakdown %v, want %d/%d and %+v", s.Kind, s.PromptTokens, s.CompletionTokens, s.Breakdown, w.prompt, w.completion, w.b)
		default:
			seen++
		}
	}
	if seen != 2 {
		t.Errorf("got %d model-call steps with their figures, want 2 (trace %+v)", seen, out.Trace)
	}

	sum := wantSelect
	sum.Add(wantArgs)
	if wantUsage := (router.Usage{LLMCalls: 2, PromptTokens: 1300, CompletionTokens: 21, Breakdown: sum}); out.Usage != wantUsage {
		t.Errorf("got usage %+v, want %+v", out.Usage, wantUsage)
	}

	var traj []trajectory.Record
	for _, r := range rec.all() {
		if r.Kind == "execute" {
			if r.Breakdown != nil {
				t.Errorf("execute record: got breakdown %+v, want none", *r.Breakdown)
			}
			continue
		}
		traj = append(traj, r)
	}
	if len(traj) != 2 || traj[0].Breakdown == nil || *traj[0].Breakdown != wantSelect || traj[0].PromptTokens != 1000 ||
		traj[1].Breakdown == nil || *traj[1].Breakdown != wantArgs || traj[1].CompletionTokens != 9 {
		t.Errorf("got model-call records %+v, want the select call's and the arguments call's figures", traj)
	}

	// On the wire: a model call's step has the fields, a tool call's has none.
	raw, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	var wire struct {
		Trace []map[string]any `json:"trace"`
		Usage map[string]any   `json:"usage"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil {
		t.Fatal(err)
	}
	for _, s := range wire.Trace {
		_, has := s["prefill_ms"]
		if model := s["kind"] == "select" || s["kind"] == "arguments"; has != model {
			t.Errorf("%v step: prefill_ms present %v, want %v", s["kind"], has, model)
		}
		if s["kind"] == "select" && (s["load_ms"] != 1.0 || s["decode_ms"] != 120.0 || s["rest_ms"] != 9.0 || s["uncached_prompt_tokens"] != 100.0) {
			t.Errorf("select step on the wire: got %v, want load_ms 1, decode_ms 120, rest_ms 9, uncached_prompt_tokens 100", s)
		}
	}
	for _, k := range []string{"llm_calls", "prompt_tokens", "completion_tokens", "load_ms", "prefill_ms", "decode_ms", "rest_ms", "uncached_prompt_tokens"} {
		if _, ok := wire.Usage[k]; !ok {
			t.Errorf("usage on the wire lacks %q: %v", k, wire.Usage)
		}
	}
}
