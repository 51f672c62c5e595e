package router_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"toolrouter/access"
	"toolrouter/router"
)

// TestCall: a caller's own tool call goes through the identity's policy, the tool's schema and the
// execution path with its timeout; failures are reported in the Call as a routed call's are, and
// only a hidden or missing tool is an error, the same for both.
func TestCall(t *testing.T) {
	e := newEnv(t, router.Settings{Access: kioskAccess(t), ExecuteTimeout: 200 * time.Millisecond})
	for _, tc := range []struct {
		name     string
		id       access.Identity
		tool     string
		args     map[string]any
		wantErr  bool
		wantCode string // Call.Error's code; "" for a result
		wantText string // in the result's text or the error's message
		isError  bool   // the tool answered isError
	}{
		{name: "valid", id: kiosk, tool: "calculator.add", args: map[string]any{"a": 2.0, "b": 40.0}, wantText: "42"},
		{name: "wrong type", id: kiosk, tool: "calculator.add", args: map[string]any{"a": "two", "b": 40.0}, wantCode: router.CodeInvalidArguments, wantText: "/a"},
		{name: "missing argument", id: acme, tool: "faults.echo", args: nil, wantCode: router.CodeInvalidArguments, wantText: "message"},
		{name: "tool answers isError", id: acme, tool: "faults.fail", args: map[string]any{}, wantText: "failed on purpose", isError: true},
		{name: "timeout", id: acme, tool: "faults.hang", args: map[string]any{}, wantCode: router.CodeToolTimeout},
		{name: "hidden", id: kiosk, tool: "faults.echo", args: map[string]any{"message": "hi"}, wantErr: true},
		{name: "missing", id: kiosk, tool: "faults.nope", args: map[string]any{"message": "hi"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := e.router.Call(context.Background(), tc.id, tc.tool, tc.args)
			if tc.wantErr {
				if !errors.Is(err, router.ErrUnknownTool) || c != nil {
					t.Fatalf("got %+v, %v; want ErrUnknownTool", c, err)
				}
				if want := `unknown tool "` + tc.tool + `"`; err.Error() != want {
					t.Errorf("got %q, want %q: a hidden tool reads as a missing one", err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Call: %v", err)
			}
			switch {
			case tc.wantCode != "":
				if c.Error == nil || c.Error.Code != tc.wantCode || !strings.Contains(c.Error.Message, tc.wantText) {
					t.Fatalf("got error %+v, want %s naming %q", c.Error, tc.wantCode, tc.wantText)
				}
				if tc.wantCode == router.CodeInvalidArguments && c.Arguments != nil {
					t.Errorf("invalid arguments were kept: %v", c.Arguments)
				}
			case c.Error != nil || c.Result == nil || !strings.Contains(c.Result.Text, tc.wantText) || c.Result.IsError != tc.isError:
				t.Fatalf("got %+v (error %+v), want a result with %q, isError %v", c.Result, c.Error, tc.wantText, tc.isError)
			}
		})
	}
	if calls := e.faults.Calls(); len(calls) != 2 {
		t.Errorf("the fault server ran %d calls, want 2 (fail and hang; nothing invalid or hidden)", len(calls))
	}
}
