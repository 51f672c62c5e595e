// Package fakeollama is a test double for an Ollama server: an httptest server that speaks Ollama's
// wire protocol (JSON or NDJSON on /api/chat, /api/generate, /api/version, /api/tags, /api/show, /), answers
// chats from a per-test script and records every chat request so tests can assert what the model
// was sent.
package fakeollama

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/types/model"
)

// Reply is one scripted answer to a chat request.
type Reply struct {
	// Content is the assistant message text.
	Content string
	// Thinking is the model's reasoning, sent in message.thinking: with a stream, in pieces
	// before the content's; else in the one message.
	Thinking string
	// ToolCalls are native-mode tool calls, sent in the final message.
	ToolCalls []api.ToolCall
	// Status, when not 0 or 200, answers with that status and {"error": Error}.
	Status int
	Error  string
	// PromptTokens and CompletionTokens are reported in the final message's metrics
	// (prompt_eval_count, eval_count).
	PromptTokens, CompletionTokens int
	// CachedTokens, when not nil, is reported as prompt_eval_cached_count: how many of
	// PromptTokens (the whole prompt, as Ollama counts it since v0.34) the prompt cache served.
	CachedTokens *int
	// LoadDuration, PrefillDuration and DecodeDuration are reported as load_duration,
	// prompt_eval_duration and eval_duration; TotalDuration as total_duration (0: their sum).
	LoadDuration, PrefillDuration, DecodeDuration, TotalDuration time.Duration
	// Logprobs are sent when the request asks for them (logprobs: true): with a stream, one with
	// each piece of text and the rest with the final message; else all in the one message.
	Logprobs []api.Logprob
	// NoDone ends the stream without the final done message.
	NoDone bool
	// Hang blocks until the client gives up (or the server closes).
	Hang bool
	// Raw, when set, is written as the body verbatim (status 200).
	Raw string
	// Delay answers after this long (for benchmarks of fixed-time models; tests should not need it).
	Delay time.Duration
	// Flood streams this many bytes of answer text in 4 KiB pieces, whatever the request's stream
	// flag, without a done message: a model that does not stop. It ends early when the client
	// goes away; Flooded then receives the bytes written.
	Flood int64
	// OneLine makes a Flood one NDJSON line that never ends instead of many.
	OneLine bool
	// CutAfter, when > 0 and the request streams, sends only the first CutAfter pieces of Content
	// and then drops the connection: a server that dies mid-answer. With Hang it stalls there
	// instead, until the client gives up (Aborted then receives).
	CutAfter int
	// PieceDelay waits this long before each streamed piece of Content: a model decoding at a
	// known pace (for benchmarks and for tests of what arrives when).
	PieceDelay time.Duration
}

// Server is a fake Ollama.
type Server struct {
	*httptest.Server
	// Models are the names /api/tags lists.
	Models []string
	// ContextLength, when > 0, is the trained context length /api/show reports for each of them,
	// in model_info as Ollama does ("general.architecture": "fake", "fake.context_length": N).
	ContextLength int

	aborted  chan struct{} // one value per hung request whose client gave up
	flooded  chan int64    // the bytes written by each flood, once it ends
	quit     chan struct{}
	quitOnce sync.Once

	unrecorded bool // set by Start before any request: keep no requests

	// Lead is what the fake's template writes between the assistant's header and an answer when
	// the user's turn is last (a thinking template's empty think block); /api/chat's
	// _debug_render_only shows it, and a continued answer starts with it. Set before any request.
	Lead string
	// Capabilities are what /api/show reports each model can do ("completion", "thinking", …).
	// Set before any request.
	Capabilities []model.Capability
	// CountPrefix makes a continuation's prompt_eval_count the scripted PromptTokens plus one per
	// byte of the answer it continues, as a tokenizer of a token per byte would count the prompt.
	// Set before any request.
	CountPrefix bool
	// NoContinue makes the fake a server that does not continue a final assistant message: its
	// template closes that turn and opens another, and a continuation is answered as a whole
	// answer. Set before any request.
	NoContinue bool

	mu       sync.Mutex // guards script, requests, shown
	script   []Reply
	fn       func(api.ChatRequest) Reply
	requests []api.ChatRequest
	shown    []string
	// pending are the whole answers being continued, by the conversation before the answer.
	pending map[string]Reply
	// replay are scripted answers that did not continue the answer they were asked to, to be
	// sent again when the same conversation asks for a whole answer.
	replay map[string]Reply
}

// New starts a fake that answers chat requests with replies, in order; once they run out it
// answers 500.
func New(t testing.TB, replies ...Reply) *Server {
	return start(t, replies, nil)
}

// NewFunc starts a fake that answers each chat request with fn(req); fn must be safe for
// concurrent use.
func NewFunc(t testing.TB, fn func(api.ChatRequest) Reply) *Server {
	return start(t, nil, fn)
}

// Start starts a fake outside a test (the benchmark harness's plumbing runs and load test) that
// answers each chat request with fn(req); fn must be safe for concurrent use. It does not record
// requests (Requests returns none), so a long load test does not grow it. The caller must Close it.
func Start(fn func(api.ChatRequest) Reply) *Server {
	s := start(nil, nil, fn)
	s.unrecorded = true
	return s
}

// Close releases requests that hang and stops the server; it may be called more than once.
func (s *Server) Close() {
	s.quitOnce.Do(func() { close(s.quit) })
	s.Server.Close()
}

// start starts a fake; with a test, the test's cleanup closes it.
func start(t testing.TB, replies []Reply, fn func(api.ChatRequest) Reply) *Server {
	s := &Server{script: replies, fn: fn, quit: make(chan struct{}), aborted: make(chan struct{}, 16), flooded: make(chan int64, 16), Models: []string{"fake:latest"}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/chat", s.chat)
	mux.HandleFunc("POST /api/generate", generate)
	mux.HandleFunc("GET /api/version", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]string{"version": "0.0.0-fake"})
	})
	mux.HandleFunc("GET /api/tags", func(w http.ResponseWriter, _ *http.Request) {
		var models []map[string]any
		for _, m := range s.Models {
			models = append(models, map[string]any{"name": m, "model": m, "modified_at": time.Time{}, "size": 0})
		}
		writeJSON(w, map[string]any{"models": models})
	})
	mux.HandleFunc("POST /api/show", s.show)
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "Ollama is running") })
	s.Server = httptest.NewServer(mux)
	if t != nil {
		t.Cleanup(s.Close)
	}
	return s
}

// Client returns an Ollama API client for the fake.
func (s *Server) Client() *api.Client {
	u, _ := url.Parse(s.URL)
	return api.NewClient(u, s.Server.Client())
}

// Aborted receives once for each hung request whose client went away (up to 16 pending).
func (s *Server) Aborted() <-chan struct{} { return s.aborted }

// Flooded receives, for each Flood reply once it has ended, the bytes it wrote (up to 16 pending).
func (s *Server) Flooded() <-chan int64 { return s.flooded }

// Requests returns the chat requests received so far, in order.
func (s *Server) Requests() []api.ChatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]api.ChatRequest(nil), s.requests...)
}

// Shown returns the model names /api/show was asked about so far, in order.
func (s *Server) Shown() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.shown...)
}

// show answers /api/show as Ollama does: the model's details when Models lists it (a name without
// a tag is the ":latest" one), else 404 {"error": "model 'NAME' not found"}.
func (s *Server) show(w http.ResponseWriter, r *http.Request) {
	var req api.ShowRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		writeJSON(w, map[string]string{"error": err.Error()})
		return
	}
	name := req.Model
	s.mu.Lock()
	if !s.unrecorded {
		s.shown = append(s.shown, name)
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	for _, m := range s.Models {
		if withTag(m) == withTag(name) {
			show := api.ShowResponse{Details: api.ModelDetails{Format: "gguf", Family: "fake"}, ModifiedAt: time.Time{},
				Capabilities: s.Capabilities}
			if s.ContextLength > 0 {
				show.ModelInfo = map[string]any{"general.architecture": "fake", "fake.context_length": s.ContextLength}
			}
			writeJSON(w, show)
			return
		}
	}
	w.WriteHeader(http.StatusNotFound)
	writeJSON(w, map[string]string{"error": fmt.Sprintf("model '%s' not found", name)})
}

// withTag is name with ":latest" when it has no tag.
func withTag(name string) string {
	if i := strings.LastIndexAny(name, ":/"); i >= 0 && name[i] == ':' {
		return name
	}
	return name + ":latest"
}

func (s *Server) next(req api.ChatRequest) Reply {
	s.mu.Lock()
	if !s.unrecorded {
		s.requests = append(s.requests, req)
	}
	fn := s.fn
	if fn == nil {
		defer s.mu.Unlock()
		if len(s.script) == 0 {
			return Reply{Status: http.StatusInternalServerError, Error: "fakeollama: no scripted reply left"}
		}
		r := s.script[0]
		s.script = s.script[1:]
		return r
	}
	s.mu.Unlock()
	return fn(req)
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var req api.ChatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		writeJSON(w, map[string]string{"error": err.Error()})
		return
	}
	if req.DebugRenderOnly {
		writeJSON(w, api.ChatResponse{Model: req.Model, CreatedAt: time.Now().UTC(), DebugInfo: &api.DebugInfo{RenderedTemplate: s.render(req.Messages)}})
		return
	}
	reply := s.answer(req)
	if reply.Delay > 0 && !s.wait(r, reply.Delay) {
		return
	}
	switch {
	case reply.Hang && reply.CutAfter == 0:
		select {
		case <-r.Context().Done():
			select {
			case s.aborted <- struct{}{}:
			default:
			}
		case <-s.quit:
		}
		return
	case reply.Status != 0 && reply.Status != http.StatusOK:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(reply.Status)
		writeJSON(w, map[string]string{"error": reply.Error})
		return
	case reply.Raw != "":
		fmt.Fprint(w, reply.Raw)
		return
	case reply.Flood > 0:
		w.Header().Set("Content-Type", "application/x-ndjson")
		n := flood(w, reply.Flood, reply.OneLine, req.Model)
		select {
		case s.flooded <- n:
		default:
		}
		return
	}
	streaming := req.Stream == nil || *req.Stream
	final := api.ChatResponse{
		Model: req.Model, CreatedAt: time.Now().UTC(), Done: true, DoneReason: "stop",
		Message: api.Message{Role: "assistant"},
		Metrics: reply.metrics(),
	}
	var logprobs []api.Logprob
	if req.Logprobs {
		logprobs = reply.Logprobs
	}
	if !streaming {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		if reply.NoDone {
			return
		}
		final.Message.Content, final.Message.Thinking = reply.Content, reply.Thinking
		final.Message.ToolCalls = reply.ToolCalls
		final.Logprobs = logprobs
		writeJSON(w, final)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	for _, chunk := range chunks(reply.Thinking, 8) {
		writeJSON(w, api.ChatResponse{Model: req.Model, CreatedAt: time.Now().UTC(), Message: api.Message{Role: "assistant", Thinking: chunk}})
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	for i, chunk := range chunks(reply.Content, 8) {
		if reply.CutAfter > 0 && i == reply.CutAfter {
			s.cut(r, reply.Hang)
			return
		}
		if reply.PieceDelay > 0 && !s.wait(r, reply.PieceDelay) {
			return
		}
		piece := api.ChatResponse{Model: req.Model, CreatedAt: time.Now().UTC(), Message: api.Message{Role: "assistant", Content: chunk}}
		if len(logprobs) > 0 {
			piece.Logprobs, logprobs = logprobs[:1], logprobs[1:]
		}
		writeJSON(w, piece)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	if !reply.NoDone {
		final.Message.ToolCalls = reply.ToolCalls
		final.Logprobs = logprobs
		writeJSON(w, final)
	}
}

// cut ends a stream mid-answer: it stalls until the client gives up when hang, else it drops
// the connection.
func (s *Server) cut(r *http.Request, hang bool) {
	if !hang {
		panic(http.ErrAbortHandler) // net/http closes the connection without a log line
	}
	select {
	case <-r.Context().Done():
		select {
		case s.aborted <- struct{}{}:
		default:
		}
	case <-s.quit:
	}
}

// wait waits d; false when the client or the server went away first.
func (s *Server) wait(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	case <-s.quit:
		return false
	}
}

// render is the prompt the fake's ChatML template makes of msgs: a final assistant message is left
// open for the model to continue (unless NoContinue), else an assistant turn is opened with Lead.
func (s *Server) render(msgs []api.Message) string {
	var b strings.Builder
	for i, m := range msgs {
		b.WriteString("<|im_start|>" + m.Role + "\n" + m.Content)
		if i < len(msgs)-1 || m.Role != "assistant" || s.NoContinue {
			b.WriteString("<|im_end|>\n")
		}
	}
	if len(msgs) == 0 || msgs[len(msgs)-1].Role != "assistant" || s.NoContinue {
		b.WriteString("<|im_start|>assistant\n" + s.Lead)
	}
	return b.String()
}

// conversation keys a conversation by its messages.
func conversation(msgs []api.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Role + "\x00" + m.Content + "\x00")
	}
	return b.String()
}

// maxPending bounds the answers being continued at once.
const maxPending = 1024

// firstKey matches an answer continued right after its first key: a new answer.
var firstKey = regexp.MustCompile(`^\{"[^"\\]*":$`)

// answer is the reply to req. A request that continues an answer (its last message is the
// assistant's, with a format) is answered as Ollama continues one: with the next JSON value of the
// whole answer scripted for the conversation. The whole answer is the next reply (script or
// function) when the continuation is of a first key, or of an answer the fake is not continuing;
// its text, compacted, must start with the continued text, else it is sent as it is (a model that
// answers a continuation with a value of its own, or a server that does not continue) and, when
// scripted, sent again to the same conversation's next request for a whole answer (a
// deterministic model answers the same prompt alike). Logprobs scripted for the whole answer go
// with the value when they spell it, a token across its edge cut to its part within.
func (s *Server) answer(req api.ChatRequest) Reply {
	n := len(req.Messages)
	if s.NoContinue || n == 0 || req.Messages[n-1].Role != "assistant" || req.Messages[n-1].Content == "" || len(req.Format) == 0 {
		s.mu.Lock()
		again, ok := s.replay[conversation(req.Messages)]
		delete(s.replay, conversation(req.Messages))
		if ok && !s.unrecorded {
			s.requests = append(s.requests, req)
		}
		s.mu.Unlock()
		if ok {
			return again
		}
		return s.next(req)
	}
	prefix := strings.TrimPrefix(req.Messages[n-1].Content, s.Lead)
	key := conversation(req.Messages[:n-1])
	s.mu.Lock()
	reply, ok := s.pending[key]
	s.mu.Unlock()
	if ok && !firstKey.MatchString(prefix) && strings.HasPrefix(reply.Content, prefix) {
		s.mu.Lock()
		if !s.unrecorded {
			s.requests = append(s.requests, req)
		}
		s.mu.Unlock()
	} else {
		reply = s.next(req)
		var b bytes.Buffer
		if json.Compact(&b, []byte(reply.Content)) != nil || !strings.HasPrefix(b.String(), prefix) {
			if s.fn == nil {
				// A scripted answer of another shape: sent as it is, and again to the same
				// conversation asked for a whole answer, as a deterministic model would.
				s.mu.Lock()
				if s.replay == nil || len(s.replay) >= maxPending {
					s.replay = map[string]Reply{}
				}
				s.replay[key] = reply
				s.mu.Unlock()
			}
			return reply
		}
		if b.String() != reply.Content {
			reply.Content, reply.Logprobs = b.String(), nil // the logprobs spelt the answer otherwise
		}
		s.mu.Lock()
		if s.pending == nil || len(s.pending) >= maxPending {
			s.pending = map[string]Reply{} // answers left half continued are dropped
		}
		s.pending[key] = reply
		s.mu.Unlock()
	}
	whole := reply.Content
	dec := json.NewDecoder(strings.NewReader(whole[len(prefix):]))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		return Reply{Status: http.StatusInternalServerError, Error: "fakeollama: the scripted answer has no value after " + prefix}
	}
	from, to := len(prefix), len(prefix)+int(dec.InputOffset())
	if strings.TrimSpace(whole[to:]) == "}" {
		s.mu.Lock()
		delete(s.pending, key) // its last value
		s.mu.Unlock()
	}
	var lps []api.Logprob
	at := 0
	for _, lp := range reply.Logprobs {
		start, end := at, at+len(lp.Token)
		at = end
		if end <= from || start >= to {
			continue
		}
		if lo, hi := max(start, from), min(end, to); lo != start || hi != end {
			// A token across the value's edge: a server tokenizing the continuation alone writes
			// its part within, whose alternatives the script does not know.
			lp.Token = lp.Token[lo-start : hi-start]
			lp.TopLogprobs = []api.TokenLogprob{{Token: lp.Token, Logprob: lp.Logprob}}
		}
		lps = append(lps, lp)
	}
	reply.Content, reply.Logprobs = string(v), lps
	reply.CompletionTokens = max(1, len(lps))
	if s.CountPrefix {
		reply.PromptTokens += len(prefix)
	}
	return reply
}

// generate answers /api/generate as a tokenizer would be asked: no text, done, and the prompt's
// tokens in prompt_eval_count, one per whitespace-separated word (strings.Fields), so a test
// knows the count of any text it scripts. It is not a model: it writes nothing, whatever the
// request asks.
func generate(w http.ResponseWriter, r *http.Request) {
	var req api.GenerateRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		writeJSON(w, map[string]string{"error": err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	writeJSON(w, api.GenerateResponse{
		Model: req.Model, CreatedAt: time.Now().UTC(), Done: true, DoneReason: "length",
		Metrics: api.Metrics{PromptEvalCount: len(strings.Fields(req.Prompt))},
	})
}

// metrics are the final message's metrics.
func (r Reply) metrics() api.Metrics {
	total := r.TotalDuration
	if total == 0 {
		total = r.LoadDuration + r.PrefillDuration + r.DecodeDuration
	}
	return api.Metrics{
		PromptEvalCount: r.PromptTokens, PromptEvalCachedCount: r.CachedTokens, EvalCount: r.CompletionTokens,
		LoadDuration: r.LoadDuration, PromptEvalDuration: r.PrefillDuration, EvalDuration: r.DecodeDuration, TotalDuration: total,
	}
}

// flood writes about size bytes of answer text, as many NDJSON lines of 4 KiB of text or as one
// line that never ends, and returns the bytes written when it ends: when all are written or the
// client stops reading.
func flood(w http.ResponseWriter, size int64, oneLine bool, model string) int64 {
	piece := strings.Repeat("x", 4<<10)
	var head, tail string
	if oneLine {
		head = `{"model":"` + model + `","message":{"role":"assistant","content":"`
	} else {
		b, _ := json.Marshal(api.ChatResponse{Model: model, Message: api.Message{Role: "assistant", Content: piece}})
		i := bytes.Index(b, []byte(piece))
		head, tail = string(b[:i]), string(b[i+len(piece):])+"\n"
	}
	var written int64
	write := func(s string) bool {
		n, err := io.WriteString(w, s)
		written += int64(n)
		if f, ok := w.(http.Flusher); ok && err == nil {
			f.Flush()
		}
		return err == nil
	}
	if oneLine && !write(head) {
		return written
	}
	for sent := int64(0); sent < size; sent += int64(len(piece)) {
		chunk := piece
		if !oneLine {
			chunk = head + piece + tail
		}
		if !write(chunk) {
			break
		}
	}
	return written
}

// Pieces are the pieces a streamed answer's Content (or Thinking) is sent in, in order: 8 runes
// each, the last one shorter; one line of the NDJSON stream each.
func Pieces(s string) []string { return chunks(s, 8) }

// chunks splits s into pieces of at most n runes, as a streaming model would.
func chunks(s string, n int) []string {
	var out []string
	r := []rune(s)
	for len(r) > n {
		out = append(out, string(r[:n]))
		r = r[n:]
	}
	if len(r) > 0 {
		out = append(out, string(r))
	}
	return out
}

func writeJSON(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	b = append(b, '\n')
	_, _ = w.Write(b)
}

// Scored is a phase-1 answer in the shape of router.reasoning "none" choosing tool
// ("server.name"), whose logprobs give the use_tool value probability useToolP against false and
// the tool's server probability toolP against rival (another server's name, as its first token);
// every other token is certain. promptTokens is reported as the prompt's size.
func Scored(tool, rival string, toolP, useToolP float64, promptTokens int) Reply {
	server, name, _ := strings.Cut(tool, ".")
	tok := func(s string, alts ...api.TokenLogprob) api.Logprob {
		if len(alts) == 0 {
			alts = []api.TokenLogprob{{Token: s, Logprob: 0}}
		}
		return api.Logprob{TokenLogprob: api.TokenLogprob{Token: s, Logprob: alts[0].Logprob}, TopLogprobs: alts}
	}
	lps := []api.Logprob{
		tok(`{"use_tool":`),
		tok("true", api.TokenLogprob{Token: "true", Logprob: math.Log(useToolP)}, api.TokenLogprob{Token: "false", Logprob: math.Log(1 - useToolP)}),
		tok(`,"calls":`),
		tok(`["`),
		tok(server, api.TokenLogprob{Token: server, Logprob: math.Log(toolP)}, api.TokenLogprob{Token: rival, Logprob: math.Log(1 - toolP)}),
		tok("." + name),
		tok(`"]`),
		tok(`,"needs_more":`), tok("false"), tok(`,"direct":`), tok("true"), tok("}"),
	}
	var text strings.Builder
	for _, lp := range lps {
		text.WriteString(lp.Token)
	}
	return Reply{Content: text.String(), Logprobs: lps, PromptTokens: promptTokens, CompletionTokens: len(lps)}
}

// Selecting reports whether req asks for a phase-1 selection: whole (its format has needs_more)
// or continued (router.prefill: the answer so far opens with a selection's first key), so that a
// scripted model answers both with the whole selection and the fake continues it.
func Selecting(req api.ChatRequest) bool {
	if bytes.Contains(req.Format, []byte(`"needs_more"`)) {
		return true
	}
	n := len(req.Messages)
	if n == 0 || req.Messages[n-1].Role != "assistant" {
		return false
	}
	last := req.Messages[n-1].Content
	return strings.Contains(last, `{"use_tool":`) || strings.Contains(last, `{"reasoning":`)
}
