package router_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"toolrouter/internal/fakeollama"
	"toolrouter/inventory"
	"toolrouter/router"
	"toolrouter/schema"
)

// clientTools are a caller's functions: weather (a city, required) and time (a zone).
func clientTools(t *testing.T) []*inventory.Tool {
	t.Helper()
	var out []*inventory.Tool
	for _, f := range []struct{ name, params string }{
		{"get_weather", `{"type":"object","properties":{"city":{"type":"string","minLength":2}},"required":["city"],"additionalProperties":false}`},
		{"get_time", `{"type":"object","properties":{"zone":{"type":"string"}},"required":["zone"]}`},
	} {
		tool, err := inventory.ClientTool(f.name, "the "+f.name, json.RawMessage(f.params), schema.Bounds{MaxBytes: 1 << 16, MaxDepth: 32})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tool)
	}
	return out
}

func TestClientToolRefusesSchemaThatDoesNotCompile(t *testing.T) {
	for name, params := range map[string]string{
		"bad type": `{"type":"object","properties":{"a":{"type":"strin"}}}`,
		"remote":   `{"$ref":"https://example.com/s.json"}`,
		"too deep": strings.Repeat(`{"type":"array","items":`, 40) + `{}` + strings.Repeat(`}`, 40),
		"not json": `{"type":`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := inventory.ClientTool("f", "", json.RawMessage(params), schema.Bounds{MaxBytes: 1 << 16, MaxDepth: 32}); err == nil {
				t.Fatalf("got a tool, want an error for %s", params)
			}
		})
	}
}

// isSelection tells a phase-1 request (its format has use_tool) from a phase-2 one.
func isSelection(req api.ChatRequest) bool { return strings.Contains(string(req.Format), `"use_tool"`) }

func TestPlanOverClientTools(t *testing.T) {
	cases := []struct {
		name   string
		choice router.ToolChoice
		max    int
		rounds [][]router.ClientCall
		// answers: the selection (when phase 1 runs) and each phase-2 answer in order.
		selection string
		arguments []string
		wantCalls []string
		wantArgs  []string
		// wantEnum is phase 1's enum (nil: phase 1 must not run).
		wantEnum     []string
		wantMin      bool
		wantMax      int
		wantAttempts int
		wantStopped  router.StopReason
		wantInPrompt string
	}{
		{name: "auto chooses one", selection: `{"use_tool":true,"calls":["get_weather"],"needs_more":false,"direct":false}`,
			arguments: []string{`{"city":"Paris"}`}, wantCalls: []string{"get_weather"}, wantArgs: []string{`{"city":"Paris"}`},
			wantEnum: []string{"get_weather", "get_time", "none"}, wantMax: 4, wantStopped: router.StopDone},
		{name: "auto chooses none", selection: `{"use_tool":false,"calls":[],"needs_more":false,"direct":false}`,
			wantEnum: []string{"get_weather", "get_time", "none"}, wantMax: 4, wantStopped: router.StopNoTool},
		{name: "required leaves no tool out", choice: router.ToolChoice{Required: true},
			selection: `{"use_tool":true,"calls":["get_time"],"needs_more":false,"direct":false}`,
			arguments: []string{`{"zone":"UTC"}`}, wantCalls: []string{"get_time"}, wantArgs: []string{`{"zone":"UTC"}`},
			wantEnum: []string{"get_weather", "get_time"}, wantMin: true, wantMax: 4, wantStopped: router.StopDone},
		{name: "named skips phase 1", choice: router.ToolChoice{Name: "get_time"},
			arguments: []string{`{"zone":"CET"}`}, wantCalls: []string{"get_time"}, wantArgs: []string{`{"zone":"CET"}`}, wantStopped: router.StopDone},
		{name: "parallel calls", selection: `{"use_tool":true,"calls":["get_weather","get_weather"],"needs_more":false,"direct":false}`,
			arguments: []string{`{"city":"Oslo"}`, `{"city":"Oslo"}`}, wantCalls: []string{"get_weather", "get_weather"},
			wantArgs: []string{`{"city":"Oslo"}`, `{"city":"Oslo"}`}, wantEnum: []string{"get_weather", "get_time", "none"}, wantMax: 4, wantStopped: router.StopDone},
		{name: "one call when parallel calls are off", max: 1,
			selection: `{"use_tool":true,"calls":["get_weather","get_time"],"needs_more":false,"direct":false}`,
			arguments: []string{`{"city":"Rome"}`}, wantCalls: []string{"get_weather"}, wantArgs: []string{`{"city":"Rome"}`},
			wantEnum: []string{"get_weather", "get_time", "none"}, wantMax: 1, wantStopped: router.StopDone},
		{name: "invalid arguments repaired", selection: `{"use_tool":true,"calls":["get_weather"],"needs_more":false,"direct":false}`,
			arguments: []string{`{"city":"P","extra":1}`, `{"city":"Paris"}`}, wantCalls: []string{"get_weather"}, wantArgs: []string{`{"city":"Paris"}`},
			wantEnum: []string{"get_weather", "get_time", "none"}, wantMax: 4, wantAttempts: 1, wantStopped: router.StopDone},
		{name: "results read before choosing again",
			rounds:    [][]router.ClientCall{{{Name: "get_weather", Arguments: map[string]any{"city": "Paris"}, Result: "sunny, 21C"}}},
			selection: `{"use_tool":false,"calls":[],"needs_more":false,"direct":false}`,
			wantEnum:  []string{"get_weather", "get_time", "none"}, wantMax: 4, wantStopped: router.StopNoTool, wantInPrompt: "sunny, 21C"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var replies []fakeollama.Reply
			if tc.selection != "" {
				replies = append(replies, fakeollama.Reply{Content: tc.selection})
			}
			for _, a := range tc.arguments {
				replies = append(replies, fakeollama.Reply{Content: a})
			}
			model := fakeollama.New(t, replies...)
			// The router's own model is another server: Plan must use the one the request names.
			own := fakeollama.New(t)
			r := router.New(own.Client(), nil, nil, router.Settings{Model: "router-model", ParallelCalls: 1, RepairAttempts: 2}, quiet)
			out, err := r.Plan(context.Background(), router.ClientRequest{Chat: model.Client(), Model: "asked", Key: "asked",
				Tools: clientTools(t), Query: "weather in Paris?", Choice: tc.choice, MaxCalls: tc.max, Rounds: tc.rounds})
			if err != nil {
				t.Fatal(err)
			}
			if len(own.Requests()) != 0 {
				t.Fatalf("the router's own model got %d requests, want 0", len(own.Requests()))
			}
			reqs := model.Requests()
			if got, want := len(reqs), len(replies); got != want {
				t.Fatalf("got %d model calls, want %d", got, want)
			}
			for _, req := range reqs {
				if req.Model != "asked" {
					t.Fatalf("got model %q, want the request's %q", req.Model, "asked")
				}
			}
			if tc.wantEnum == nil {
				if len(reqs) > 0 && isSelection(reqs[0]) {
					t.Fatal("phase 1 ran for a named function")
				}
			} else {
				f := string(reqs[0].Format)
				enum, err := selectionEnum(reqs[0].Format)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Join(enum, ",") != strings.Join(tc.wantEnum, ",") {
					t.Fatalf("got enum %v, want %v", enum, tc.wantEnum)
				}
				if got := strings.Contains(f, `"minItems":1`) && strings.Contains(f, `"enum":[true]`); got != tc.wantMin {
					t.Fatalf("format requires a call: got %v, want %v (%s)", got, tc.wantMin, f)
				}
				if !strings.Contains(f, `"maxItems":`+itoa(tc.wantMax)) {
					t.Fatalf("format %s, want maxItems %d", f, tc.wantMax)
				}
				if tc.wantInPrompt != "" && !strings.Contains(joined(reqs[0].Messages), tc.wantInPrompt) {
					t.Fatalf("phase 1 was not shown %q", tc.wantInPrompt)
				}
			}
			if out.Stopped != tc.wantStopped {
				t.Fatalf("got stopped %q, want %q", out.Stopped, tc.wantStopped)
			}
			if len(out.Calls) != len(tc.wantCalls) {
				t.Fatalf("got %d calls, want %d: %+v", len(out.Calls), len(tc.wantCalls), out.Calls)
			}
			for i, c := range out.Calls {
				args, _ := json.Marshal(c.Arguments)
				if c.Tool != tc.wantCalls[i] || c.Server != "" || string(args) != tc.wantArgs[i] || c.Result != nil || c.Error != nil {
					t.Fatalf("call %d: got %s %s (result %v, error %v), want %s %s", i, c.Tool, args, c.Result, c.Error, tc.wantCalls[i], tc.wantArgs[i])
				}
				if len(c.Attempts) != tc.wantAttempts {
					t.Fatalf("got %d repairs, want %d", len(c.Attempts), tc.wantAttempts)
				}
			}
		})
	}
}

func TestPlanUnknownNamedFunction(t *testing.T) {
	model := fakeollama.New(t)
	r := router.New(model.Client(), nil, nil, router.Settings{Model: "m"}, quiet)
	_, err := r.Plan(context.Background(), router.ClientRequest{Tools: clientTools(t), Query: "q", Choice: router.ToolChoice{Name: "nope"}})
	if !errors.Is(err, router.ErrUnknownTool) {
		t.Fatalf("got %v, want ErrUnknownTool", err)
	}
	if n := len(model.Requests()); n != 0 {
		t.Fatalf("got %d model calls, want 0", n)
	}
}

func TestPlanArgumentsInvalidOnEveryAttempt(t *testing.T) {
	model := fakeollama.New(t, fakeollama.Reply{Content: `{"city":5}`}, fakeollama.Reply{Content: `{"city":6}`}, fakeollama.Reply{Content: `{"city":7}`})
	r := router.New(model.Client(), nil, nil, router.Settings{Model: "m", RepairAttempts: 2}, quiet)
	out, err := r.Plan(context.Background(), router.ClientRequest{Tools: clientTools(t), Query: "q", Choice: router.ToolChoice{Name: "get_weather"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Calls) != 1 || out.Calls[0].Error == nil || out.Calls[0].Error.Code != router.CodeInvalidArguments || out.Calls[0].Arguments != nil {
		t.Fatalf("got %+v, want one call with invalid_arguments and no arguments", out.Calls)
	}
}

func joined(msgs []api.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Content)
		b.WriteByte('\n')
	}
	return b.String()
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
