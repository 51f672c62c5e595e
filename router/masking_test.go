package router_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"toolrouter/config"
	"toolrouter/internal/fakeollama"
	"toolrouter/internal/testmcp"
	"toolrouter/inventory"
	"toolrouter/redact"
	"toolrouter/router"
)

// leaky is an in-process MCP server whose one tool, fetch, answers what the test sets.
func leaky(t *testing.T, set router.Settings, model *fakeollama.Server, answer func() *mcp.CallToolResult) (*router.Router, *testmcp.Faults) {
	t.Helper()
	srv := server.NewMCPServer("leaky", "1.0.0", server.WithToolCapabilities(false))
	srv.AddTool(mcp.NewTool("fetch", mcp.WithDescription("Fetches a record."), mcp.WithString("q", mcp.Required())),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) { return answer(), nil })
	faults := testmcp.NewFaults()
	servers := map[string]config.Server{"leaky": builtinServer("leaky"), "faults": builtinServer("faults"), "calculator": builtinServer("calculator")}
	inv := inventory.New(servers, inventory.Options{Logger: quiet, InProcess: map[string]*server.MCPServer{"leaky": srv, "faults": faults.MCPServer}})
	inv.Start(context.Background())
	t.Cleanup(inv.Close)
	set.Model = "fake"
	return router.New(model.Client(), inv, inv, set, quiet), faults
}

// strings of a JSON document, decoded: what a reader of it sees, whatever its escaping.
func decodedStrings(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var d any
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			sb.WriteString(x + "\x00")
			if strings.HasPrefix(x, "{") || strings.HasPrefix(x, "[") { // JSON inside a string (a record's raw answer)
				var inner any
				if json.Unmarshal([]byte(x), &inner) == nil {
					walk(inner)
				}
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for k, e := range x {
				sb.WriteString(k + "\x00")
				walk(e)
			}
		}
	}
	walk(d)
	return sb.String()
}

// TestResultMaskedWhateverItsCharacters: a configured credential made of any characters, and a
// token in a link's query, are masked in a result's structured content and text (value by value,
// so that JSON's escaping of ", \, <, > and & hides nothing), in the URIs of resource links and
// resources, in the route's outcome, in the trajectory, in the next round's prompt and in what
// $result_of_step_1#/k1 resolves to.
func TestResultMaskedWhateverItsCharacters(t *testing.T) {
	const token, password = "tok-1234567", "pw-7654321"
	for _, tc := range []struct{ name, cred string }{
		{"quote", `pa"ss"w0rd-1`},
		{"backslash", `pa\ss\w0rd-2`},
		{"angle brackets", `<pa>ss<w0rd>3`},
		{"ampersand", `pa&ss&w0rd4`},
		{"non-ASCII", `pässwörd-東京-5`},
		{"plain", `sk_live_abcdef0123456789`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			structured := map[string]any{"k1": tc.cred, "note": "key " + tc.cred + "!", tc.cred: "as a key",
				"next": "https://api.example.com/items?page=2&access_token=" + token}
			text, _ := json.Marshal(structured) // as servers write it: ", \, <, >, & escaped
			link := "https://bob:" + password + "@files.example.com/x?access_token=" + token
			answer := func() *mcp.CallToolResult {
				return &mcp.CallToolResult{StructuredContent: structured, Content: []mcp.Content{
					mcp.NewTextContent(string(text)),
					mcp.NewResourceLink(link, "report", "", "text/plain"),
					mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: link, MIMEType: "text/plain", Text: "body"}),
				}}
			}
			model := fakeollama.New(t,
				choose(true, false, "leaky.fetch"), callArgs(map[string]any{"q": "record"}),
				choose(false, false, "faults.echo"), callArgs(map[string]any{"message": "$result_of_step_1#/k1"}))
			rec := &records{}
			rt, faults := leaky(t, router.Settings{Redactor: redact.New(tc.cred), Recorder: rec}, model, answer)
			out, err := rt.Route(context.Background(), router.Request{Query: "fetch the record and echo its k1"})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Calls) != 2 || out.Calls[0].Result == nil || len(out.Calls[0].Result.Content) != 2 {
				t.Fatalf("got calls %v, want leaky.fetch with two content items then faults.echo", toolsOf(out))
			}
			for what, v := range map[string]any{"the outcome": out, "the trajectory": rec.all(), "the model's prompts": model.Requests()} {
				seen := decodedStrings(t, v)
				for _, secret := range []string{tc.cred, token, password} {
					if strings.Contains(seen, secret) {
						t.Errorf("%s shows %q", what, secret)
					}
				}
			}
			if !strings.Contains(decodedStrings(t, out), "page=2") {
				t.Errorf("the link's other parameters were lost")
			}
			calls := faults.Calls()
			if len(calls) != 1 || calls[0].Args["message"] != redact.Mask {
				t.Errorf("got echo calls %+v, want $result_of_step_1#/k1 to resolve to %q", calls, redact.Mask)
			}
		})
	}
}

// TestCredentialAcrossTheCut: a long result is masked before it is cut, so a credential that
// straddles the cut is not shown in part.
func TestCredentialAcrossTheCut(t *testing.T) {
	const cred = "Zq9xW7-across-the-cut"
	half := router.DefaultMaxResultBytes / 2
	long := strings.Repeat("x", half-7) + " " + cred + " " + strings.Repeat("y", router.DefaultMaxResultBytes)
	answer := func() *mcp.CallToolResult { return mcp.NewToolResultText(long) }
	model := fakeollama.New(t, sel("leaky.fetch", false), callArgs(map[string]any{"q": "all"}))
	rt, _ := leaky(t, router.Settings{Redactor: redact.New(cred)}, model, answer)
	out, err := rt.Route(context.Background(), router.Request{Query: "fetch everything"})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Calls) != 1 || out.Calls[0].Result == nil {
		t.Fatalf("got calls %v", toolsOf(out))
	}
	res := out.Calls[0].Result
	if res.TextBytes == 0 || len(res.Text) > router.DefaultMaxResultBytes+64 {
		t.Fatalf("got %d bytes (text_bytes %d), want the text cut", len(res.Text), res.TextBytes)
	}
	if strings.Contains(res.Text, cred[:6]) {
		t.Errorf("the cut text shows part of the credential: %q", res.Text[half-16:half+16])
	}
}

// TestRefusedArgumentsMasked: a call refused as secret_in_arguments has its arguments masked in
// the outcome, the streamed events, the trajectory and the next round's prompt, so the model is
// never shown the credential to re-encode.
func TestRefusedArgumentsMasked(t *testing.T) {
	const cred = "s3cr3t-server-token"
	for _, tc := range []struct{ name, message, secret string }{
		{"configured credential", "use " + cred + " please", cred},
		{"GitHub token", "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB", "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB"},
		{"URL password", "fetch https://bob:hunter2222@example.com/x?page=1", "hunter2222"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := fakeollama.New(t,
				choose(true, false, "faults.echo"), callArgs(map[string]any{"message": tc.message}),
				choose(false, false, "calculator.add"), callArgs(map[string]any{"a": 1, "b": 2}))
			rec := &records{}
			rt, faults := leaky(t, router.Settings{Redactor: redact.New(cred), Recorder: rec}, model, func() *mcp.CallToolResult { return nil })
			var events []router.Event
			out, err := rt.Route(context.Background(), router.Request{Query: "echo it", OnEvent: func(ev router.Event) { events = append(events, ev) }})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Calls) != 2 || out.Calls[0].Error == nil || out.Calls[0].Error.Code != router.CodeSecretInArguments || len(faults.Calls()) != 0 {
				t.Fatalf("got calls %v (first error %+v), want faults.echo refused then calculator.add", toolsOf(out), out.Calls[0].Error)
			}
			if msg, _ := out.Calls[0].Arguments["message"].(string); !strings.Contains(msg, redact.Mask) {
				t.Errorf("got arguments %v, want the credential masked in place", out.Calls[0].Arguments)
			}
			if len(model.Requests()) != 4 {
				t.Fatalf("got %d model calls, want 4", len(model.Requests()))
			}
			for what, v := range map[string]any{"the outcome": out, "the events": events, "the trajectory": rec.all(),
				"the next round's prompt": model.Requests()[2]} {
				if strings.Contains(decodedStrings(t, v), tc.secret) {
					t.Errorf("%s shows the credential", what)
				}
			}
		})
	}
}

// TestOnlyCredentialsRefused: with a server's headers X-Env: prod and Accept: application/json,
// arguments saying "product" and URLs spelt any way (a trailing #, an upper-case scheme, a
// non-ASCII path) are not refused, and a result saying "production" is not rewritten; the
// Authorization header's bearer token is still refused in arguments and masked in results.
func TestOnlyCredentialsRefused(t *testing.T) {
	const token = "tok3n-abc-0123456789"
	red := redact.ForServer("https://mcp.example.com/", map[string]string{
		"X-Env": "prod", "Accept": "application/json", "Authorization": "Bearer " + token}, nil)
	for _, tc := range []struct {
		name, message string
		refused       bool
	}{
		{"product", "the product launch goes to production", false},
		{"content type", "send it as application/json", false},
		{"JSON Schema id", `{"$schema": "http://json-schema.org/draft-07/schema#"}`, false},
		{"non-ASCII path", "https://ja.wikipedia.org/wiki/東京", false},
		{"upper-case scheme", "HTTPS://EXAMPLE.COM/Docs?page=2", false},
		{"bearer token", "use " + token, true},
		{"URL password", "https://bob:hunter2222@example.com/", true},
		{"access token in a query", "https://example.com/x?page=2&access_token=abc123", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := fakeollama.New(t, sel("faults.echo", false), callArgs(map[string]any{"message": tc.message}))
			rt, faults := leaky(t, router.Settings{Redactor: red}, model, func() *mcp.CallToolResult { return nil })
			out, err := rt.Route(context.Background(), router.Request{Query: "echo it"})
			if err != nil {
				t.Fatal(err)
			}
			c := out.Calls[0]
			if tc.refused {
				if c.Error == nil || c.Error.Code != router.CodeSecretInArguments || len(faults.Calls()) != 0 {
					t.Errorf("got %+v (error %+v), want it refused as secret_in_arguments", c.Result, c.Error)
				}
				return
			}
			if c.Error != nil || c.Result == nil || c.Result.Text != tc.message {
				t.Errorf("got %+v (error %+v), want the echo of %q as it is", c.Result, c.Error, tc.message)
			}
		})
	}
	// The token in a result, as a tool that echoes it would show it.
	model := fakeollama.New(t, sel("leaky.fetch", false), callArgs(map[string]any{"q": "x"}))
	rt, _ := leaky(t, router.Settings{Redactor: red}, model, func() *mcp.CallToolResult {
		return mcp.NewToolResultText("production uses " + token)
	})
	out, err := rt.Route(context.Background(), router.Request{Query: "fetch"})
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Calls[0].Result.Text; got != "production uses "+redact.Mask {
		t.Errorf("got %q, want production kept and the token masked", got)
	}
}
