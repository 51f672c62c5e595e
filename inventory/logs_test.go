package inventory_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"toolrouter/config"
	"toolrouter/internal/testmcp"
	"toolrouter/inventory"
)

// TestMCPGoLogsThroughLogger: what mcp-go's stdio transport logs (here, an answer to the server's
// ping it could not write) goes through the inventory's logger, with the server's name, as do the
// inventory's own lines, whose retry delay is in milliseconds.
func TestMCPGoLogsThroughLogger(t *testing.T) {
	var logs lockedBuffer
	cfg := config.Server{Transport: config.TransportStdio, Command: "sh", Args: []string{"-c", testmcp.DeafStdioScript},
		ConnectTimeout: config.Duration(2 * time.Second), CallTimeout: config.Duration(2 * time.Second)}
	m := inventory.New(map[string]config.Server{"deaf": cfg}, inventory.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
		StopGrace: 100 * time.Millisecond, Backoff: func(int) time.Duration { return 1500 * time.Millisecond }})
	m.Start(context.Background())
	t.Cleanup(m.Close)

	type record struct {
		Msg       string
		Server    string
		RetryInMS *json.Number `json:"retry_in_ms"`
	}
	var transport, down *record
	deadline := time.Now().Add(30 * time.Second)
	for (transport == nil || down == nil) && time.Now().Before(deadline) {
		transport, down = nil, nil
		for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			if line == "" {
				continue
			}
			var r record
			dec := json.NewDecoder(strings.NewReader(line))
			dec.UseNumber()
			if err := dec.Decode(&r); err != nil {
				t.Fatalf("got log line %q, want JSON: %v", line, err)
			}
			switch r.Msg {
			case "Error writing response":
				transport = &r
			case "server down":
				down = &r
			}
		}
		if transport == nil || down == nil {
			time.Sleep(20 * time.Millisecond) // polling the log, with a deadline
		}
	}
	if transport == nil || transport.Server != "deaf" {
		t.Errorf("got mcp-go's line %+v, want one with server deaf:\n%s", transport, logs.String())
	}
	if down == nil || down.RetryInMS == nil || down.RetryInMS.String() != "1500" {
		t.Errorf("got server down line %+v, want retry_in_ms 1500:\n%s", down, logs.String())
	}
}
