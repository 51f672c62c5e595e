package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"toolrouter/internal/testhttp"

	"github.com/ollama/ollama/api"

	"toolrouter/auth"
	"toolrouter/internal/fakeollama"
)

// syncBuffer collects a log written from many goroutines.
type syncBuffer struct {
	mu    sync.Mutex // guards b and wrote
	b     bytes.Buffer
	wrote chan struct{} // closed at the next write, when someone waits for one
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wrote != nil {
		close(s.wrote)
		s.wrote = nil
	}
	return s.b.Write(p)
}

// waitFor reports whether the log holds text within d, waking at each write.
func (s *syncBuffer) waitFor(text string, d time.Duration) bool {
	deadline := time.After(d)
	for {
		s.mu.Lock()
		if strings.Contains(s.b.String(), text) {
			s.mu.Unlock()
			return true
		}
		if s.wrote == nil {
			s.wrote = make(chan struct{})
		}
		wrote := s.wrote
		s.mu.Unlock()
		select {
		case <-wrote:
		case <-deadline:
			return false
		}
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func writeConfig(t *testing.T, cfg map[string]any) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// send makes one request and returns the status, the headers and the body.
func send(t *testing.T, method, url, body string, headers map[string]string) (int, http.Header, []byte) {
	t.Helper()
	return testhttp.Send(t, method, url, body, headers)
}

// TestKeysNew: "keys new" prints one JSON object, the key and its auth.keys entry; pasted into
// the configuration, the entry lets the key in, for its identity.
func TestKeysNew(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"keys", "new", "--org", "acme", "--team", "research", "--agent", "summariser", "--name", "ci-bot"}, &out, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(out.Bytes()))
	dec.DisallowUnknownFields()
	var g auth.Generated
	if err := dec.Decode(&g); err != nil {
		t.Fatalf("decoding %s: %v", out.Bytes(), err)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Errorf("got more than one JSON object: %s", out.Bytes())
	}
	sum := sha256.Sum256([]byte(g.Key))
	want := auth.Key{Name: "ci-bot", SHA256: hex.EncodeToString(sum[:]), Org: "acme", Team: "research", Agent: "summariser"}
	if g.Entry != want || !strings.HasPrefix(g.Key, auth.KeyPrefix) {
		t.Fatalf("got %+v, want a %s key and the entry %+v", g, auth.KeyPrefix, want)
	}
	if strings.Count(out.String(), g.Key) != 1 {
		t.Errorf("the key is printed %d times, want once", strings.Count(out.String(), g.Key))
	}

	model := fakeollama.New(t, reply(map[string]any{"reasoning": "r", "use_tool": false, "calls": []any{}, "needs_more": false, "direct": false}))
	path := writeConfig(t, map[string]any{
		"auth": map[string]any{"keys": []auth.Key{g.Entry}},
		"orgs": map[string]any{"acme": map[string]any{"teams": map[string]any{"research": map[string]any{"agents": map[string]any{"summariser": map[string]any{}}}}}},
	})
	base := serve(t, "-config", path, "-ollama", model.URL, "-model", "fake")
	if status, _, body := send(t, "POST", base+"/v1/route", `{"query":"hi"}`, nil); status != http.StatusUnauthorized {
		t.Errorf("without the key: got %d %s, want 401", status, body)
	}
	status, _, body := send(t, "POST", base+"/v1/route", `{"query":"hi"}`, map[string]string{"Authorization": "Bearer " + g.Key})
	var o struct{ Identity string }
	if err := json.Unmarshal(body, &o); status != http.StatusOK || err != nil || o.Identity != "acme/research/summariser" {
		t.Errorf("with the key: got %d %s, want 200 as acme/research/summariser", status, body)
	}

	for _, args := range [][]string{{"keys"}, {"keys", "old"}, {"keys", "new"}, {"keys", "new", "--team", "research"}, {"keys", "new", "--org", "ac/me"}, {"keys", "new", "--org", "acme", "extra"}} {
		var out bytes.Buffer
		if err := run(context.Background(), args, &out, io.Discard, nil); err == nil || !strings.Contains(err.Error(), "usage: toolrouter keys new") || out.Len() != 0 {
			t.Errorf("%v: got %v and %q, want the usage and no output", args, err, out.String())
		}
	}
}

// TestRefusesToStartWithoutAuth: listening beyond loopback with nobody able to authenticate is
// refused before anything opens, unless auth.allow_anonymous says so; with keys it serves, and
// a request without one is a 401.
func TestRefusesToStartWithoutAuth(t *testing.T) {
	model := fakeollama.New(t)
	start := func(t *testing.T, args ...string) (string, error) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		addr := make(chan string, 1)
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, append([]string{"-log-level", "error", "-ollama", model.URL}, args...), io.Discard, io.Discard, func(a string) { addr <- a })
		}()
		select {
		case err := <-done:
			cancel()
			return "", err
		case a := <-addr:
			t.Cleanup(func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("run returned %v after shutdown, want nil", err)
				}
			})
			_, port, _ := strings.Cut(a, "]:")
			if port == "" {
				_, port, _ = strings.Cut(a, ":")
			}
			return "http://127.0.0.1:" + port, nil
		case <-time.After(30 * time.Second):
			t.Fatal("run neither listened nor failed within 30s")
		}
		return "", nil
	}

	for _, listen := range []string{"0.0.0.0:0", ":0"} {
		_, err := start(t, "-config", "", "-listen", listen)
		if err == nil || !strings.Contains(err.Error(), "auth.allow_anonymous") || !strings.Contains(err.Error(), "auth.keys") || !strings.Contains(err.Error(), listen) {
			t.Errorf("listen %s without auth: got %v, want a refusal naming auth.keys and auth.allow_anonymous", listen, err)
		}
	}

	t.Run("anonymous allowed", func(t *testing.T) {
		base, err := start(t, "-config", writeConfig(t, map[string]any{"auth": map[string]any{"allow_anonymous": true}}), "-listen", "0.0.0.0:0")
		if err != nil {
			t.Fatal(err)
		}
		if status, _, body := send(t, "GET", base+"/v1/inventory", "", nil); status != http.StatusOK {
			t.Errorf("got %d %s, want 200", status, body)
		}
	})
	t.Run("keys", func(t *testing.T) {
		t.Setenv("TOOLROUTER_START_KEY", "tr_start-key-0123456789abcdef")
		cfg := map[string]any{"auth": map[string]any{"keys": []map[string]any{{"name": "k", "env": "TOOLROUTER_START_KEY", "org": "acme"}}}}
		base, err := start(t, "-config", writeConfig(t, cfg), "-listen", "0.0.0.0:0")
		if err != nil {
			t.Fatal(err)
		}
		if status, h, _ := send(t, "GET", base+"/v1/inventory", "", nil); status != http.StatusUnauthorized || h.Get("WWW-Authenticate") == "" {
			t.Errorf("without a key: got %d, want 401 with WWW-Authenticate", status)
		}
		if status, _, body := send(t, "GET", base+"/v1/inventory", "", map[string]string{"X-Api-Key": "tr_start-key-0123456789abcdef"}); status != http.StatusOK {
			t.Errorf("with the key: got %d %s, want 200", status, body)
		}
	})
}

// TestSecretsNeverShown plants credentials (an API key read from the environment, an MCP
// server's URL password and query token and header value, the model server's URL password) and
// drives the real command line through every endpoint, good requests and bad: no response body
// or header and no log line may contain any of them.
func TestSecretsNeverShown(t *testing.T) {
	const (
		apiKey         = "tr_planted-api-key-5f3a9c0e1d"
		urlPassword    = "planted-url-password-77"
		queryToken     = "planted-query-token-88"
		headerValue    = "planted-header-value-99"
		ollamaPassword = "planted-ollama-password-66"
	)
	planted := []string{apiKey, urlPassword, queryToken, headerValue, ollamaPassword}
	t.Setenv("TOOLROUTER_PLANTED_KEY", apiKey)

	model := fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply {
		query := req.Messages[len(req.Messages)-1].Content
		switch {
		case strings.Contains(query, "fail"):
			return fakeollama.Reply{Status: http.StatusInternalServerError, Error: "the model failed"}
		case strings.Contains(string(req.Format), "needs_more"):
			return reply(map[string]any{"reasoning": "sum", "use_tool": true, "calls": []map[string]string{{"tool": "calculator.add", "task": "add"}},
				"needs_more": false, "direct": true})
		case req.Format != nil:
			return reply(map[string]any{"a": 2, "b": 3})
		}
		return fakeollama.Reply{Content: "5"}
	})
	path := writeConfig(t, map[string]any{
		"ollama": map[string]any{"host": strings.Replace(model.URL, "http://", "http://ollama-user:"+ollamaPassword+"@", 1), "model": "fake"},
		"auth":   map[string]any{"keys": []map[string]any{{"name": "ci", "env": "TOOLROUTER_PLANTED_KEY", "org": "acme"}}, "admins": []string{"acme"}},
		"orgs":   map[string]any{"acme": map[string]any{"teams": map[string]any{"research": map[string]any{}}}},
		"servers": map[string]any{"remote": map[string]any{
			"transport": "streamable-http", "connect_timeout": "5s",
			"url":     "http://svc:" + urlPassword + "@127.0.0.1:1/mcp?token=" + queryToken,
			"headers": map[string]string{"Authorization": "Bearer " + headerValue},
		}},
	})

	logs := &syncBuffer{}
	var seen []string // every response: status, headers and body
	// Registered first, so it runs once the command has stopped and logged its last line.
	t.Cleanup(func() {
		lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
		if !strings.Contains(logs.String(), `"msg":"request"`) || !strings.Contains(logs.String(), `"identity":"acme"`) {
			t.Errorf("the log has no access lines naming the identity; captured:\n%s", logs.String())
		}
		for _, s := range planted {
			for _, line := range lines {
				if strings.Contains(line, s) {
					t.Errorf("a log line shows %s: %s", s, line)
				}
			}
			for _, r := range seen {
				if strings.Contains(r, s) {
					t.Errorf("a response shows %s: %s", s, r)
				}
			}
		}
	})
	base := serveLogging(t, logs, "-config", path, "-log-level", "debug")

	key := map[string]string{"Authorization": "Bearer " + apiKey}
	requests := []struct {
		method, path, body string
		headers            map[string]string
		want               int
	}{
		{"GET", "/healthz", "", nil, 200},
		{"GET", "/readyz", "", nil, 200},
		{"GET", "/readyz", "", key, 200},
		{"GET", "/v1/inventory", "", key, 200},
		{"GET", "/v1/inventory?caller=research", "", map[string]string{"X-Api-Key": apiKey}, 200},
		{"GET", "/v1/inventory/search?q=add+two+numbers", "", key, 200},
		{"POST", "/v1/route", `{"query":"add 2 and 3"}`, key, 200},
		{"POST", "/v1/route", `{"query":"fail please"}`, key, 200},
		{"POST", "/v1/answer", `{"query":"add 2 and 3"}`, key, 200},
		{"POST", "/v1/route/stream", `{"query":"add 2 and 3"}`, key, 200},
		{"POST", "/v1/answer/stream", `{"query":"fail please"}`, key, 200},
		{"POST", "/v1/route", `{"query":"add 2 and 3"}`, map[string]string{"Authorization": "Bearer " + apiKey + "x"}, 401},
		{"POST", "/v1/route", `{"query":"add 2 and 3"}`, map[string]string{"Authorization": "Bearer " + headerValue}, 401},
		{"GET", "/v1/inventory", "", map[string]string{"X-Api-Key": apiKey, "Authorization": "Bearer " + apiKey}, 401},
		{"POST", "/v1/route", `{"query":"add","caller":"` + apiKey + `"}`, key, 403},
		{"POST", "/v1/route", `{"query":"add","caller":"globex"}`, key, 403},
		{"GET", "/v1/nothing?token=" + apiKey, "", key, 404},
	}
	for _, r := range requests {
		status, h, body := send(t, r.method, base+r.path, r.body, r.headers)
		if status != r.want {
			t.Errorf("%s %s: got %d %s, want %d", r.method, r.path, status, body, r.want)
		}
		var hdr strings.Builder
		_ = h.Write(&hdr)
		seen = append(seen, hdr.String()+"\n"+string(body))
	}
	// The admin's /readyz shows the remote server down, with its error, and the model host.
	_, _, ready := send(t, "GET", base+"/readyz", "", key)
	seen = append(seen, string(ready))
	if !bytes.Contains(ready, []byte(`"name":"remote"`)) || !bytes.Contains(ready, []byte("REDACTED")) {
		t.Errorf("got /readyz %s, want the remote server listed with its credentials masked", ready)
	}
	// A stream's events are bodies too.
	_, _, stream := send(t, "POST", base+"/v1/route/stream", `{"query":"add 2 and 3"}`, key)
	sc := bufio.NewScanner(bytes.NewReader(stream))
	events := 0
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "event: ") {
			events++
		}
	}
	if events == 0 {
		t.Errorf("got no stream events: %s", stream)
	}
	seen = append(seen, string(stream))
}
