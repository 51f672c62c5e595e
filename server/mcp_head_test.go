package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/server"

	"toolrouter/server"
)

// headDeadline bounds the wait for a stream's head: the head is sent at once, so a second is
// already generous on a loaded machine.
const headDeadline = 5 * time.Second

// TestMCPStreamHeadAtOnce: every stream /mcp opens (the standalone GET stream of the versions
// with sessions, the subscriptions/listen stream of 2026-07-28) sends its status line and headers
// before any event, as a client's Connect waits for them: read with a raw HTTP client from a real
// mcp-go server that has nothing to notify.
func TestMCPStreamHeadAtOnce(t *testing.T) {
	srv := mcpgo.NewMCPServer("t", "1", mcpgo.WithToolCapabilities(true))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- server.Serve(ctx, ln, server.Deps{MCP: mcpgo.NewStreamableHTTPServer(srv)},
			server.Options{Logger: quiet, ShutdownTimeout: 2 * time.Second})
	}()
	t.Cleanup(func() { stop(); <-served })
	addr := ln.Addr().String()

	// A session of 2025-06-18, for the GET stream.
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	resp, err := http.Post("http://"+addr+"/mcp", "application/json", strings.NewReader(init))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: got %d with session %q, want 200 and a session", resp.StatusCode, sid)
	}

	listen := `{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"toolsListChanged":true}}}`
	for _, tc := range []struct {
		name, request string
	}{
		{"get stream", "GET /mcp HTTP/1.1\r\nHost: " + addr + "\r\nAccept: text/event-stream\r\nMcp-Session-Id: " + sid +
			"\r\nMcp-Protocol-Version: 2025-06-18\r\n\r\n"},
		{"listen stream", fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nAccept: application/json, text/event-stream\r\n"+
			"Content-Type: application/json\r\nMcp-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\nContent-Length: %d\r\n\r\n%s", addr, len(listen), listen)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.Write([]byte(tc.request)); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(headDeadline))
			r := bufio.NewReader(conn)
			status, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("got no status line within %s (%v): the stream's head is held back", headDeadline, err)
			}
			if !strings.HasPrefix(status, "HTTP/1.1 200") {
				t.Fatalf("got status %q, want 200", status)
			}
			var ctype string
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					t.Fatalf("got no end of headers within %s: %v", headDeadline, err)
				}
				if line == "\r\n" {
					break
				}
				if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Content-Type") {
					ctype = strings.TrimSpace(v)
				}
			}
			if ctype != "text/event-stream" {
				t.Errorf("got Content-Type %q, want text/event-stream", ctype)
			}
		})
	}
}
