package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/internal/fakeollama"
	"toolrouter/internal/npmservers"
	"toolrouter/internal/services"
)

// TestApprovalAcrossReplicas runs two sidecars, as two replicas, on one PostgreSQL database, with
// the npm reference filesystem server, whose write_file says destructiveHint. The fake model
// chooses write_file: under the default auto_execute (not_destructive) the route ends
// approval_required with a token and nothing is written; its stream says approval_required and a
// chat completion names the pending call. The other replica honours the token for the same
// identity only, runs the call once and the file is written; a replay, another identity's
// attempt and a token never issued are refused with 409, 403 and 404.
func TestApprovalAcrossReplicas(t *testing.T) {
	bin := buildBinary(t)
	pg := services.Postgres(t)
	npm := npmservers.Dir(t)
	files := t.TempDir()
	target := filepath.Join(files, "note.txt")
	model := fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply {
		switch {
		case strings.Contains(string(req.Format), `"use_tool"`):
			return reply(map[string]any{"use_tool": true, "calls": []string{"filesystem.write_file"}, "needs_more": false, "direct": true})
		case req.Format != nil:
			return reply(map[string]any{"path": target, "content": "approved"})
		}
		return fakeollama.Reply{Content: "unused"}
	})
	keys := map[string]string{"ops": "tr_approvals-ops-0123456789abcdef", "eve": "tr_approvals-eve-0123456789abcdef"}
	hash := func(k string) string { s := sha256.Sum256([]byte(k)); return hex.EncodeToString(s[:]) }
	cfg := map[string]any{
		"listen": "127.0.0.1:0",
		"ollama": map[string]any{"host": model.URL, "model": "fake"},
		"auth": map[string]any{"keys": []any{
			map[string]any{"name": "ops", "sha256": hash(keys["ops"]), "org": "acme"},
			map[string]any{"name": "eve", "sha256": hash(keys["eve"]), "org": "beta"},
		}},
		"orgs":  map[string]any{"acme": map[string]any{}, "beta": map[string]any{}},
		"usage": map[string]any{"postgres_url": pg.URL},
		"servers": map[string]any{"filesystem": map[string]any{
			"purpose": "files", "transport": "stdio", "command": "node",
			"args": []string{npmservers.Entry(npm, "filesystem"), files}, "connect_timeout": "60s",
		}},
	}
	path := filepath.Join(t.TempDir(), "config.json")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	a, c := startBinary(t, bin, "-config", path).Base, startBinary(t, bin, "-config", path).Base

	client := &http.Client{Timeout: 30 * time.Second}
	call := func(base, route, key, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+route, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", route, err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}

	status, raw := call(a, "/v1/route", keys["ops"], `{"query": "write approved to note.txt"}`)
	var out struct {
		Stopped string `json:"stopped"`
		Pending []struct {
			Tool, Token, Reason string
			Arguments           map[string]any
		} `json:"pending"`
	}
	if err := json.Unmarshal([]byte(raw), &out); err != nil || status != http.StatusOK {
		t.Fatalf("route: %d %s", status, raw)
	}
	if out.Stopped != "approval_required" || len(out.Pending) != 1 || out.Pending[0].Tool != "write_file" || out.Pending[0].Arguments["content"] != "approved" {
		t.Fatalf("got %s, want write_file pending", raw)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the held call wrote the file (%v)", err)
	}
	token := out.Pending[0].Token

	if status, raw := call(a, "/v1/route/stream", keys["ops"], `{"query": "write approved to note.txt"}`); status != http.StatusOK || !hasEvent(raw, "approval_required") {
		t.Errorf("stream: %d, want an approval_required event in:\n%s", status, raw)
	}
	if status, raw := call(a, "/v1/chat/completions", keys["ops"], `{"model": "fake", "messages": [{"role": "user", "content": "write approved to note.txt"}]}`); status != http.StatusOK ||
		!strings.Contains(raw, "Approval is needed") || !strings.Contains(raw, "filesystem.write_file") || !strings.Contains(raw, `"pending"`) {
		t.Errorf("chat completion: %d %s, want the pending call named", status, raw)
	}

	body := `{"token": "` + token + `"}`
	if status, raw := call(c, "/v1/approve", keys["eve"], body); status != http.StatusForbidden || !strings.Contains(raw, "token_identity") {
		t.Errorf("another identity: %d %s, want 403 token_identity", status, raw)
	}
	status, raw = call(c, "/v1/approve", keys["ops"], body)
	if status != http.StatusOK || !strings.Contains(raw, `"tool":"write_file"`) {
		t.Fatalf("approve on the other replica: %d %s", status, raw)
	}
	if got, err := os.ReadFile(target); err != nil || string(got) != "approved" {
		t.Errorf("after approval the file holds %q (%v), want the held call's content", got, err)
	}
	if status, raw := call(a, "/v1/approve", keys["ops"], body); status != http.StatusConflict || !strings.Contains(raw, "token_used") {
		t.Errorf("replay: %d %s, want 409 token_used", status, raw)
	}
	if status, raw := call(a, "/v1/approve", keys["ops"], `{"token": "tra_never-issued"}`); status != http.StatusNotFound || !strings.Contains(raw, "unknown_token") {
		t.Errorf("unknown token: %d %s, want 404 unknown_token", status, raw)
	}
	if status, raw := call(a, "/v1/approve", keys["ops"], `{}`); status != http.StatusBadRequest || !strings.Contains(raw, "missing_token") {
		t.Errorf("no token: %d %s, want 400 missing_token", status, raw)
	}
}

// hasEvent reports whether a Server-Sent Events body has an event of that name.
func hasEvent(body, name string) bool {
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if sc.Text() == "event: "+name {
			return true
		}
	}
	return false
}
