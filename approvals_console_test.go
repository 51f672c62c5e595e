package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/ollama/ollama/api"

	"toolrouter/internal/fakeollama"
	"toolrouter/notify"
)

// TestConsoleApprovals drives the console's Approvals page in headless Chromium against the built
// binary: a route chooses a destructive tool, which is held, and waits for the decision
// (safety.approval_wait). The held call shows on the page with its exact arguments as text (a
// tag in them stays text), the query, who asked and why; Approve makes the waiting route run it,
// exactly once, and answer with its result; Decline makes the next route go on without it, the
// tool not run. The recent requests show each request's call as approved or declined, not as a
// call that ran unasked. A link to a call (#/approvals/ID) opens the page at it, and says when it
// no longer awaits a decision. Each held call's notice reaches the approval webhook (a real local
// receiver that checks its signature), without the token and with that link. The metrics count
// the calls held, one approved, one declined, and no notice failed. The requests are a
// council service's: POST /v1/answer, answered by the tool's result once a person approved. A
// team whose wait runs out gets its answer without the call, which stays held.
func TestConsoleApprovals(t *testing.T) {
	chrome := chromium(t)
	bin := buildBinary(t)
	var runs atomic.Int32
	srv := mcpserver.NewMCPServer("ops", "1")
	wipe := mcp.NewTool("wipe", mcp.WithDescription("Wipes a database."), mcp.WithDestructiveHintAnnotation(true),
		mcp.WithReadOnlyHintAnnotation(false), mcp.WithString("target", mcp.Required(), mcp.Description("the database")))
	srv.AddTool(wipe, func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		runs.Add(1)
		return mcp.NewToolResultText("wiped " + req.GetString("target", "")), nil
	})
	web := httptest.NewServer(mcpserver.NewStreamableHTTPServer(srv))
	t.Cleanup(web.Close)
	const target = `staging <img src=x onerror="window.pwned=1">`
	model := fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply {
		done := false // the call ran, was declined or got no decision: the route calls nothing more
		for _, m := range req.Messages {
			done = done || strings.Contains(m.Content, "wiped") || strings.Contains(m.Content, "declined") ||
				strings.Contains(m.Content, "no decision")
		}
		switch {
		case strings.Contains(string(req.Format), `"use_tool"`) && done:
			return reply(map[string]any{"use_tool": false, "calls": []string{}, "needs_more": false, "direct": true})
		case strings.Contains(string(req.Format), `"use_tool"`):
			return reply(map[string]any{"use_tool": true, "calls": []string{"ops.wipe"}, "needs_more": false, "direct": true})
		case req.Format != nil:
			return reply(map[string]any{"target": target})
		}
		return fakeollama.Reply{Content: "done"}
	})
	const secret, console = "whsec-console-approvals", "https://console.example"
	notices := make(chan notify.Notice, 4)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var n notify.Notice
		if err := notify.Verify([]byte(secret), r.Header, body, time.Now(), 5*time.Minute); err != nil || strings.Contains(string(body), "tra_") ||
			json.Unmarshal(body, &n) != nil {
			t.Errorf("webhook: a notice that fails its check or carries a token (%v): %s", err, body)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		notices <- n
	}))
	t.Cleanup(hook.Close)
	t.Setenv("TEST_CONSOLE_HOOK_SECRET", secret)
	notice := func(t *testing.T) notify.Notice {
		t.Helper()
		select {
		case n := <-notices:
			return n
		case <-time.After(30 * time.Second):
			t.Fatal("no notice reached the webhook")
		}
		return notify.Notice{}
	}
	p := startBinary(t, bin, "-config", writeConfig(t, map[string]any{
		"listen":  "127.0.0.1:0",
		"ollama":  map[string]any{"host": model.URL, "model": "fake"},
		"servers": map[string]any{"ops": map[string]any{"purpose": "database operations", "transport": "streamable-http", "url": web.URL + "/mcp", "connect_timeout": "5s"}},
		"orgs": map[string]any{"default": map[string]any{"allow": []string{"*"},
			"teams": map[string]any{"quick": map[string]any{"approval_wait": "1s"}}}},
		"safety": map[string]any{"approval_wait": "30s", "approval_webhook": map[string]any{
			"url": hook.URL, "secret_env": "TEST_CONSOLE_HOOK_SECRET", "console_url": console}},
	}))
	b := newBrowser(t, chrome, p.Base)

	// route sends a query the model answers with ops.wipe, in the background; its outcome
	// arrives on the channel once the route has its decision.
	route := func(query, caller string) <-chan routed {
		out := make(chan routed, 1)
		go func() {
			client := &http.Client{Timeout: 90 * time.Second}
			body := `{"query": "` + query + `", "synthesize": "never", "caller": "` + caller + `"}`
			resp, err := client.Post(p.Base+"/v1/answer", "application/json", strings.NewReader(body))
			if err != nil {
				out <- routed{err: err}
				return
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			var r routed
			r.status, r.raw = resp.StatusCode, string(raw)
			var answered struct {
				Final   string
				Routing *struct{ Calls []routedCall }
			}
			r.err = json.Unmarshal(raw, &answered)
			if r.err == nil && answered.Routing != nil {
				r.final, r.outcome.Calls = answered.Final, answered.Routing.Calls
			}
			out <- r
		}()
		return out
	}
	await := func(t *testing.T, ch <-chan routed) routed {
		t.Helper()
		select {
		case r := <-ch:
			if r.err != nil || r.status != http.StatusOK || len(r.outcome.Calls) == 0 {
				t.Fatalf("route: %d %s (%v)", r.status, r.raw, r.err)
			}
			return r
		case <-time.After(90 * time.Second):
			t.Fatal("the route did not answer")
		}
		return routed{}
	}

	t.Run("approve", func(t *testing.T) {
		done := route("wipe the staging database", "")
		b.open(t, "approvals")
		b.do(t, "waiting for the held call", chromedp.WaitVisible(chromedp.CSS(`[data-held] button[data-action="approve"]`)))
		card := b.text(t, "[data-held]")
		for _, want := range []string{"ops.wipe", "wipe the staging database", "destructive", "left"} {
			if !strings.Contains(card, want) {
				t.Errorf("the held call's card: got %q, want %q in it", card, want)
			}
		}
		if args := b.text(t, "[data-held] .held-arguments"); !strings.Contains(args, `staging <img src=x onerror=\"window.pwned=1\">`) {
			t.Errorf("arguments: got %q, want the exact arguments as text", args)
		}
		ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
		defer cancel()
		imgs, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#approvals-list img").length`))
		if err != nil {
			t.Fatal(err)
		}
		pwned, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.pwned === 1`))
		if err != nil {
			t.Fatal(err)
		}
		if imgs != 0 || pwned {
			t.Errorf("the arguments were rendered as markup: %d img elements, script ran: %v", imgs, pwned)
		}
		b.shot(t, "approvals")
		if n := notice(t); n.Tool != "wipe" || n.Server != "ops" || !strings.HasPrefix(n.URL, console+"/ui/#/approvals/") {
			t.Errorf("notice %+v, want ops.wipe with its console link", n)
		}
		b.do(t, "approving", chromedp.Click(chromedp.CSS(`[data-held] button[data-action="approve"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#approvals-result [data-decided="approved"]`)))
		r := await(t, done)
		c := r.outcome.Calls[0]
		if c.Error != nil || c.Result == nil || !strings.Contains(c.Result.Text, "wiped staging") || !strings.Contains(r.final, "wiped staging") {
			t.Errorf("the route's call: %s; want it run, with its result", r.raw)
		}
		if n := runs.Load(); n != 1 {
			t.Errorf("the tool ran %d times, want once", n)
		}
		b.open(t, "recent")
		if got := b.rows(t, "#recent-table"); len(got) == 0 || !strings.Contains(got[0], "approved: ops.wipe") {
			t.Errorf("recent requests: got %q, want the request's call approved", got)
		}
		b.clean(t)
	})

	t.Run("decline", func(t *testing.T) {
		done := route("wipe the staging database again", "")
		b.open(t, "approvals")
		b.do(t, "waiting for the held call", chromedp.WaitVisible(chromedp.CSS(`[data-held] button[data-action="decline"]`)))
		ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
		defer cancel()
		id, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("[data-held]").dataset.held`))
		if err != nil || len(id) != 64 {
			t.Fatalf("the held call's id: %q, %v", id, err)
		}
		// A notice's link names the call: the page opens at it.
		n := notice(t)
		if n.URL != console+"/ui/#/approvals/"+id {
			t.Fatalf("notice %+v, want the link to call %s", n, id)
		}
		b.open(t, strings.TrimPrefix(n.URL, console+"/ui/#/"))
		b.do(t, "declining", chromedp.WaitVisible(chromedp.CSS(`[data-held="`+id+`"].wanted button[data-action="decline"]`)),
			chromedp.Click(chromedp.CSS(`[data-held="`+id+`"] button[data-action="decline"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#approvals-result [data-decided="declined"]`)))
		r := await(t, done)
		if c := r.outcome.Calls[0]; c.Error == nil || c.Error.Code != "declined" || c.Result != nil {
			t.Errorf("the route's call: %s; want it declined, not run", r.raw)
		}
		if n := runs.Load(); n != 1 {
			t.Errorf("the tool ran %d times in all, want once (the approved call only)", n)
		}
		b.open(t, "recent")
		if got := b.rows(t, "#recent-table"); len(got) == 0 || !strings.Contains(got[0], "declined: ops.wipe") || strings.Contains(got[0], "✓") {
			t.Errorf("recent requests: got %q, want the request's call declined", got)
		}
		b.open(t, "approvals/"+id)
		b.do(t, "following a link to a call decided", chromedp.WaitVisible(chromedp.ID("approvals-gone")))
		if got := b.text(t, "#approvals-decisions"); !strings.Contains(got, "approved") || !strings.Contains(got, "declined") {
			t.Errorf("decisions: got %q, want the approval and the decline", got)
		}
		b.shot(t, "approvals-decided")
		b.clean(t)
	})

	t.Run("no decision in time", func(t *testing.T) {
		// Team quick waits one second: nobody decides, the request answers without the call,
		// which stays held (its notice sent), and the tool does not run.
		r := await(t, route("wipe the staging database quickly", "quick"))
		if c := r.outcome.Calls[0]; c.Error == nil || c.Error.Code != "approval_timeout" || c.Result != nil {
			t.Errorf("the route's call: %s; want approval_timeout, not run", r.raw)
		}
		if n := notice(t); n.Identity != "default/quick" {
			t.Errorf("notice %+v, want the call of default/quick", n)
		}
		if n := runs.Load(); n != 1 {
			t.Errorf("the tool ran %d times in all, want once (the approved call only)", n)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		resp, err := http.Get(p.Base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		for _, want := range []string{`toolrouter_held_calls_total{outcome="held"} 3`, `toolrouter_held_calls_total{outcome="approved"} 1`,
			`toolrouter_held_calls_total{outcome="declined"} 1`, `toolrouter_held_calls_total{outcome="expired"} 0`,
			// Each notice reached the receiver (checked above); none failed or was dropped.
			`toolrouter_approval_notices_total{outcome="failed"} 0`, `toolrouter_approval_notices_total{outcome="dropped"} 0`} {
			if !strings.Contains(string(raw), want) {
				t.Errorf("metrics: want %s in:\n%s", want, grepLines(string(raw), "toolrouter_held_calls_total", "toolrouter_approval_notices_total"))
			}
		}
	})
}

// routed is what POST /v1/answer answered: its final text and its routing's calls.
type routed struct {
	status  int
	raw     string
	err     error
	final   string
	outcome struct{ Calls []routedCall }
}

type routedCall struct {
	Error  *struct{ Code, Message string }
	Result *struct{ Text string }
}

// grepLines are the lines of text that start with one of the prefixes.
func grepLines(text string, prefixes ...string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				out = append(out, l)
			}
		}
	}
	return strings.Join(out, "\n")
}
