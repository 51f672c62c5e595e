package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"toolrouter/inventory"
)

// TestToolsApproveCommand: "toolrouter tools approve" lifts the quarantine of a poisoned tool on a
// running server (safety.scan quarantine), which then offers it; approving a tool that is not held
// back, or a name that is not SERVER.TOOL, fails with the server's or the command's reason.
func TestToolsApproveCommand(t *testing.T) {
	base := serve(t, "-config", writeConfig(t, map[string]any{
		"servers": map[string]any{"weather": map[string]any{"purpose": "weather forecasts and alerts",
			"transport": "streamable-http", "url": poisonedServer(t), "connect_timeout": "5s"}},
		"safety": map[string]any{"scan": "quarantine"},
		"usage":  map[string]any{"path": ""},
	}))
	offered := func() bool {
		resp, err := http.Get(base + "/v1/inventory")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var inv inventory.Export
		if err := json.NewDecoder(resp.Body).Decode(&inv); err != nil {
			t.Fatal(err)
		}
		for _, s := range inv.Servers {
			for _, tool := range s.Tools {
				if tool.Qualified == "weather.get_forecast" {
					return true
				}
			}
		}
		return false
	}
	if offered() {
		t.Fatal("the poisoned tool is offered before approval")
	}
	var out bytes.Buffer
	if err := run(t.Context(), []string{"tools", "approve", "weather.get_forecast", "-url", base}, &out, io.Discard, nil); err != nil {
		t.Fatalf("tools approve: %v", err)
	}
	var a struct {
		Tool     string `json:"tool"`
		Pin      string `json:"pin"`
		Restored bool   `json:"restored"`
	}
	if err := json.Unmarshal(out.Bytes(), &a); err != nil || a.Tool != "get_forecast" || len(a.Pin) != 64 || !a.Restored {
		t.Fatalf("got %s (%v), want the approval with its pin, restored", out.Bytes(), err)
	}
	if !offered() {
		t.Error("the approved tool is not offered")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tools", "approve", "weather.get_alerts", "-url", base}, "409 nothing_to_approve"},
		{[]string{"tools", "approve", "get_alerts", "-url", base}, "SERVER.TOOL"},
		{[]string{"tools", "list"}, "usage: toolrouter tools approve"},
	} {
		err := run(t.Context(), tc.args, io.Discard, io.Discard, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || exitCode(err) != exitUsage {
			t.Errorf("%v: got %v, want an error naming %q", tc.args, err, tc.want)
		}
	}
}
