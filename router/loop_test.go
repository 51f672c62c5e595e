package router_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/config"
	"toolrouter/internal/fakeollama"
	"toolrouter/internal/npmservers"
	"toolrouter/internal/testmcp"
	"toolrouter/router"
	"toolrouter/trajectory"
)

// callArgs is a phase-2 answer.
func callArgs(v map[string]any) fakeollama.Reply {
	b, _ := json.Marshal(v)
	return fakeollama.Reply{Content: string(b), PromptTokens: 40, CompletionTokens: 6}
}

func toolsOf(out *router.Outcome) []string {
	var names []string
	for _, c := range out.Calls {
		names = append(names, c.Server+"."+c.Tool)
	}
	return names
}

// TestSeedCases runs the five cases of seed 001 against real MCP servers: the built-in calculator
// and clock and the npm reference server-everything over stdio.
func TestSeedCases(t *testing.T) {
	dir := npmservers.Dir(t)
	extra := map[string]config.Server{
		"clock": builtinServer("clock"),
		"everything": {Transport: config.TransportStdio, Command: "node", Args: []string{npmservers.Entry(dir, "everything"), "stdio"},
			Purpose: "reference server", ConnectTimeout: config.Duration(60 * time.Second), CallTimeout: config.Duration(20 * time.Second)},
	}
	tests := []struct {
		name        string
		replies     []fakeollama.Reply
		wantTools   []string
		wantLLM     int
		wantStopped router.StopReason
		wantText    []string // in each call's result, in order
	}{
		{
			name:        "single domain: one call, one round",
			replies:     []fakeollama.Reply{choose(false, true, "calculator.multiply"), callArgs(map[string]any{"a": 6, "b": 7})},
			wantTools:   []string{"calculator.multiply"},
			wantLLM:     2,
			wantStopped: router.StopDone,
			wantText:    []string{"42"},
		},
		{
			name: "two domains: sequential, the second uses the first's result",
			replies: []fakeollama.Reply{
				choose(true, false, "clock.date_difference"), callArgs(map[string]any{"start": "2024-01-01", "end": "2024-03-01"}),
				choose(false, false, "calculator.multiply"), callArgs(map[string]any{"a": "$result_of_step_1#/days", "b": 24}),
			},
			wantTools:   []string{"clock.date_difference", "calculator.multiply"},
			wantLLM:     4,
			wantStopped: router.StopDone,
			wantText:    []string{"60", "1440"},
		},
		{
			name: "three domains: two in parallel, then a third",
			replies: []fakeollama.Reply{
				choose(true, false, "calculator.add", "everything.get-sum"),
				callArgs(map[string]any{"a": 1, "b": 2}), callArgs(map[string]any{"a": 10, "b": 20}),
				choose(false, false, "everything.echo"), callArgs(map[string]any{"message": "sums: $result_of_step_1 and $result_of_step_2"}),
			},
			wantTools:   []string{"calculator.add", "everything.get-sum", "everything.echo"},
			wantLLM:     5,
			wantStopped: router.StopDone,
			wantText:    []string{"3", "30", "sums: 3 and"},
		},
		{
			name:        "no tool: only phase 1",
			replies:     []fakeollama.Reply{choose(false, false)},
			wantLLM:     1,
			wantStopped: router.StopNoTool,
		},
		{
			name: "a model that keeps asking is capped at max_tool_calls",
			replies: []fakeollama.Reply{
				choose(true, false, "calculator.add"), callArgs(map[string]any{"a": 1, "b": 1}),
				choose(true, false, "calculator.add"), callArgs(map[string]any{"a": 2, "b": 2}),
				choose(true, false, "calculator.add", "calculator.add", "calculator.add"),
				callArgs(map[string]any{"a": 3, "b": 3}), callArgs(map[string]any{"a": 4, "b": 4}),
				choose(true, false, "calculator.add"), // never asked: the budget is spent
			},
			wantTools:   []string{"calculator.add", "calculator.add", "calculator.add", "calculator.add"},
			wantLLM:     7,
			wantStopped: router.StopMaxToolCalls,
			wantText:    []string{"2", "4", "6", "8"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			model := fakeollama.New(t, tc.replies...)
			e := newEnvWith(t, router.Settings{MaxToolCalls: 4, ParallelCalls: 1}, model, extra)
			out, err := e.router.Route(context.Background(), router.Request{Query: "q"})
			if err != nil {
				t.Fatal(err)
			}
			if got := toolsOf(out); strings.Join(got, ",") != strings.Join(tc.wantTools, ",") {
				t.Fatalf("got calls %v, want %v (trace %+v)", got, tc.wantTools, out.Trace)
			}
			if out.Usage.LLMCalls != tc.wantLLM || out.Stopped != tc.wantStopped {
				t.Errorf("got %d model calls, stopped %q; want %d, %q", out.Usage.LLMCalls, out.Stopped, tc.wantLLM, tc.wantStopped)
			}
			for i, want := range tc.wantText {
				c := out.Calls[i]
				if c.Result == nil || !strings.Contains(c.Result.Text, want) {
					t.Errorf("call %d (%s.%s): got result %+v error %+v, want text containing %q", i+1, c.Server, c.Tool, c.Result, c.Error, want)
				}
			}
			if tc.wantStopped == router.StopMaxToolCalls {
				if !hasStep(out, router.StepCapped) {
					t.Errorf("trace lacks a capped step: %+v", out.Trace)
				}
			}
		})
	}
}

func hasStep(out *router.Outcome, kind router.StepKind) bool {
	for _, s := range out.Trace {
		if s.Kind == kind {
			return true
		}
	}
	return false
}

// TestParallelCallsOverlap proves a round's calls run at the same time: each barrier call returns
// only once all three are running, so sequential execution would fail them all.
func TestParallelCallsOverlap(t *testing.T) {
	e := newEnv(t, router.Settings{ParallelCalls: 3, ExecuteTimeout: 10 * time.Second},
		choose(false, true, "faults.barrier", "faults.barrier", "faults.barrier"), callArgs(map[string]any{"parties": 3, "id": "a"}),
		callArgs(map[string]any{"parties": 3, "id": "b"}), callArgs(map[string]any{"parties": 3, "id": "c"}))
	out, err := e.router.Route(context.Background(), router.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range out.Calls {
		if c.Result == nil || c.Result.Text != "released" {
			t.Fatalf("call %d: got %+v %+v, want released", c.Step, c.Result, c.Error)
		}
	}
	iv := e.faults.Intervals()
	if len(iv) != 3 {
		t.Fatalf("got %d executions, want 3 (dedup must not merge them: %+v)", len(iv), out.Calls)
	}
	for i := range iv {
		for j := range iv {
			if i != j && !(iv[i].Start.Before(iv[j].End) && iv[j].Start.Before(iv[i].End)) {
				t.Errorf("executions %d and %d do not overlap: %v–%v and %v–%v", i, j, iv[i].Start, iv[i].End, iv[j].Start, iv[j].End)
			}
		}
	}
	// Results are reported in selection order.
	for i, c := range out.Calls {
		if c.Step != i+1 {
			t.Errorf("call %d has step %d", i, c.Step)
		}
	}
}

func TestDedup(t *testing.T) {
	// One call at a time, so the scripted arguments reach the calls in selection order.
	e := newEnv(t, router.Settings{ParallelCalls: 1},
		choose(true, false, "faults.count"), callArgs(map[string]any{"n": 3}),
		choose(false, false, "faults.count", "faults.echo"), callArgs(map[string]any{"n": 3.0}), callArgs(map[string]any{"message": "hi"}))
	out, err := e.router.Route(context.Background(), router.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Calls) != 3 || out.Calls[2-1].ReusedFrom != 1 || out.Calls[1].Result == nil || out.Calls[1].Result.Text != "n=3" {
		t.Fatalf("got calls %+v, want step 2 reusing step 1's result", out.Calls)
	}
	counts := 0
	for _, c := range e.faults.Calls() {
		if c.Tool == "count" {
			counts++
		}
	}
	if counts != 1 {
		t.Errorf("count executed %d times, want 1", counts)
	}
	if !hasStep(out, router.StepDedup) {
		t.Errorf("trace lacks a dedup step")
	}
}

func TestReferences(t *testing.T) {
	tests := []struct {
		name     string
		second   []fakeollama.Reply // phase-2 answers of the second call
		want     string             // the second call's result
		feedback string             // expected in the repair turn ("" = none)
	}{
		{"pointer into structured content", []fakeollama.Reply{callArgs(map[string]any{"a": "$result_of_step_1#/result", "b": 1})}, "43", ""},
		{"whole text value", []fakeollama.Reply{callArgs(map[string]any{"a": "$result_of_step_2", "b": 1})}, "",
			"refers to step 2, but the finished steps are 1"},
		{"missing step then repaired", []fakeollama.Reply{
			callArgs(map[string]any{"a": "$result_of_step_7", "b": 1}), callArgs(map[string]any{"a": 42, "b": 1})}, "43",
			"refers to step 7, but the finished steps are 1"},
		{"bad pointer then repaired", []fakeollama.Reply{
			callArgs(map[string]any{"a": "$result_of_step_1#/nope", "b": 1}), callArgs(map[string]any{"a": "$result_of_step_1#/result", "b": 2})}, "44",
			`no field "nope"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			replies := []fakeollama.Reply{choose(true, false, "calculator.multiply"), callArgs(map[string]any{"a": 6, "b": 7}),
				choose(false, false, "calculator.add")}
			replies = append(replies, tc.second...)
			replies = append(replies, choose(false, false)) // seen after a failure
			e := newEnv(t, router.Settings{RepairAttempts: 1}, replies...)
			out, err := e.router.Route(context.Background(), router.Request{Query: "6 times 7, plus 1"})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Calls) != 2 {
				t.Fatalf("got %d calls, want 2", len(out.Calls))
			}
			c := out.Calls[1]
			if tc.want != "" && (c.Result == nil || c.Result.Text != tc.want) {
				t.Errorf("got result %+v error %+v, want %s", c.Result, c.Error, tc.want)
			}
			if tc.want == "" && (c.Error == nil || c.Error.Code != router.CodeInvalidArguments) {
				t.Errorf("got error %+v, want invalid_arguments", c.Error)
			}
			if tc.feedback != "" {
				if len(c.Attempts) == 0 || !strings.Contains(c.Attempts[0].Feedback, tc.feedback) {
					t.Errorf("got attempts %+v, want feedback containing %q", c.Attempts, tc.feedback)
				}
			}
			// Later phase-2 prompts show earlier results and accept references in the format.
			p2 := e.model.Requests()[3]
			if !strings.Contains(p2.Messages[0].Content, "Step 1 (calculator.multiply):\n<<<data ") || !strings.Contains(p2.Messages[0].Content, ">>>\n42\n<<<end ") || !strings.Contains(string(p2.Format), "anyOf") {
				t.Errorf("second phase-2 request lacks the earlier result or the reference-friendly format")
			}
		})
	}
}

// TestReferenceIntoCutStructuredContent: a pointer into structured content that was over the
// bound is a finding that says so, and the model writes another value.
func TestReferenceIntoCutStructuredContent(t *testing.T) {
	e := newEnv(t, router.Settings{RepairAttempts: 1, MaxResultBytes: 64 << 10},
		choose(true, false, "faults.records"), callArgs(map[string]any{"bytes": 100 << 10}),
		choose(false, false, "faults.echo"), callArgs(map[string]any{"message": "$result_of_step_1#/records/0/name"}), callArgs(map[string]any{"message": "fallback"}))
	out, err := e.router.Route(context.Background(), router.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Calls) != 2 {
		t.Fatalf("got %d calls, want 2", len(out.Calls))
	}
	c := out.Calls[1]
	if len(c.Attempts) == 0 || !strings.Contains(c.Attempts[0].Feedback, "over router.max_result_bytes, and is not kept") {
		t.Errorf("got attempts %+v, want feedback saying the structured content was not kept", c.Attempts)
	}
	if c.Result == nil || c.Result.Text != "fallback" {
		t.Errorf("got result %+v error %+v, want the repaired call's", c.Result, c.Error)
	}
}

// TestReferenceToFailedStep: a reference to a step that failed is a finding for the model, which
// then writes another value.
func TestReferenceToFailedStep(t *testing.T) {
	e := newEnv(t, router.Settings{RepairAttempts: 1},
		choose(true, false, "faults.fail"), callArgs(map[string]any{}),
		choose(false, false, "faults.echo"), callArgs(map[string]any{"message": "$result_of_step_1"}), callArgs(map[string]any{"message": "fallback"}))
	out, err := e.router.Route(context.Background(), router.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	c := out.Calls[1]
	if c.Result == nil || c.Result.Text != "fallback" || len(c.Attempts) != 1 || !strings.Contains(c.Attempts[0].Feedback, "which failed") {
		t.Errorf("got %+v attempts %+v, want the reference refused with a reason, then the repaired call", c.Result, c.Attempts)
	}
}

func TestFailureFeedback(t *testing.T) {
	e := newEnv(t, router.Settings{ExecuteTimeout: 100 * time.Millisecond},
		choose(false, true, "faults.fail", "faults.hang"), callArgs(map[string]any{}), callArgs(map[string]any{}),
		choose(false, false, "faults.echo"), callArgs(map[string]any{"message": "recovered"}))
	out, err := e.router.Route(context.Background(), router.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Calls) != 3 || out.Calls[2].Result == nil || out.Calls[2].Result.Text != "recovered" {
		t.Fatalf("got calls %+v, want the loop to continue after the failures", out.Calls)
	}
	if !out.Calls[0].Result.IsError || out.Calls[1].Error == nil || out.Calls[1].Error.Code != router.CodeToolTimeout {
		t.Errorf("got %+v / %+v, want an isError result and a timeout", out.Calls[0], out.Calls[1])
	}
	follow := e.model.Requests()[3].Messages
	text := follow[len(follow)-1].Content
	for _, want := range []string{"Failed:\n<<<data ", "the tool failed on purpose", "calling faults.hang", "deadline exceeded"} {
		if !strings.Contains(text, want) {
			t.Errorf("round-2 selection lacks %q:\n%s", want, text)
		}
	}
	if out.Direct {
		t.Error("an outcome with failed calls must not be direct")
	}
}

func TestRequestDeadline(t *testing.T) {
	e := newEnv(t, router.Settings{Deadline: time.Minute},
		choose(true, false, "calculator.add"), callArgs(map[string]any{"a": 1, "b": 2}), fakeollama.Reply{Hang: true})
	start := time.Now()
	out, err := e.router.Route(context.Background(), router.Request{Query: "q", Deadline: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v with a 300ms deadline", d)
	}
	if out.Stopped != router.StopDeadline || len(out.Calls) != 1 || out.Calls[0].Result == nil {
		t.Fatalf("got stopped %q calls %+v, want the deadline with the first call kept", out.Stopped, out.Calls)
	}
	if !hasStep(out, router.StepDeadline) {
		t.Errorf("trace lacks the deadline step")
	}
}

func TestRequestLowersMaxToolCalls(t *testing.T) {
	e := newEnv(t, router.Settings{MaxToolCalls: 4},
		choose(false, false, "calculator.add", "calculator.multiply"), callArgs(map[string]any{"a": 1, "b": 2}))
	out, err := e.router.Route(context.Background(), router.Request{Query: "q", MaxToolCalls: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Calls) != 1 || out.Stopped != router.StopMaxToolCalls {
		t.Errorf("got %d calls stopped %q, want 1 and max_tool_calls", len(out.Calls), out.Stopped)
	}
	var f struct {
		Properties struct {
			Calls struct {
				MaxItems int `json:"maxItems"`
			} `json:"calls"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(e.model.Requests()[0].Format, &f)
	if f.Properties.Calls.MaxItems != 1 {
		t.Errorf("format maxItems = %d, want 1", f.Properties.Calls.MaxItems)
	}
}

// TestTrimming: a long result would push the next prompt past num_ctx minus the reserve, so it is
// cut (head and tail kept, marked) instead of Ollama silently dropping the front of the prompt.
func TestTrimming(t *testing.T) {
	e := newEnv(t, router.Settings{Options: map[string]any{"num_ctx": 2500}, ContextReserve: 300},
		choose(true, false, "faults.long"), callArgs(map[string]any{"bytes": 12000}), choose(false, false))
	out, err := e.router.Route(context.Background(), router.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Trimmed || !hasStep(out, router.StepTrim) {
		t.Fatalf("got trimmed=%v, want a trim step (trace %+v)", out.Trimmed, out.Trace)
	}
	if n := len(out.Calls[0].Result.Text); n != 12000 {
		t.Errorf("the call's own result was shortened to %d bytes; only prompts should be", n)
	}
	msgs := e.model.Requests()[2].Messages
	last := msgs[len(msgs)-1].Content
	if !strings.Contains(last, "bytes trimmed]") || !strings.Contains(last, "line 0 of a long") {
		t.Errorf("round-2 prompt lacks the marked cut or the head of the result")
	}
	var selects []router.Step
	for _, s := range out.Trace {
		if s.Kind == router.StepSelect {
			selects = append(selects, s)
		}
	}
	if len(selects) != 2 {
		t.Fatalf("got %d select steps, want 2", len(selects))
	}
	if est := selects[1].EstimatedTokens; est <= 0 || est > 2500-300 {
		t.Errorf("round-2 prompt estimated at %d tokens, want within num_ctx 2500 minus reserve 300", est)
	}
}

func TestEventsInOrder(t *testing.T) {
	e := newEnv(t, router.Settings{},
		choose(true, false, "calculator.add"), callArgs(map[string]any{"a": 1, "b": 2}), choose(false, false))
	var got []router.EventType
	_, err := e.router.Route(context.Background(), router.Request{Query: "q", OnEvent: func(ev router.Event) { got = append(got, ev.Type) }})
	if err != nil {
		t.Fatal(err)
	}
	want := []router.EventType{router.EventSelectStart, router.EventSelectComplete, router.EventToolCallStart,
		router.EventToolCallComplete, router.EventToolResult, router.EventSelectStart, router.EventSelectComplete}
	if strings.Join(types(got), ",") != strings.Join(types(want), ",") {
		t.Errorf("got events %v, want %v", got, want)
	}
}

func types(ts []router.EventType) []string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return s
}

func TestTrajectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "traj.jsonl")
	w, err := trajectory.Open(trajectory.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, router.Settings{Recorder: w, RepairAttempts: 1},
		choose(false, true, "faults.count"), callArgs(map[string]any{"n": "x"}), callArgs(map[string]any{"n": 2}))
	out, err := e.router.Route(context.Background(), router.Request{Query: "count to two"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	var kinds []string
	var recs []trajectory.Record
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r trajectory.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("bad record %q: %v", line, err)
		}
		if r.RequestID != out.RequestID {
			t.Errorf("record of request %q, want %q", r.RequestID, out.RequestID)
		}
		kinds = append(kinds, r.Kind)
		recs = append(recs, r)
	}
	if strings.Join(kinds, ",") != "select,arguments,arguments,execute" {
		t.Fatalf("got records %v, want select, two argument attempts, execute", kinds)
	}
	if v := recs[1].Outcome.SchemaValid; v == nil || *v || !strings.Contains(string(recs[1].Observation), "at /n") {
		t.Errorf("first attempt: got valid=%v observation %s, want invalid with the validator's message", v, recs[1].Observation)
	}
	if v := recs[3].Outcome.ToolSucceeded; v == nil || !*v || len(recs[0].State) == 0 || recs[0].State[0].Role != "system" {
		t.Errorf("execute record or select state wrong: %+v / %+v", recs[3].Outcome, recs[0].State)
	}
	if st := w.Stats(); st.Written != 4 || st.Dropped != 0 {
		t.Errorf("got stats %+v, want 4 written, 0 dropped", st)
	}
}

func TestNativeMode(t *testing.T) {
	args := api.NewToolCallFunctionArguments()
	args.Set("a", 6)
	args.Set("b", 7)
	bad := api.NewToolCallFunctionArguments()
	bad.Set("n", "many")
	e := newEnv(t, router.Settings{Mode: router.Native},
		fakeollama.Reply{ToolCalls: []api.ToolCall{
			{Function: api.ToolCallFunction{Name: "calculator__multiply", Arguments: args}},
			{Function: api.ToolCallFunction{Name: "faults__count", Arguments: bad}},
			{Function: api.ToolCallFunction{Name: "weather__now"}},
		}},
		fakeollama.Reply{Content: "6 times 7 is 42."})
	out, err := e.router.Route(context.Background(), router.Request{Query: "what is 6 times 7?"})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Calls) != 3 || out.Calls[0].Result == nil || out.Calls[0].Result.Text != "42" {
		t.Fatalf("got calls %+v, want multiply=42 first", out.Calls)
	}
	if out.Calls[1].Error == nil || out.Calls[1].Error.Code != router.CodeInvalidArguments || out.Calls[2].Error.Code != router.CodeUnknownTool {
		t.Errorf("got %+v / %+v, want invalid_arguments and unknown_tool", out.Calls[1].Error, out.Calls[2].Error)
	}
	if out.Stopped != router.StopDone || out.Usage.LLMCalls != 2 {
		t.Errorf("got stopped %q after %d calls, want done after 2", out.Stopped, out.Usage.LLMCalls)
	}
	reqs := e.model.Requests()
	if len(reqs[0].Tools) == 0 || reqs[0].Format != nil {
		t.Errorf("native request: %d tools, format %s; want tools and no format", len(reqs[0].Tools), reqs[0].Format)
	}
	var toolMsgs []api.Message
	for _, m := range reqs[1].Messages {
		if m.Role == "tool" {
			toolMsgs = append(toolMsgs, m)
		}
	}
	if len(toolMsgs) != 3 || !strings.HasSuffix(strings.Split(toolMsgs[0].Content, "\n")[1], "42") || !strings.Contains(toolMsgs[1].Content, "Error: ") {
		t.Errorf("got tool messages %+v, want the result and the errors fed back", toolMsgs)
	}
}

// TestHugeStructuredResultIsCut: a real tool answering megabytes of structured content gives a
// result whose structured content is dropped, with its length and the cut said, and its text
// kept, whatever the bound; under the bound the structured content is kept whole.
func TestHugeStructuredResultIsCut(t *testing.T) {
	for _, tc := range []struct {
		name        string
		limit       int // router.max_result_bytes; 0 is the default
		bytes       int
		wantDropped bool
	}{
		{"over the default", 0, 4 << 20, true},
		{"over a set bound", 64 << 10, 100 << 10, true},
		{"under a set bound", 64 << 10, 30 << 10, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, router.Settings{MaxResultBytes: tc.limit}, choose(false, true, "faults.records"), callArgs(map[string]any{"bytes": tc.bytes}))
			out, err := e.router.Route(context.Background(), router.Request{Query: "q"})
			if err != nil {
				t.Fatal(err)
			}
			r := out.Calls[0].Result
			if r == nil {
				t.Fatalf("got no result (error %+v), want one", out.Calls[0].Error)
			}
			whole, _ := json.Marshal(map[string]any{"records": testmcp.Records(tc.bytes)})
			if !tc.wantDropped {
				if r.Truncated || r.Structured == nil || r.StructuredBytes != 0 {
					t.Fatalf("got truncated %v, structured_bytes %d, structured kept %v; want the structured content whole", r.Truncated, r.StructuredBytes, r.Structured != nil)
				}
				return
			}
			if !r.Truncated || r.Structured != nil || r.StructuredBytes != len(whole) {
				t.Fatalf("got truncated %v, structured_bytes %d (want %d), structured kept %v; want it dropped and the cut said",
					r.Truncated, r.StructuredBytes, len(whole), r.Structured != nil)
			}
			if !strings.HasSuffix(r.Text, " records") {
				t.Errorf("got text %.80q, want the tool's own text", r.Text)
			}
			js, err := json.Marshal(out)
			if err != nil || len(js) > 64<<10 {
				t.Errorf("got an outcome of %d bytes (%v), want a small one", len(js), err)
			}
		})
	}
}

// TestHugeResultIsShortened: a tool answering more than router.max_result_bytes keeps its head and tail and
// says how long it was.
func TestHugeResultIsShortened(t *testing.T) {
	e := newEnv(t, router.Settings{}, choose(false, true, "faults.long"), callArgs(map[string]any{"bytes": router.DefaultMaxResultBytes + 5000}))
	out, err := e.router.Route(context.Background(), router.Request{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	r := out.Calls[0].Result
	if r == nil || r.TextBytes != router.DefaultMaxResultBytes+5000 || len(r.Text) > router.DefaultMaxResultBytes+64 ||
		!strings.HasPrefix(r.Text, "line 0 of a long") || !strings.Contains(r.Text, "bytes trimmed]") {
		t.Fatalf("got text of %d bytes (text_bytes %d), want it shortened to about %d with the cut marked", len(r.Text), r.TextBytes, router.DefaultMaxResultBytes)
	}
}
