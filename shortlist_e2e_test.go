package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"
	"github.com/ollama/ollama/api"

	"toolrouter/internal/bfcltools"
	"toolrouter/internal/fakeollama"
	"toolrouter/internal/testmcp"
)

// envServeBFCL makes the test binary, re-executed, serve that many real BFCL tools over stdio.
const envServeBFCL = "TOOLROUTER_TEST_SERVE_BFCL"

func TestMain(m *testing.M) {
	testmcp.ServeIfAsked() // the faults server over stdio (results_e2e_test.go)
	if n := os.Getenv(envServeBFCL); n != "" {
		os.Exit(serveBFCL(n))
	}
	os.Exit(m.Run())
}

// serveBFCL serves n real BFCL tools (bfcltools.NewServer) over stdio until stdin closes.
func serveBFCL(n string) int {
	size, err := strconv.Atoi(n)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv, _, err := bfcltools.NewServer(size)
	if err == nil {
		err = server.ServeStdio(srv)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestObviousToolBesideAHugeServer runs the sidecar with the built-in servers and, over stdio, a
// server of 5,000 real BFCL tools (none about arithmetic or clocks), against a fake model that
// calls the tool the query needs when phase 1 is offered it and no tool otherwise: the query
// must reach its tool through the shortlist, and the tool's answer must come back.
func TestObviousToolBesideAHugeServer(t *testing.T) {
	cfg := map[string]any{"servers": map[string]any{"big": map[string]any{
		"transport": "stdio", "command": os.Args[0], "env": map[string]string{envServeBFCL: "5000"},
		"purpose": "Functions from the Berkeley Function Calling Leaderboard", "connect_timeout": "120s",
	}}}
	path := filepath.Join(t.TempDir(), "config.json")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		query, tool string
		args        map[string]any
		want        string
	}{
		{"What is 17 times 23?", "calculator.multiply", map[string]any{"a": 17, "b": 23}, "391"},
		{"What's 1000 minus 387?", "calculator.subtract", map[string]any{"a": 1000, "b": 387}, "613"},
		{"How many days are there between 2024-03-03 and 2024-07-04?", "clock.date_difference",
			map[string]any{"start": "2024-03-03", "end": "2024-07-04"}, "123 days"},
	}
	var want struct {
		tool string
		args map[string]any
	}
	model := fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply {
		return obviousModel(req, want.tool, want.args)
	})
	base := serve(t, "-config", path, "-ollama", model.URL, "-model", "fake")
	_, inv := get(t, base+"/v1/inventory")
	if n := strings.Count(fmt.Sprint(inv), "big."); n < 5000 {
		t.Fatalf("the inventory lists %d tools of the big server, want 5000", n)
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			want.tool, want.args = tc.tool, tc.args // routes run one at a time
			_, offer := get(t, base+"/v1/inventory/search?k=5&q="+url.QueryEscape(tc.query))
			var ranked []string
			for _, r := range offer["ranked"].([]any) {
				ranked = append(ranked, r.(map[string]any)["name"].(string))
			}
			if !slices.Contains(ranked, tc.tool) {
				t.Errorf("search ranks %v first, want %s among the first 5", ranked, tc.tool)
			}
			body, _ := json.Marshal(map[string]string{"query": tc.query})
			out := post(t, base+"/v1/route", string(body))
			calls, _ := out["calls"].([]any)
			if out["use_tool"] != true || len(calls) != 1 {
				t.Fatalf("got use_tool %v and %d calls, want one call of %s: %v", out["use_tool"], len(calls), tc.tool, out)
			}
			call := calls[0].(map[string]any)
			res, _ := call["result"].(map[string]any)
			text, _ := res["text"].(string)
			if got := fmt.Sprint(call["server"], ".", call["tool"]); got != tc.tool || !strings.Contains(text, tc.want) || res["is_error"] != false {
				t.Errorf("got %s answering %q, want %s answering %s", got, text, tc.tool, tc.want)
			}
		})
	}
}

// obviousModel answers phase 1 with a call of tool when the selection format offers it, else
// with no tool; and phase 2 with args.
func obviousModel(req api.ChatRequest, tool string, args map[string]any) fakeollama.Reply {
	if !strings.Contains(string(req.Format), `"use_tool"`) {
		return reply(args)
	}
	if !slices.Contains(offered(req.Format), tool) {
		return reply(map[string]any{"use_tool": false, "calls": []string{}, "needs_more": false, "direct": false})
	}
	return reply(map[string]any{"use_tool": true, "calls": []string{tool}, "needs_more": false, "direct": true})
}

// offered returns the tool names a phase-1 format lets the model choose.
func offered(format json.RawMessage) []string {
	var f struct {
		Properties struct {
			Calls struct {
				Items struct {
					Enum []string `json:"enum"`
				} `json:"items"`
			} `json:"calls"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(format, &f)
	return f.Properties.Calls.Items.Enum
}
