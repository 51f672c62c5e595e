package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/internal/fakeollama"
	"toolrouter/internal/npmservers"
	"toolrouter/notify"
)

// TestApprovalWaitAndWebhook runs the binary with safety.approval_wait and an approval webhook,
// over the npm filesystem server, whose write_file is destructive: a route that chooses it holds
// the call and waits; the webhook's receiver (a real local HTTP server) gets a notice whose
// signature checks out, with the call's public id and console link and never its token; the
// person approves with the token the stream showed, and the same route, still open, runs the
// call once and ends with its result.
func TestApprovalWaitAndWebhook(t *testing.T) {
	bin := buildBinary(t)
	npm := npmservers.Dir(t)
	files := t.TempDir()
	target := filepath.Join(files, "note.txt")
	rounds := 0
	model := fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply {
		switch {
		case strings.Contains(string(req.Format), `"use_tool"`):
			rounds++
			if rounds > 1 {
				return reply(map[string]any{"use_tool": false, "calls": []string{}, "needs_more": false, "direct": false})
			}
			return reply(map[string]any{"use_tool": true, "calls": []string{"filesystem.write_file"}, "needs_more": false, "direct": true})
		case req.Format != nil:
			return reply(map[string]any{"path": target, "content": "approved"})
		}
		return fakeollama.Reply{Content: "unused"}
	})
	const secret = "whsec-approval-wait-test"
	notices := make(chan notify.Notice, 4)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := notify.Verify([]byte(secret), r.Header, body, time.Now(), 5*time.Minute); err != nil {
			t.Errorf("webhook: %v", err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if strings.Contains(string(body), "tra_") {
			t.Errorf("the notice carries a token: %s", body)
		}
		var n notify.Notice
		if err := json.Unmarshal(body, &n); err != nil {
			t.Errorf("notice: %v", err)
		}
		notices <- n
	}))
	defer hook.Close()
	t.Setenv("TEST_APPROVAL_HOOK_SECRET", secret)
	cfg := map[string]any{
		"listen": "127.0.0.1:0",
		"ollama": map[string]any{"host": model.URL, "model": "fake"},
		"safety": map[string]any{"approval_wait": "30s", "approval_webhook": map[string]any{
			"url": hook.URL, "secret_env": "TEST_APPROVAL_HOOK_SECRET", "console_url": "https://toolrouter.example"}},
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
	base := startBinary(t, bin, "-config", path).Base

	resp, err := http.Post(base+"/v1/route/stream", "application/json", strings.NewReader(`{"query": "write approved to note.txt"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var event, final string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && event == "approval_required":
			var ev struct {
				Pending struct{ Token string } `json:"pending"`
			}
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev); err != nil || ev.Pending.Token == "" {
				t.Fatalf("approval_required event without a token: %s (%v)", line, err)
			}
			if _, err := os.Stat(target); err == nil {
				t.Fatal("the held call wrote the file before anyone approved it")
			}
			n := <-notices
			sum := sha256.Sum256([]byte(ev.Pending.Token))
			if id := hex.EncodeToString(sum[:]); n.ID != id || n.Tool != "write_file" || n.URL != "https://toolrouter.example/ui/#/approvals/"+id {
				t.Errorf("notice %+v, want write_file under the token's hash with its console link", n)
			}
			approve, err := http.Post(base+"/v1/approve", "application/json", strings.NewReader(`{"token": "`+ev.Pending.Token+`"}`))
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(approve.Body)
			approve.Body.Close()
			if approve.StatusCode != http.StatusOK || !strings.Contains(string(raw), `"resumed"`) || !strings.Contains(string(raw), `"call":null`) {
				t.Errorf("approve: %d %s, want the waiting route named in resumed", approve.StatusCode, raw)
			}
		case strings.HasPrefix(line, "data: ") && event == "complete":
			final = strings.TrimPrefix(line, "data: ")
		}
	}
	if got, err := os.ReadFile(target); err != nil || string(got) != "approved" {
		t.Errorf("the file holds %q (%v), want the approved call's content", got, err)
	}
	var out struct {
		Stopped string `json:"stopped"`
		Pending []any  `json:"pending"`
		Calls   []struct {
			Tool   string `json:"tool"`
			Result *struct {
				Text string `json:"text"`
			} `json:"result"`
			Error *struct{ Code string } `json:"error"`
		} `json:"calls"`
	}
	if err := json.Unmarshal([]byte(final), &out); err != nil {
		t.Fatalf("final event %q: %v", final, err)
	}
	if out.Stopped != "done" || len(out.Pending) != 0 || len(out.Calls) != 1 || out.Calls[0].Error != nil || out.Calls[0].Result == nil {
		t.Errorf("route: %s, want write_file run in it and nothing pending", final)
	}
}
