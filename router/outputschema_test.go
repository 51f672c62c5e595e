package router_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"toolrouter/access"
	"toolrouter/config"
	"toolrouter/internal/fakeollama"
	"toolrouter/internal/testmcp"
	"toolrouter/inventory"
	"toolrouter/router"
)

// typedServer is a server whose lookup tool declares an output schema and answers, as its mode
// argument says, with content that matches it, breaks it, lacks it, or an isError result.
func typedServer() *server.MCPServer {
	srv := server.NewMCPServer("typed", "1.0.0")
	srv.AddTool(mcp.NewTool("lookup", mcp.WithDescription("looks a record up"),
		mcp.WithString("mode", mcp.Required()),
		mcp.WithRawOutputSchema(json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"},"count":{"type":"integer"},
			"items":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"}},"additionalProperties":false}}},
			"required":["id","count"]}`))),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			switch req.GetString("mode", "") {
			case "good":
				return mcp.NewToolResultStructured(map[string]any{"id": "r1", "count": 3, "items": []any{map[string]any{"name": "n1"}}}, "r1"), nil
			case "bad":
				return mcp.NewToolResultStructured(map[string]any{"id": 5, "count": "three"}, "wrong"), nil
			case "text":
				return mcp.NewToolResultText(`{"id":"r1","count":3}`), nil
			}
			return mcp.NewToolResultError("no such record"), nil
		})
	return srv
}

// newTypedEnv is newEnv with the typed server beside the fault server.
func newTypedEnv(t *testing.T, set router.Settings, replies ...fakeollama.Reply) *env {
	t.Helper()
	model, faults := fakeollama.New(t, replies...), testmcp.NewFaults()
	inv := inventory.New(map[string]config.Server{"typed": builtinServer("typed"), "faults": builtinServer("faults")},
		inventory.Options{Logger: quiet, InProcess: map[string]*server.MCPServer{"typed": typedServer(), "faults": faults.MCPServer}})
	inv.Start(context.Background())
	t.Cleanup(inv.Close)
	set.Model, set.CallTimeout = "fake", 10*time.Second
	return &env{router: router.New(model.Client(), inv, inv, set, quiet), model: model, faults: faults, inv: inv}
}

// TestOutputSchemaValidatesResults: structuredContent that breaks the tool's output schema, or is
// missing though the tool declares one, is the call's invalid_result error and no result reaches
// the caller; a matching result and the tool's own isError pass as they are.
func TestOutputSchemaValidatesResults(t *testing.T) {
	e := newTypedEnv(t, router.Settings{})
	if tool, ok := e.inv.Snapshot().Tool("typed.lookup"); !ok || !strings.Contains(string(tool.OutputSchema), `"required":["id","count"]`) || tool.Output == nil {
		t.Fatalf("got tool %+v, want its output schema kept and compiled", tool)
	}
	for _, tc := range []struct {
		name, mode string
		wantCode   string // "" for a result
		wantText   string // in the error's message or the result's text
		isError    bool
	}{
		{name: "matches", mode: "good", wantText: "r1"},
		{name: "breaks the schema", mode: "bad", wantCode: router.CodeInvalidResult, wantText: "/id"},
		{name: "no structured content", mode: "text", wantCode: router.CodeInvalidResult, wantText: "no structuredContent"},
		{name: "tool error is not checked", mode: "missing", wantText: "no such record", isError: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := e.router.Call(context.Background(), access.Identity{}, "typed.lookup", map[string]any{"mode": tc.mode})
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantCode != "" {
				if c.Error == nil || c.Error.Code != tc.wantCode || !strings.Contains(c.Error.Message, tc.wantText) || c.Result != nil {
					t.Fatalf("got error %+v result %+v, want %s naming %q and no result", c.Error, c.Result, tc.wantCode, tc.wantText)
				}
				return
			}
			if c.Error != nil || c.Result == nil || !strings.Contains(c.Result.Text, tc.wantText) || c.Result.IsError != tc.isError {
				t.Fatalf("got result %+v error %+v, want %q (isError %v)", c.Result, c.Error, tc.wantText, tc.isError)
			}
		})
	}
}

// TestReferenceCheckedAgainstOutputSchema: phase 2's pointer into an earlier step's result is
// checked against that tool's output schema, so a field the tool never returns goes back to the
// model as a finding naming the fields it does return, and the repaired reference runs.
func TestReferenceCheckedAgainstOutputSchema(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pointer  string
		feedback string
	}{
		{"undeclared field", "#/name", `no field "name" at the top (its fields: count, id, items)`},
		{"into a string", "#/id/first", `makes /id a string`},
		{"closed item", "#/items/0/title", `no field "title" at /items/0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTypedEnv(t, router.Settings{RepairAttempts: 1},
				choose(true, false, "typed.lookup"), callArgs(map[string]any{"mode": "good"}),
				choose(false, false, "faults.echo"),
				callArgs(map[string]any{"message": "$result_of_step_1" + tc.pointer}),
				callArgs(map[string]any{"message": "$result_of_step_1#/items/0/name"}),
				choose(false, false))
			out, err := e.router.Route(context.Background(), router.Request{Query: "echo the record's name"})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Calls) != 2 {
				t.Fatalf("got %d calls, want 2", len(out.Calls))
			}
			c := out.Calls[1]
			if len(c.Attempts) != 1 || !strings.Contains(c.Attempts[0].Feedback, tc.feedback) {
				t.Fatalf("got attempts %+v, want feedback with %q", c.Attempts, tc.feedback)
			}
			if c.Result == nil || c.Result.Text != "n1" {
				t.Errorf("got result %+v error %+v, want the repaired reference's n1", c.Result, c.Error)
			}
			for _, call := range e.faults.Calls() {
				if call.Tool == "echo" && call.Args["message"] != "n1" {
					t.Errorf("echo ran with %v before the reference was repaired", call.Args)
				}
			}
		})
	}
}
