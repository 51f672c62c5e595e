package router_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"toolrouter/access"
	"toolrouter/internal/fakeollama"
	"toolrouter/router"
	"toolrouter/trajectory"
)

// kioskAccess is a hierarchy in which org acme may use every tool and its team kiosk only the
// calculator.
func kioskAccess(t *testing.T) *access.Hierarchy {
	t.Helper()
	h, err := access.New(access.Orgs{"acme": {Teams: map[string]access.Team{"kiosk": {Allow: []string{"calculator"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

var (
	kiosk = access.Identity{Org: "acme", Team: "kiosk", Name: "kiosk-key"}
	acme  = access.Identity{Org: "acme", Name: "ops-key"}
)

// TestAccessPolicy: the kiosk's phase-1 prompt and enum show only the calculator; a hidden tool
// the model names anyway reads exactly as a tool that does not exist, so nothing confirms that it
// does; the org keeps every tool. The outcome names the identity.
func TestAccessPolicy(t *testing.T) {
	e := newEnv(t, router.Settings{Access: kioskAccess(t)},
		sel("faults.echo", true),         // hidden from the kiosk
		sel("faults.no_such_tool", true), // exists nowhere
		choose(false, true, "calculator.add", "faults.echo"), args(`{"a": 1, "b": 2}`),
		sel("faults.echo", true), callArgs(map[string]any{"message": "hi"}))
	route := func(id access.Identity) *router.Outcome {
		t.Helper()
		out, err := e.router.Route(context.Background(), router.Request{Query: "echo hi", Identity: id})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	hidden, missing := route(kiosk), route(kiosk)
	if hidden.UseTool || hidden.DegradedReason != router.DegradedUnknownTool {
		t.Fatalf("kiosk: got use_tool=%v degraded=%q, want faults.echo refused as unknown", hidden.UseTool, hidden.Degraded)
	}
	if got, want := strings.ReplaceAll(hidden.Degraded, "faults.echo", "X"), strings.ReplaceAll(missing.Degraded, "faults.no_such_tool", "X"); got != want {
		t.Errorf("a hidden tool reads %q, a missing one %q: want the same words", got, want)
	}
	if !strings.Contains(hidden.Degraded, "not an available tool") {
		t.Errorf("got %q, want \"not an available tool\"", hidden.Degraded)
	}
	for i, req := range e.model.Requests()[:2] {
		if strings.Contains(req.Messages[0].Content, "faults.") || contains(formatEnum(t, req.Format), "faults.echo") {
			t.Errorf("request %d: the kiosk's prompt or enum offers fault tools", i)
		}
	}
	if hidden.Identity != "acme/kiosk" {
		t.Errorf("got identity %q, want acme/kiosk", hidden.Identity)
	}

	// Beside a permitted call, the hidden one is dropped as unknown: only the permitted one runs.
	mixed := route(kiosk)
	if len(mixed.Calls) != 1 || mixed.Calls[0].Result == nil || mixed.Calls[0].Result.Text != "3" {
		t.Fatalf("got calls %+v, want calculator.add = 3 alone", mixed.Calls)
	}
	if d := mixed.Trace[0].Detail; !strings.Contains(d, "unknown: faults.echo") {
		t.Errorf("got selection %q, want faults.echo noted as unknown", d)
	}

	// The org keeps every tool.
	if out := route(acme); out.Result == nil || out.Result.Text != "hi" || out.Identity != "acme" {
		t.Errorf("acme: got %+v %+v as %q, want the echo as acme", out.Result, out.Error, out.Identity)
	}
}

// TestNativeModeAccess: native mode's tools field holds only the identity's tools, and a hidden
// tool the model calls anyway is refused in the same words as one that does not exist.
func TestNativeModeAccess(t *testing.T) {
	e := newEnv(t, router.Settings{Mode: router.Native, Access: kioskAccess(t)},
		fakeollama.Reply{ToolCalls: []api.ToolCall{
			{Function: api.ToolCallFunction{Name: "faults__echo"}},
			{Function: api.ToolCallFunction{Name: "weather__now"}},
		}},
		fakeollama.Reply{Content: "I cannot."})
	out, err := e.router.Route(context.Background(), router.Request{Query: "echo hi", Identity: kiosk})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Calls) != 2 {
		t.Fatalf("got calls %+v, want 2", out.Calls)
	}
	hidden, missing := out.Calls[0].Error, out.Calls[1].Error
	if hidden == nil || missing == nil || hidden.Code != router.CodeUnknownTool || missing.Code != router.CodeUnknownTool {
		t.Fatalf("got %+v / %+v, want unknown_tool for both", hidden, missing)
	}
	if got, want := strings.ReplaceAll(hidden.Message, "faults__echo", "X"), strings.ReplaceAll(missing.Message, "weather__now", "X"); got != want {
		t.Errorf("a hidden tool reads %q, a missing one %q: want the same words", got, want)
	}
	reqs := e.model.Requests()
	for _, tool := range reqs[0].Tools {
		if !strings.HasPrefix(tool.Function.Name, "calculator__") {
			t.Errorf("the kiosk's tools field offers %s", tool.Function.Name)
		}
	}
	var fed []string
	for _, m := range reqs[1].Messages {
		if m.Role == "tool" {
			fed = append(fed, m.Content)
		}
	}
	if len(fed) != 2 || strings.ReplaceAll(fed[0], "faults__echo", "X") != strings.ReplaceAll(fed[1], "weather__now", "X") {
		t.Errorf("got tool messages %q, want the same words for the hidden and the missing tool", fed)
	}
}

// TestTrajectoryNamesTheIdentity: every trajectory record of a request carries its identity.
func TestTrajectoryNamesTheIdentity(t *testing.T) {
	path := filepath.Join(t.TempDir(), "traj.jsonl")
	w, err := trajectory.Open(trajectory.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, router.Settings{Recorder: w, Access: kioskAccess(t)}, sel("calculator.add", true), args(`{"a": 1, "b": 2}`))
	if _, err := e.router.Route(context.Background(), router.Request{Query: "1+2", Identity: kiosk}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d records, want select, arguments, execute", len(lines))
	}
	for _, line := range lines {
		var r trajectory.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.Identity != "acme/kiosk" {
			t.Errorf("%s record: got identity %q, want acme/kiosk", r.Kind, r.Identity)
		}
	}
}
