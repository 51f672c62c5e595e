package main

import (
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ollama/ollama/api"

	"toolrouter/internal/fakeollama"
	"toolrouter/internal/testmcp"
)

// TestHugeStructuredResultsBounded: through the real command line, routes to a real stdio MCP
// tool answering megabytes of structured content get results with it dropped and the cut said
// (router.max_result_bytes), smaller ones get it whole, and the console's recent requests hold no
// more than ui.recent_requests_bytes, however many such routes were kept.
func TestHugeStructuredResultsBounded(t *testing.T) {
	const (
		maxResult = 200 << 10
		maxRing   = 400 << 10
		big       = 3 << 20   // over max_result_bytes: dropped
		small     = 150 << 10 // under it: kept, and a report of about twice that (the first call's result is listed twice)
	)
	var calls atomic.Int64
	model := fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply {
		if strings.Contains(string(req.Format), "needs_more") {
			return reply(map[string]any{"reasoning": "a listing", "use_tool": true,
				"calls": []map[string]string{{"tool": "faults.records", "task": "list them"}}, "needs_more": false, "direct": true})
		}
		n := big
		if calls.Add(1)%2 == 0 {
			n = small
		}
		return reply(map[string]any{"bytes": n})
	})
	path := writeConfig(t, map[string]any{
		"router": map[string]any{"reasoning": "brief", "max_result_bytes": maxResult},
		"ui":     map[string]any{"recent_requests_bytes": maxRing},
		"usage":  map[string]any{"path": ""},
		"servers": map[string]any{"faults": map[string]any{"purpose": "records", "transport": "stdio", "command": os.Args[0],
			"args": []string{"-test.run=^$"}, "env": map[string]string{testmcp.EnvServe: "1"}}},
	})
	base := serve(t, "-config", path, "-ollama", model.URL, "-model", "fake")
	const routes = 6
	for i := 1; i <= routes; i++ {
		out := post(t, base+"/v1/route", `{"query":"list the records"}`)
		res, _ := out["result"].(map[string]any)
		if res == nil {
			t.Fatalf("route %d: got %v, want a result", i, out)
		}
		if i%2 == 1 {
			if res["truncated"] != true || res["structured"] != nil || res["structured_bytes"].(float64) < big || !strings.HasSuffix(res["text"].(string), " records") {
				t.Fatalf("route %d: got truncated %v, structured_bytes %v, structured present %v, text %.60q; want the structured content dropped and its size said",
					i, res["truncated"], res["structured_bytes"], res["structured"] != nil, res["text"])
			}
		} else if res["truncated"] != nil || res["structured"] == nil {
			t.Fatalf("route %d: got truncated %v, structured present %v; want a result under the bound whole", i, res["truncated"], res["structured"] != nil)
		}
	}
	status, ring := get(t, base+"/ui/api/requests")
	held, _ := ring["bytes"].(float64)
	most, _ := ring["max_bytes"].(float64)
	kept, _ := ring["requests"].([]any)
	if status != 200 || most != maxRing || held <= 0 || held > most {
		t.Fatalf("recent requests: got %d, bytes %v of max_bytes %v; want at most %d held", status, held, most, maxRing)
	}
	if len(kept) == 0 || len(kept) >= routes {
		t.Errorf("recent requests: got %d kept, want the newest, the oldest dropped to stay under the bound", len(kept))
	}
}
