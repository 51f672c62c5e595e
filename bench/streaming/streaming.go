// Package streaming measures when the words of a chat completion reach its client: for model
// "council", when the deliberation's reasoning and the chairman's first words arrive against the
// end of stage 2 and the chairman's own first token, and how many pieces the chairman's text comes
// in; for a single model, when its first words arrive. A Proxy in front of the model server times
// every model call as the sidecar sees it (its request, its first piece of text, its end), so both
// sides are read on one clock.
package streaming

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ollama/ollama/api"
)

// Stage names a model call as the proxy classifies it, from its prompt.
type Stage string

// The stages of the calls the proxy sees.
const (
	StageRouting    Stage = "routing"    // the router's calls: a format or tools
	StageMember     Stage = "stage1"     // a council member's answer
	StageReview     Stage = "stage2"     // a council member's review
	StageChairman   Stage = "stage3"     // the chairman's answer
	StageCompletion Stage = "completion" // a named model's answer to a chat completion
)

// stageOf classifies a chat request by its prompt (the council's prompts' first words).
func stageOf(req api.ChatRequest) Stage {
	if len(req.Format) > 0 || len(req.Tools) > 0 {
		return StageRouting
	}
	var all strings.Builder
	for _, m := range req.Messages {
		all.WriteString(m.Content)
	}
	switch s := all.String(); {
	case strings.Contains(s, "You are the chairman of a council"):
		return StageChairman
	case strings.Contains(s, "You are reviewing answers"):
		return StageReview
	case strings.Contains(s, "You are one member of a council"):
		return StageMember
	}
	return StageCompletion
}

// Call is one model call as the proxy saw it.
type Call struct {
	Stage Stage
	// Received is when the sidecar's request arrived; FirstText when the server's first piece of
	// answer text passed back; Done when its response ended.
	Received, FirstText, Done time.Time
	// Pieces counts the response's lines that carried answer text.
	Pieces int
}

// Proxy passes the sidecar's model calls to the model server line by line, flushing each, and
// times them. It is safe for concurrent use.
type Proxy struct {
	upstream *url.URL
	client   *http.Client
	srv      *httptest.Server

	mu    sync.Mutex // guards calls
	calls []Call
}

// NewProxy starts a proxy to the Ollama server at upstream; Close stops it.
func NewProxy(upstream string) (*Proxy, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, fmt.Errorf("parsing the model server's URL: %w", err)
	}
	p := &Proxy{upstream: u, client: &http.Client{}}
	p.srv = httptest.NewServer(p)
	return p, nil
}

// URL is the proxy's base URL, to configure as the sidecar's Ollama host.
func (p *Proxy) URL() string { return p.srv.URL }

// Close stops the proxy.
func (p *Proxy) Close() { p.srv.Close() }

// Take returns the calls recorded since the last Take, in the order they ended.
func (p *Proxy) Take() []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.calls
	p.calls = nil
	return out
}

// maxBody bounds a request body the proxy reads to classify it.
const maxBody = 16 << 20

// ServeHTTP forwards one request; /api/chat responses are timed.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	call := Call{Received: time.Now()}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	chat := r.URL.Path == "/api/chat"
	if chat {
		var req api.ChatRequest
		_ = json.Unmarshal(body, &req)
		call.Stage = stageOf(req)
	}
	target := *p.upstream
	target.Path, target.RawQuery = strings.TrimSuffix(p.upstream.Path, "/")+r.URL.Path, r.URL.RawQuery
	out, err := http.NewRequestWithContext(r.Context(), r.Method, target.String(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	resp, err := p.client.Do(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	flusher, _ := w.(http.Flusher)
	rd := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := rd.ReadBytes('\n')
		if len(line) > 0 {
			if chat {
				var m api.ChatResponse
				if json.Unmarshal(line, &m) == nil && m.Message.Content != "" {
					if call.Pieces == 0 {
						call.FirstText = time.Now()
					}
					call.Pieces++
				}
			}
			if _, werr := w.Write(line); werr != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if err != nil {
			break
		}
	}
	if chat {
		call.Done = time.Now()
		p.mu.Lock()
		p.calls = append(p.calls, call)
		p.mu.Unlock()
	}
}

// Completion is what one streamed chat completion's client saw, in milliseconds from its request.
type Completion struct {
	// FirstReasoningMS is the first reasoning_content delta's arrival (-1: none); RankingMS the
	// aggregate ranking's (-1: none).
	FirstReasoningMS, RankingMS float64
	// FirstContentMS is the first content delta's arrival (-1: none); TotalMS the end ([DONE]).
	FirstContentMS, TotalMS float64
	// ContentPieces counts the content deltas; Content joins them.
	ContentPieces int
	Content       string
	// AnsweredBy is x_toolrouter's answered_by on the last chunk.
	AnsweredBy string
}

// Stream makes one streamed chat completion of model with query at the sidecar's base URL and
// times what arrives; maxTokens, when > 0, is sent as max_tokens.
func Stream(ctx context.Context, c *http.Client, base, model, query string, maxTokens int) (Completion, time.Time, error) {
	in := map[string]any{"model": model, "stream": true, "messages": []map[string]string{{"role": "user", "content": query}}}
	if maxTokens > 0 {
		in["max_tokens"] = maxTokens
	}
	body, _ := json.Marshal(in)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return Completion{}, time.Time{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return Completion{}, start, fmt.Errorf("streaming a %s completion: %w", model, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return Completion{}, start, fmt.Errorf("streaming a %s completion: status %d: %s", model, resp.StatusCode, b)
	}
	out := Completion{FirstReasoningMS: -1, RankingMS: -1, FirstContentMS: -1}
	since := func() float64 { return float64(time.Since(start).Microseconds()) / 1000 }
	var content strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 8<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			out.TotalMS = since()
			out.Content = content.String()
			return out, start, nil
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content          string `json:"content"`
					ReasoningContent string `json:"reasoning_content"`
				} `json:"delta"`
			} `json:"choices"`
			XToolrouter *struct {
				AnsweredBy string `json:"answered_by"`
			} `json:"x_toolrouter"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			return out, start, fmt.Errorf("reading a %s completion: %w", model, err)
		}
		if chunk.Error != nil {
			return out, start, fmt.Errorf("a %s completion failed: %s", model, chunk.Error.Message)
		}
		if chunk.XToolrouter != nil {
			out.AnsweredBy = chunk.XToolrouter.AnsweredBy
		}
		for _, ch := range chunk.Choices {
			if r := ch.Delta.ReasoningContent; r != "" {
				if out.FirstReasoningMS < 0 {
					out.FirstReasoningMS = since()
				}
				if out.RankingMS < 0 && strings.Contains(r, "Aggregate ranking") {
					out.RankingMS = since()
				}
			}
			if t := ch.Delta.Content; t != "" {
				if out.FirstContentMS < 0 {
					out.FirstContentMS = since()
				}
				out.ContentPieces++
				content.WriteString(t)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return out, start, fmt.Errorf("reading a %s completion: %w", model, err)
	}
	return out, start, fmt.Errorf("a %s completion ended without [DONE]", model)
}

// CouncilRun is one council completion with the proxy's view of its model calls.
type CouncilRun struct {
	Completion
	// Stage2EndMS is when the last stage-2 review ended at the sidecar; ChairmanFirstMS when the
	// chairman's first piece of text passed the proxy; ChairmanOwnMS the chairman's own time to
	// its first piece (from its request). All from the completion's request.
	Stage2EndMS, ChairmanFirstMS, ChairmanOwnMS float64
	// ChairmanPieces counts the chairman's lines with text, as the server sent them.
	ChairmanPieces int
	// BoundMS is the target for FirstContentMS: Stage2EndMS + ChairmanOwnMS + 50 ms.
	BoundMS float64
	// AfterChairmanMS is FirstContentMS − ChairmanFirstMS: the sidecar's own delay on the first
	// words.
	AfterChairmanMS float64
}

// Met reports whether the run met both targets: its first words by BoundMS, and the chairman's
// text in as many pieces as the server sent.
func (r CouncilRun) Met() bool {
	return r.FirstContentMS >= 0 && r.FirstContentMS <= r.BoundMS && r.ContentPieces == r.ChairmanPieces
}

// TargetSlackMS is what the first words may take beyond the end of stage 2 plus the chairman's
// own first token.
const TargetSlackMS = 50

// Council reads a council completion's model calls (calls, taken from the proxy after it) against
// what its client saw from start.
func Council(c Completion, start time.Time, calls []Call) (CouncilRun, error) {
	r := CouncilRun{Completion: c}
	ms := func(t time.Time) float64 { return float64(t.Sub(start).Microseconds()) / 1000 }
	var s2 time.Time
	var chair *Call
	for i, call := range calls {
		switch call.Stage {
		case StageReview:
			if call.Done.After(s2) {
				s2 = call.Done
			}
		case StageChairman:
			chair = &calls[i]
		}
	}
	if chair == nil || chair.Pieces == 0 {
		return r, fmt.Errorf("the proxy saw no chairman's text among %d calls", len(calls))
	}
	if s2.IsZero() {
		return r, fmt.Errorf("the proxy saw no stage-2 review among %d calls: peer review needs two members that answer", len(calls))
	}
	r.Stage2EndMS, r.ChairmanFirstMS = ms(s2), ms(chair.FirstText)
	r.ChairmanOwnMS = float64(chair.FirstText.Sub(chair.Received).Microseconds()) / 1000
	r.ChairmanPieces = chair.Pieces
	r.BoundMS = r.Stage2EndMS + r.ChairmanOwnMS + TargetSlackMS
	r.AfterChairmanMS = r.FirstContentMS - r.ChairmanFirstMS
	return r, nil
}

// Median returns the median of get over runs (0 for none).
func Median[T any](runs []T, get func(T) float64) float64 {
	v := make([]float64, len(runs))
	for i, r := range runs {
		v[i] = get(r)
	}
	slices.Sort(v)
	switch n := len(v); {
	case n == 0:
		return 0
	case n%2 == 0:
		return (v[n/2-1] + v[n/2]) / 2
	default:
		return v[n/2]
	}
}
