package router_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/internal/fakeollama"
	"toolrouter/internal/fakeopenai"
	"toolrouter/provider"
	"toolrouter/router"
)

// continued is one continuation request: the answer so far it continues and its format.
type continued struct{ prefix, format string }

// continuations are the requests that continue an answer (a final assistant message), with lead
// taken off.
func continuations(t *testing.T, reqs []api.ChatRequest, lead string) []continued {
	t.Helper()
	var out []continued
	for _, r := range reqs {
		last := r.Messages[len(r.Messages)-1]
		if last.Role != "assistant" {
			continue
		}
		if !strings.HasPrefix(last.Content, lead) {
			t.Errorf("continuation %q does not start with the template's lead %q", last.Content, lead)
		}
		out = append(out, continued{strings.TrimPrefix(last.Content, lead), string(r.Format)})
	}
	return out
}

func TestPrefillSelection(t *testing.T) {
	const think = "<think>\n\n</think>\n\n"
	// A one-tool route: each decision of phase 1, then each argument.
	oneTool := []continued{
		{`{"use_tool":`, `{"type":"boolean"}`},
		{`{"use_tool":true,"calls":`, ""},
		{`{"use_tool":true,"calls":["calculator.add"],"needs_more":`, `{"type":"boolean"}`},
		{`{"use_tool":true,"calls":["calculator.add"],"needs_more":false,"direct":`, `{"type":"boolean"}`},
		{`{"a":`, `{"description":"The first addend.","type":"number"}`},
		{`{"a":2,"b":`, `{"description":"The second addend.","type":"number"}`},
	}
	tests := []struct {
		name    string
		reply   fakeollama.Reply
		lead    string
		search  bool
		want    []continued
		wantUse bool
	}{
		{"one tool: the model writes use_tool, the list, needs_more and direct, then each argument", sel("calculator.add", true), "",
			false, oneTool, true},
		{"a thinking template: each continuation starts with its empty think block", sel("calculator.add", true), think,
			false, oneTool, true},
		{"no tool: one decision, the rest written by the router", sel("none", false), "",
			false, []continued{{`{"use_tool":`, `{"type":"boolean"}`}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			model := fakeollama.New(t, fakeollama.Reply{Content: `{"use_tool":` + map[bool]string{true: "true", false: "false"}[tc.wantUse] +
				`,"calls":` + callsOf(t, tc.reply) + `,"needs_more":false,"direct":` + map[bool]string{true: "true", false: "false"}[tc.wantUse] + `}`,
				PromptTokens: 100, CompletionTokens: 9}, args(`{"a": 2, "b": 40}`))
			model.Lead = tc.lead
			e := newEnvWith(t, router.Settings{Prefill: true, Renders: true}, model)
			out, err := e.router.Route(context.Background(), router.Request{Query: "what is 2 plus 40?"})
			if err != nil {
				t.Fatal(err)
			}
			got := continuations(t, e.model.Requests(), tc.lead)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d continuations %+v, want %d", len(got), got, len(tc.want))
			}
			for i, w := range tc.want {
				if got[i].prefix != w.prefix {
					t.Errorf("continuation %d continues %q, want %q", i, got[i].prefix, w.prefix)
				}
				if w.format != "" && got[i].format != w.format {
					t.Errorf("continuation %d format %s, want %s", i, got[i].format, w.format)
				}
			}
			if tc.wantUse {
				// The list's schema: at least one call, every name of the inventory.
				var list struct {
					MinItems int `json:"minItems"`
					Items    struct {
						Enum []string `json:"enum"`
					} `json:"items"`
				}
				if err := json.Unmarshal([]byte(got[1].format), &list); err != nil || list.MinItems != 1 || !contains(list.Items.Enum, "calculator.add") {
					t.Errorf("list format %s: want minItems 1 and the tools' names (%v)", got[1].format, err)
				}
				if out.Result == nil || out.Result.Text != "42" || !out.Direct {
					t.Errorf("got result %+v direct %v, want 42, direct", out.Result, out.Direct)
				}
			} else if out.UseTool || out.Stopped != router.StopNoTool {
				t.Errorf("got use_tool %v stopped %s, want no tool", out.UseTool, out.Stopped)
			}
			var step *router.Step
			for i := range out.Trace {
				if out.Trace[i].Kind == router.StepSelect {
					step = &out.Trace[i]
				}
			}
			selects := 0
			for _, w := range tc.want {
				if strings.HasPrefix(w.prefix, `{"use_tool":`) {
					selects++
				}
			}
			wantCalls := selects
			if selects == 1 {
				wantCalls = 0 // one call: no model_calls
			}
			if step == nil || step.ModelCalls != wantCalls {
				t.Errorf("select step %+v: want model_calls %d", step, wantCalls)
			}
			if out.Usage.LLMCalls != len(tc.want) {
				t.Errorf("usage counts %d model calls, want %d", out.Usage.LLMCalls, len(tc.want))
			}
		})
	}
}

// callsOf is the calls list of a scripted selection, as names.
func callsOf(t *testing.T, r fakeollama.Reply) string {
	t.Helper()
	var s struct {
		Calls []struct {
			Tool string `json:"tool"`
		} `json:"calls"`
	}
	if err := json.Unmarshal([]byte(r.Content), &s); err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, c := range s.Calls {
		names = append(names, c.Tool)
	}
	b, _ := json.Marshal(names)
	return string(b)
}

// TestPrefillSameDecision: the same scripted decisions give the same outcome with and without
// prefill, confidence included.
// With one call left in the budget too.
func TestPrefillSameDecision(t *testing.T) {
	for _, budget := range []int{0, 1} {
		outcome := func(prefill bool) *router.Outcome {
			e := newEnv(t, router.Settings{Prefill: prefill, Renders: true},
				fakeollama.Scored("calculator.add", "faults", 0.7, 0.9, 100), args(`{"a": 2, "b": 40}`))
			out, err := e.router.Route(context.Background(), router.Request{Query: "what is 2 plus 40?", MaxToolCalls: budget})
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		whole, cont := outcome(false), outcome(true)
		if whole.Tool != cont.Tool || whole.Direct != cont.Direct || whole.Result == nil || cont.Result == nil || whole.Result.Text != cont.Result.Text ||
			whole.Stopped != cont.Stopped {
			t.Errorf("budget %d: prefill changed the outcome: %s %v %+v %s, whole %s %v %+v %s", budget, cont.Tool, cont.Direct, cont.Result, cont.Stopped,
				whole.Tool, whole.Direct, whole.Result, whole.Stopped)
		}
		for _, o := range []*router.Outcome{whole, cont} {
			c := o.Confidence
			if c == nil || c.Tool == nil || c.UseTool == nil || math.Abs(*c.Tool-0.7) > 1e-9 || math.Abs(*c.UseTool-0.9) > 1e-9 {
				t.Errorf("budget %d: got confidence %+v, want tool 0.7, use_tool 0.9", budget, c)
			}
		}
	}
}

// TestPrefillServerThatDoesNotContinue: a server whose template closes a final assistant message
// is found out by the probe (no continuation is sent); one that renders nothing (an
// OpenAI-compatible server) and answers a continuation with a whole object is found out by its
// answer, and the route goes on with whole objects, then and after.
func TestPrefillServerThatDoesNotContinue(t *testing.T) {
	whole := `{"use_tool":true,"calls":["calculator.add"],"needs_more":false,"direct":true}`
	for _, renders := range []bool{true, false} {
		name := map[bool]string{true: "probed", false: "answered"}[renders]
		t.Run(name, func(t *testing.T) {
			replies := []fakeollama.Reply{{Content: whole}, args(`{"a": 2, "b": 40}`), {Content: whole}, args(`{"a": 2, "b": 40}`)}
			if !renders {
				// The continuation is answered with the whole object, then the router asks again.
				replies = append([]fakeollama.Reply{{Content: whole}}, replies...)
			}
			model := fakeollama.New(t, replies...)
			model.NoContinue = true
			e := newEnvWith(t, router.Settings{Prefill: true, Renders: renders}, model)
			calls := 0
			for i := range 2 {
				out, err := e.router.Route(context.Background(), router.Request{Query: "what is 2 plus 40?"})
				if err != nil {
					t.Fatal(err)
				}
				if out.Result == nil || out.Result.Text != "42" || out.Degraded != "" {
					t.Fatalf("route %d: got result %+v degraded %q, want 42", i, out.Result, out.Degraded)
				}
				calls += out.Usage.LLMCalls
			}
			if n := len(e.model.Requests()); calls != n {
				t.Errorf("usage counts %d model calls, the server answered %d: the continuation's must count", calls, n)
			}
			n := len(continuations(t, e.model.Requests(), ""))
			if want := map[bool]int{true: 0, false: 1}[renders]; n != want {
				t.Errorf("got %d continuations, want %d", n, want)
			}
		})
	}
}

// TestNamedTool: a request that names its tool skips phase 1; phase 2 writes its arguments
// (continued, with prefill) and the route ends with the call. An unknown name is ErrUnknownTool.
func TestNamedTool(t *testing.T) {
	for _, prefill := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "prefill"}[prefill], func(t *testing.T) {
			e := newEnv(t, router.Settings{Prefill: prefill, Renders: true}, args(`{"a": 2, "b": 40}`))
			out, err := e.router.Route(context.Background(), router.Request{Query: "what is 2 plus 40?", Tool: "calculator.add"})
			if err != nil {
				t.Fatal(err)
			}
			if out.Result == nil || out.Result.Text != "42" || out.Stopped != router.StopDone || out.Rounds != 1 {
				t.Fatalf("got result %+v stopped %s rounds %d, want 42, done in one round", out.Result, out.Stopped, out.Rounds)
			}
			for _, s := range out.Trace {
				if s.Kind == router.StepSelect {
					t.Errorf("got a select step %+v, want phase 1 skipped", s)
				}
			}
			for _, r := range e.model.Requests() {
				if strings.Contains(string(r.Format), "use_tool") || strings.HasPrefix(r.Messages[len(r.Messages)-1].Content, `{"use_tool"`) {
					t.Errorf("got a phase-1 request (format %s), want none", r.Format)
				}
			}
			_, err = e.router.Route(context.Background(), router.Request{Query: "x", Tool: "calculator.nope"})
			if !errors.Is(err, router.ErrUnknownTool) {
				t.Errorf("naming an unknown tool: got %v, want ErrUnknownTool", err)
			}
		})
	}
	t.Run("native mode refuses it", func(t *testing.T) {
		e := newEnv(t, router.Settings{Mode: router.Native})
		_, err := e.router.Route(context.Background(), router.Request{Query: "what is 2 plus 40?", Tool: "calculator.add"})
		if !errors.Is(err, router.ErrNamedNative) || len(e.model.Requests()) != 0 {
			t.Errorf("got %v after %d model calls, want ErrNamedNative before any", err, len(e.model.Requests()))
		}
	})
}

// TestPrefillRefusedByOpenAIServer: an OpenAI-compatible server that refuses a continuation (400:
// a root schema that is not an object, say) is taken as one that does not continue: the route
// goes on with a whole object, and so does the next.
func TestPrefillRefusedByOpenAIServer(t *testing.T) {
	whole := `{"use_tool":true,"calls":["calculator.add"],"needs_more":false,"direct":true}`
	fake := fakeopenai.New(t,
		fakeopenai.Reply{Status: http.StatusBadRequest, Error: "the schema's root must be an object", ErrorType: "invalid_request_error"},
		fakeopenai.Reply{Content: whole}, fakeopenai.Reply{Content: `{"a": 2, "b": 40}`},
		fakeopenai.Reply{Content: whole}, fakeopenai.Reply{Content: `{"a": 2, "b": 40}`})
	e := newEnvWith(t, router.Settings{Prefill: true}, fakeollama.New(t))
	rt := router.New(provider.NewOpenAI(fake.BaseURL(), "", nil), e.inv, e.inv, router.Settings{Model: "gpt", Prefill: true,
		CallTimeout: 10 * time.Second}, quiet)
	for i := range 2 {
		out, err := rt.Route(context.Background(), router.Request{Query: "what is 2 plus 40?"})
		if err != nil {
			t.Fatal(err)
		}
		if out.Result == nil || out.Result.Text != "42" || out.Degraded != "" {
			t.Fatalf("route %d: got result %+v degraded %q, want 42", i, out.Result, out.Degraded)
		}
	}
	if n := len(fake.Requests()); n != 5 {
		t.Errorf("got %d requests, want 5: the refused continuation, then whole objects", n)
	}
}

// TestPrefillReasoning: with router.reasoning "brief" the reasoning is the first value continued,
// under its bound, and the rest follows it.
func TestPrefillReasoning(t *testing.T) {
	model := fakeollama.New(t,
		fakeollama.Reply{Content: `{"reasoning":"adds","use_tool":true,"calls":["calculator.add"],"needs_more":false,"direct":true}`},
		args(`{"a": 2, "b": 40}`))
	e := newEnvWith(t, router.Settings{Prefill: true, Renders: true, Reasoning: router.ReasoningBrief}, model)
	out, err := e.router.Route(context.Background(), router.Request{Query: "what is 2 plus 40?"})
	if err != nil {
		t.Fatal(err)
	}
	want := []continued{
		{`{"reasoning":`, `{"type":"string","maxLength":160}`},
		{`{"reasoning":"adds","use_tool":`, `{"type":"boolean"}`},
		{`{"reasoning":"adds","use_tool":true,"calls":`, ""},
	}
	got := continuations(t, e.model.Requests(), "")
	if len(got) < len(want) {
		t.Fatalf("got continuations %+v, want them to start with %+v", got, want)
	}
	for i, w := range want {
		if got[i].prefix != w.prefix || w.format != "" && got[i].format != w.format {
			t.Errorf("continuation %d: got %+v, want %+v", i, got[i], w)
		}
	}
	if out.Reasoning != "adds" || out.Result == nil || out.Result.Text != "42" {
		t.Errorf("got reasoning %q result %+v, want adds and 42", out.Reasoning, out.Result)
	}
}
