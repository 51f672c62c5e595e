package council_test

import (
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/council"
	"toolrouter/internal/fakeollama"
	"toolrouter/internal/fakeopenai"
	"toolrouter/provider"
)

// turn is what a scripted model does with one request.
type turn struct {
	text   string
	status int    // an HTTP error status
	errMsg string // its message
	hang   bool   // never answer
	flood  bool   // answer without end
	delay  time.Duration
	// cutAfter, on the Ollama wire, sends that many pieces of text and then drops the connection,
	// or stalls until the client gives up with hang.
	cutAfter int
	prompt   int // token counts reported
	complete int
	// cached, load, prefill and decode are the server's cached prompt tokens and times (the
	// Ollama wire only; the total is their sum).
	cached                *int
	load, prefill, decode time.Duration
}

// script answers one request of a stage; prompt is every message's content joined.
type script func(stage int, prompt string) turn

// wire is which fake server a member talks to.
type wire string

const (
	ollamaWire wire = "ollama"
	openaiWire wire = "openai"
)

// recorder keeps the prompts a member was sent, by stage.
type recorder struct {
	mu      sync.Mutex // guards prompts
	prompts map[int][]string
}

func (r *recorder) add(stage int, prompt string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.prompts == nil {
		r.prompts = map[int][]string{}
	}
	r.prompts[stage] = append(r.prompts[stage], prompt)
}

func (r *recorder) stage(n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.prompts[n]...)
}

// spec describes one scripted member.
type spec struct {
	name, modelID string
	wire          wire
	key           string // API key (openai wire)
	timeout       time.Duration
	price         council.Price
	script        script
}

// newMember starts the member's fake server (real wire protocol) and returns the member, with
// provider.ChatModel as its Model, and the recorder of what it was sent.
func newMember(t testing.TB, s spec) (council.Member, *recorder) {
	rec := &recorder{}
	handle := func(msgs []string) turn {
		prompt := strings.Join(msgs, "\n\n")
		st := stageOf(prompt)
		rec.add(st, prompt)
		return s.script(st, prompt)
	}
	var client provider.Chatter
	switch s.wire {
	case ollamaWire:
		fake := fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply {
			var msgs []string
			for _, m := range req.Messages {
				msgs = append(msgs, m.Content)
			}
			tr := handle(msgs)
			return fakeollama.Reply{Content: tr.text, Status: tr.status, Error: tr.errMsg, Hang: tr.hang, Delay: tr.delay, CutAfter: tr.cutAfter,
				PromptTokens: tr.prompt, CompletionTokens: tr.complete, Flood: flood(tr),
				CachedTokens: tr.cached, LoadDuration: tr.load, PrefillDuration: tr.prefill, DecodeDuration: tr.decode}
		})
		u, _ := url.Parse(fake.URL)
		client = provider.NewOllama(u, nil)
	case openaiWire:
		fake := fakeopenai.NewFunc(t, func(req fakeopenai.Request) fakeopenai.Reply {
			var msgs []string
			for _, m := range req.Body.Messages {
				msgs = append(msgs, m.Content)
			}
			tr := handle(msgs)
			return fakeopenai.Reply{Content: tr.text, Status: tr.status, Error: tr.errMsg, ErrorType: "server_error", Hang: tr.hang, Delay: tr.delay,
				PromptTokens: tr.prompt, CompletionTokens: tr.complete, Flood: flood(tr)}
		})
		client = provider.NewOpenAI(fake.BaseURL(), s.key, nil)
	default:
		t.Fatalf("unknown wire %q", s.wire)
	}
	return council.Member{
		Name: s.name, ModelID: s.modelID, Timeout: s.timeout, Price: s.price,
		Model: provider.ChatModel{Client: client, Model: s.modelID},
	}, rec
}

// flood is the fakes' Flood for a turn: a gigabyte, far past any response limit.
func flood(tr turn) int64 {
	if tr.flood {
		return 1 << 30
	}
	return 0
}

// stageOf tells the stage from the prompt's instructions.
func stageOf(prompt string) int {
	switch {
	case strings.Contains(prompt, "You are the chairman of a council"):
		return 3
	case strings.Contains(prompt, "FINAL RANKING:\n1. Response <label"):
		return 2
	}
	return 1
}

var (
	responseBlock = regexp.MustCompile(`(?s)<response label="(Response [A-Z]+)">\n(.*?)\n</response>`)
	qualityMark   = regexp.MustCompile(`quality=(\d+)`)
)

// answers returns the labelled answers of a stage-2 or stage-3 prompt.
func answers(prompt string) map[string]string {
	out := map[string]string{}
	for _, m := range responseBlock.FindAllStringSubmatch(prompt, -1) {
		out[m[1]] = m[2]
	}
	return out
}

// rankByQuality writes a review that ranks the answers by their "quality=N" mark, best first.
func rankByQuality(prompt string) string {
	type item struct {
		label string
		q     int
	}
	var items []item
	for l, text := range answers(prompt) {
		q := 0
		if m := qualityMark.FindStringSubmatch(text); m != nil {
			q, _ = strconv.Atoi(m[1])
		}
		items = append(items, item{l, q})
	}
	sort.Slice(items, func(i, j int) bool { return items[i].q > items[j].q })
	var b strings.Builder
	b.WriteString("Each response was weighed against the tool data.\n\n**FINAL RANKING:**\n")
	for i, it := range items {
		fmt.Fprintf(&b, "%d. %s\n", i+1, it.label)
	}
	return b.String()
}

// standard is a member that answers stage 1 with text, reviews by quality and, as a chairman,
// synthesises.
func standard(text string) script {
	return func(stage int, prompt string) turn {
		switch stage {
		case 1:
			return turn{text: text, prompt: 100, complete: 20}
		case 2:
			return turn{text: rankByQuality(prompt), prompt: 300, complete: 40}
		}
		return turn{text: "Synthesis: 407 (the tool's figure).", prompt: 500, complete: 30}
	}
}

// failing answers every request with an HTTP error.
func failing(status int, msg string) script {
	return func(int, string) turn { return turn{status: status, errMsg: msg} }
}

// hanging never answers.
func hanging() script { return func(int, string) turn { return turn{hang: true} } }
