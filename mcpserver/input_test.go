package mcpserver_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"toolrouter/access"
	"toolrouter/approval"
	"toolrouter/internal/fakeollama"
	"toolrouter/internal/testmcp"
	"toolrouter/inventory"
	"toolrouter/mcpserver"
	"toolrouter/router"
)

// httpHolding is toolrouter's MCP server over streamable HTTP, for acme, with a real router that
// holds the fault server's echo, and a client of protocol version, answering elicitations with
// handler (nil: it declares no elicitation).
func httpHolding(t *testing.T, model *fakeollama.Server, version string, handler *elicitor) *holdingEnv {
	t.Helper()
	faults := testmcp.NewFaults()
	inv := testmcp.Inventory(t, faults, inventory.Options{Logger: quiet})
	rt := router.New(model.Client(), inv, inv, router.Settings{Model: "fake",
		Approvals: approval.NewKeeper(approval.NewMemory(), time.Hour), AutoExecute: access.NotDestructive}, quiet)
	held := &holding{Router: rt}
	h := mcpserver.New(mcpserver.Deps{Router: held, Inventory: inv}, mcpserver.Options{ExposeInventory: true, Logger: quiet}).Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(access.WithIdentity(r.Context(), acme)))
	}))
	t.Cleanup(ts.Close)
	tr, err := transport.NewStreamableHTTP(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	opts := []client.ClientOption{client.WithProtocolVersion(version)}
	if handler != nil {
		opts = append(opts, client.WithElicitationHandler(handler))
	}
	c := client.NewClient(tr, opts...)
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = version
	init.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	got, err := c.Initialize(t.Context(), init)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if got.ProtocolVersion != version {
		t.Fatalf("negotiated %s, want %s", got.ProtocolVersion, version)
	}
	return &holdingEnv{rt: rt, held: held, faults: faults, c: c, url: ts.URL}
}

// TestHeldCallInputRequests: over streamable HTTP, a held call is put to the person through the
// mechanism the negotiated version has: input requests for 2026-07-28 (the result asks, the
// client's retry answers), elicitation/create before it. Accepted, the call runs once; declined, it
// does not run and its token is used up; cancelled, it stays held and the result names its token.
// Both the inventory tool and the answer tool's routing are asked; the routing is not run again on
// the retry (the fake model would have no answer left for it).
func TestHeldCallInputRequests(t *testing.T) {
	for _, version := range []string{mcp.ProtocolVersion20260728, mcp.ProtocolVersion20251125, mcp.ProtocolVersion20250618} {
		for _, tc := range []struct {
			name    string
			action  mcp.ElicitationResponseAction
			wantRun bool
		}{
			{"accepted", mcp.ElicitationResponseActionAccept, true},
			{"declined", mcp.ElicitationResponseActionDecline, false},
			{"cancelled", mcp.ElicitationResponseActionCancel, false},
		} {
			for _, tool := range []string{"faults__echo", "answer"} {
				t.Run(version+"/"+tc.name+"/"+tool, func(t *testing.T) {
					model := fakeollama.New(t, selectTool("faults.echo"), fakeollama.Reply{Content: `{"message": "drop table"}`})
					asker := &elicitor{action: tc.action}
					e := httpHolding(t, model, version, asker)
					args := map[string]any{"message": "drop table"}
					if tool == "answer" {
						args = map[string]any{"query": "echo drop table"}
					}
					res, err := callTool(t.Context(), e.c, tool, args)
					if err != nil {
						t.Fatal(err)
					}
					got := text(res)
					if ran := len(e.faults.Calls()) == 1; ran != tc.wantRun {
						t.Fatalf("ran %v (%q), want %v", ran, got, tc.wantRun)
					}
					if len(asker.asked) != 1 || !strings.Contains(asker.asked[0], "faults.echo") {
						t.Errorf("asked %q, want one question naming faults.echo", asker.asked)
					}
					switch tc.action {
					case mcp.ElicitationResponseActionAccept:
						if !strings.Contains(got, "drop table") || res.IsError {
							t.Errorf("got %q (isError %v), want the echo", got, res.IsError)
						}
					case mcp.ElicitationResponseActionDecline:
						if !strings.Contains(got, "declined") || strings.Contains(got, "tra_") {
							t.Errorf("got %q, want the decline said and no token", got)
						}
						assertUsedUp(t, e.rt, e.held)
					default:
						tokens := e.held.held()
						if len(tokens) != 1 || !strings.Contains(got, tokens[0]) {
							t.Errorf("got %q, want the held call named with its token %v", got, tokens)
						}
					}
				})
			}
		}
	}
}

// TestInputRequestState: a 2026-07-28 retry whose request state names nothing parked for it (made
// up, or used already) is refused unknown_request_state and runs nothing; the state of a request
// that asked serves its retry once.
func TestInputRequestState(t *testing.T) {
	e := httpHolding(t, fakeollama.New(t), mcp.ProtocolVersion20260728, &elicitor{action: mcp.ElicitationResponseActionAccept})
	post := func(extra string) map[string]any {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"faults__echo","arguments":{"message":"drop table"},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}` + extra + `}}`
		req, _ := http.NewRequest(http.MethodPost, e.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "faults__echo")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if i := strings.Index(string(raw), "data: "); i >= 0 {
			raw = raw[i+len("data: "):]
		}
		var msg struct{ Result map[string]any }
		if err := json.Unmarshal(raw, &msg); err != nil || msg.Result == nil {
			t.Fatalf("got %d %s (%v), want a result", resp.StatusCode, raw, err)
		}
		return msg.Result
	}
	first := post("")
	state, _ := first["requestState"].(string)
	requests, _ := first["inputRequests"].(map[string]any)
	if first["resultType"] != "input_required" || state == "" || len(requests) != 1 {
		t.Fatalf("got %v, want an input request for the held call", first)
	}
	var key string
	for k := range requests {
		key = k
	}
	answer := `,"inputResponses":{"` + key + `":{"action":"accept","content":{}}}`
	for _, tc := range []struct {
		name, extra string
		want        string // in the result
		wantCalls   int    // the echo's runs so far
	}{
		{"made up", `,"requestState":"made-up"` + answer, mcpserver.UnknownRequestState, 0},
		{"its own", `,"requestState":"` + state + `"` + answer, "drop table", 1},
		{"used", `,"requestState":"` + state + `"` + answer, mcpserver.UnknownRequestState, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := post(tc.extra)
			b, _ := json.Marshal(res)
			refused := tc.want == mcpserver.UnknownRequestState
			if !strings.Contains(string(b), tc.want) || (res["isError"] == true) != refused {
				t.Errorf("got %s, want %q in it (isError %v)", b, tc.want, refused)
			}
			if n := len(e.faults.Calls()); n != tc.wantCalls {
				t.Errorf("the echo ran %d time(s) so far, want %d", n, tc.wantCalls)
			}
		})
	}
}
