//go:build realollama

package realollama_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/ollama/ollama/api"
	"github.com/santhosh-tekuri/jsonschema/v5"

	"toolrouter/config"
	"toolrouter/inventory"
	"toolrouter/provider"
	"toolrouter/router"
)

var quiet = slog.New(slog.DiscardHandler)

// ollama is the real server under test, as scripts/real-ollama up describes it.
type ollama struct {
	host *url.URL
	// model is the json variant the router uses, tiny the wholly random one (council, degraded
	// paths), favoured the tool tiny-json's output head prefers.
	model, tiny, favoured string
}

// realOllama returns the server named by OLLAMA_HOST, or skips the test.
func realOllama(t testing.TB) ollama {
	t.Helper()
	host := os.Getenv("OLLAMA_HOST")
	if host == "" {
		t.Skip("OLLAMA_HOST is not set: run scripts/real-ollama test, or eval \"$(scripts/real-ollama up)\" first")
	}
	if !strings.Contains(host, "://") {
		host = "http://" + host
	}
	u, err := url.Parse(host)
	if err != nil {
		t.Fatalf("OLLAMA_HOST: %v", err)
	}
	env := func(k, d string) string {
		if v := os.Getenv(k); v != "" {
			return v
		}
		return d
	}
	return ollama{host: u, model: env("MODEL", "tiny-json"), tiny: env("TINY_MODEL", "tiny"), favoured: env("FAVOURED_TOOL", "calculator.add")}
}

// client is a plain ollama/api client straight to the server (no proxy).
func (o ollama) client() *api.Client { return api.NewClient(o.host, http.DefaultClient) }

// exchange is one /api/chat call as it went over the wire.
type exchange struct {
	// raw is the request body's top-level fields, to see what was sent and what was omitted.
	raw  map[string]json.RawMessage
	req  api.ChatRequest
	body []byte // the response, for failures
	// status is the HTTP status; lines the response objects; final the one with done:true.
	status int
	lines  []api.ChatResponse
	final  *api.ChatResponse
	errMsg string // an "error" line
	wall   time.Duration
}

// content is the whole answer text of the exchange.
func (x *exchange) content() string {
	var b strings.Builder
	for _, l := range x.lines {
		b.WriteString(l.Message.Content)
	}
	return b.String()
}

func (x *exchange) thinking() string {
	var b strings.Builder
	for _, l := range x.lines {
		b.WriteString(l.Message.Thinking)
	}
	return b.String()
}

// recorder is a reverse proxy in front of the real server that records every /api/chat exchange.
type recorder struct {
	upstream *url.URL
	srv      *httptest.Server
	mu       sync.Mutex // guards log
	log      []*exchange
}

func newRecorder(t testing.TB, o ollama) *recorder {
	t.Helper()
	r := &recorder{upstream: o.host}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

// URL is the proxy's address, for the clients under test.
func (r *recorder) URL() *url.URL {
	u, _ := url.Parse(r.srv.URL)
	return u
}

// chatter is toolrouter's own Ollama client, through the proxy.
func (r *recorder) chatter() *provider.Ollama { return provider.NewOllama(r.URL(), nil) }

// mark returns the number of exchanges so far; since(mark) the ones after it.
func (r *recorder) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.log)
}

func (r *recorder) since(n int) []*exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*exchange(nil), r.log[n:]...)
}

// of returns the exchanges after mark n with model m.
func (r *recorder) of(n int, m string) []*exchange {
	var out []*exchange
	for _, x := range r.since(n) {
		if strings.TrimSuffix(x.req.Model, ":latest") == strings.TrimSuffix(m, ":latest") {
			out = append(out, x)
		}
	}
	return out
}

func (r *recorder) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out, err := http.NewRequestWithContext(req.Context(), req.Method, r.upstream.JoinPath(req.URL.Path).String(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.URL.RawQuery = req.URL.RawQuery
	out.Header = req.Header.Clone()
	start := time.Now()
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	chat := req.URL.Path == "/api/chat"
	x := &exchange{status: resp.StatusCode}
	if chat {
		_ = json.Unmarshal(body, &x.raw)
		_ = json.Unmarshal(body, &x.req)
	}
	// Line by line, flushed at once, one line behind: the last line reaches the client only after
	// the exchange is in the log, so a caller that got its answer finds the exchange recorded.
	br := bufio.NewReader(resp.Body)
	fl, _ := w.(http.Flusher)
	var pending []byte
	send := func() {
		if len(pending) > 0 {
			_, _ = w.Write(pending)
			if fl != nil {
				fl.Flush()
			}
		}
	}
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			send()
			pending = line
			if chat {
				x.body = append(x.body, line...)
				x.parse(line)
			}
		}
		if err != nil {
			break
		}
	}
	x.wall = time.Since(start)
	if chat {
		r.mu.Lock()
		r.log = append(r.log, x)
		r.mu.Unlock()
	}
	send()
}

func (x *exchange) parse(line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	var l struct {
		Error string `json:"error"`
		api.ChatResponse
	}
	if err := json.Unmarshal(line, &l); err != nil {
		return
	}
	if l.Error != "" {
		x.errMsg = l.Error
		return
	}
	x.lines = append(x.lines, l.ChatResponse)
	if l.Done {
		final := l.ChatResponse
		x.final = &final
	}
}

// checkWire asserts what every router call must carry: a 2xx answer with done:true, think as
// wanted, truncate:false, shift:false and a num_ctx.
func checkWire(t *testing.T, xs []*exchange, wantThink bool) {
	t.Helper()
	if len(xs) == 0 {
		t.Fatal("got no model calls on the wire, want at least one")
	}
	for i, x := range xs {
		if x.status >= 400 || x.errMsg != "" {
			t.Errorf("call %d: got status %d error %q, want a 2xx answer: %s", i+1, x.status, x.errMsg, x.body)
			continue
		}
		if x.final == nil {
			t.Errorf("call %d: got no done:true line, want one: %s", i+1, x.body)
		}
		for field, want := range map[string]string{"think": boolJSON(wantThink), "truncate": "false", "shift": "false"} {
			if got := string(x.raw[field]); got != want {
				t.Errorf("call %d: got %s=%s, want %s", i+1, field, orAbsent(got), want)
			}
		}
		var opts map[string]any
		_ = json.Unmarshal(x.raw["options"], &opts)
		if n, _ := opts["num_ctx"].(float64); n <= 0 {
			t.Errorf("call %d: got options.num_ctx=%v, want a positive number", i+1, opts["num_ctx"])
		}
	}
}

func boolJSON(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func orAbsent(s string) string {
	if s == "" {
		return "(absent)"
	}
	return s
}

// checkFormatted asserts that each call sent under a format answered with JSON valid under it,
// unless it stopped at num_predict (done_reason "length"), which the router must then report as a
// degraded answer (checked by the caller). It returns how many were cut off.
func checkFormatted(t *testing.T, xs []*exchange) (cut int) {
	t.Helper()
	for i, x := range xs {
		if len(x.req.Format) == 0 || x.final == nil {
			continue
		}
		if x.final.DoneReason == "length" {
			cut++
			continue
		}
		if err := validJSON(x.req.Format, x.content()); err != nil {
			t.Errorf("call %d: answer %q is not valid under its format: %v", i+1, x.content(), err)
		}
	}
	return cut
}

func validJSON(format json.RawMessage, text string) error {
	c := jsonschema.NewCompiler()
	if err := c.AddResource("format.json", bytes.NewReader(format)); err != nil {
		return err
	}
	s, err := c.Compile("format.json")
	if err != nil {
		return err
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return err
	}
	return s.Validate(v)
}

// builtin is a built-in MCP server's configuration.
func builtin(name string) config.Server {
	return config.Server{Transport: config.TransportBuiltin, Builtin: name, Purpose: name + " tools",
		ConnectTimeout: config.Duration(20 * time.Second), CallTimeout: config.Duration(10 * time.Second)}
}

// newInventory starts the built-in calculator and clock, and any in-process servers.
func newInventory(t testing.TB, extra map[string]*server.MCPServer) *inventory.Manager {
	t.Helper()
	servers := map[string]config.Server{"calculator": builtin("calculator"), "clock": builtin("clock")}
	for name := range extra {
		servers[name] = builtin(name)
	}
	inv := inventory.New(servers, inventory.Options{Logger: quiet, InProcess: extra})
	inv.Start(context.Background())
	t.Cleanup(inv.Close)
	if _, ok := inv.Snapshot().Tool("calculator.add"); !ok {
		t.Fatalf("inventory has no calculator.add after Start: %+v", inv.Snapshot().Servers)
	}
	return inv
}

// newRouter is a router on the real server through rec, over inv. A zero Model is the json
// variant, nil Options config's defaults; calls are bounded so a stuck server fails the test
// instead of hanging it.
func newRouter(t testing.TB, o ollama, rec *recorder, inv *inventory.Manager, set router.Settings) *router.Router {
	t.Helper()
	if set.Model == "" {
		set.Model = o.model
	}
	if set.Options == nil {
		set.Options = config.Default().Ollama.Options // as main wires it: temperature 0, seed, num_ctx
	}
	if set.CallTimeout == 0 {
		set.CallTimeout = 2 * time.Minute
	}
	if set.Deadline == 0 {
		set.Deadline = 5 * time.Minute
	}
	return router.New(rec.chatter(), inv, inv, set, quiet)
}
