package provider_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/internal/fakeollama"
	"toolrouter/internal/fakeopenai"
	"toolrouter/provider"
)

// floodSize is what the fake models offer to send: far more than any client may read.
const floodSize = 1 << 30

// maxWritten bounds what a flood may have written once the client stopped: the limit's worth,
// plus what the sockets' buffers hold.
const maxWritten = 32 << 20

// TestResponseLimit floods each client with an answer that does not end (a 433 MB stream once
// took the sidecar to 1.87 GB): the call must fail with ErrResponseTooLarge, and the fake must see
// the client stop reading long before the end. An answer within the limit still comes through.
func TestResponseLimit(t *testing.T) {
	const limit = 16 << 10
	within := strings.Repeat("y", limit-1024)
	ollama := func(t *testing.T, r fakeollama.Reply) (chatter, <-chan int64) {
		f := fakeollama.New(t, r)
		u, _ := url.Parse(f.URL)
		return provider.NewOllama(u, nil, provider.WithMaxResponseBytes(limit)), f.Flooded()
	}
	openai := func(t *testing.T, r fakeopenai.Reply) (chatter, <-chan int64) {
		f := fakeopenai.New(t, r)
		return provider.NewOpenAI(f.BaseURL(), "", nil, provider.WithMaxResponseBytes(limit)), f.Flooded()
	}
	// model is a ChatModel over api.Client, which has no limit of its own: ChatModel's applies.
	model := func(t *testing.T, r fakeollama.Reply) (chatter, <-chan int64) {
		f := fakeollama.New(t, r)
		return completer{provider.ChatModel{Client: f.Client(), Model: "m", Stream: true, MaxResponseBytes: limit}}, f.Flooded()
	}
	tests := []struct {
		name   string
		start  func(t *testing.T) (chatter, <-chan int64)
		stream bool
		flood  bool // false: the answer is within the limit
	}{
		{"ollama stream flood", func(t *testing.T) (chatter, <-chan int64) { return ollama(t, fakeollama.Reply{Flood: floodSize}) }, true, true},
		{"ollama one endless line", func(t *testing.T) (chatter, <-chan int64) {
			return ollama(t, fakeollama.Reply{Flood: floodSize, OneLine: true})
		}, false, true},
		{"ollama within the limit", func(t *testing.T) (chatter, <-chan int64) { return ollama(t, fakeollama.Reply{Content: within}) }, false, false},
		{"ollama stream within the limit", func(t *testing.T) (chatter, <-chan int64) { return ollama(t, fakeollama.Reply{Content: within}) }, true, false},
		{"openai stream flood", func(t *testing.T) (chatter, <-chan int64) { return openai(t, fakeopenai.Reply{Flood: floodSize}) }, true, true},
		{"openai endless body", func(t *testing.T) (chatter, <-chan int64) { return openai(t, fakeopenai.Reply{Flood: floodSize}) }, false, true},
		{"openai within the limit", func(t *testing.T) (chatter, <-chan int64) { return openai(t, fakeopenai.Reply{Content: within}) }, false, false},
		{"openai stream within the limit", func(t *testing.T) (chatter, <-chan int64) { return openai(t, fakeopenai.Reply{Content: within}) }, true, false},
		{"ChatModel over api.Client flood", func(t *testing.T) (chatter, <-chan int64) { return model(t, fakeollama.Reply{Flood: floodSize}) }, true, true},
		{"ChatModel within the limit", func(t *testing.T) (chatter, <-chan int64) { return model(t, fakeollama.Reply{Content: within}) }, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, flooded := tc.start(t)
			tr := chat(c, tc.stream)
			if !tc.flood {
				if tr.err != nil || !tr.done || strings.Join(tr.contents, "") != within {
					t.Fatalf("got err %v, done %v, %d bytes; want the whole answer of %d bytes", tr.err, tr.done, len(strings.Join(tr.contents, "")), len(within))
				}
				return
			}
			if !errors.Is(tr.err, provider.ErrResponseTooLarge) {
				t.Fatalf("got error %v, want ErrResponseTooLarge", tr.err)
			}
			select {
			case n := <-flooded:
				if n > maxWritten {
					t.Errorf("the fake wrote %d bytes before the client stopped, want at most %d", n, maxWritten)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the fake was still writing 20s after the call returned: the client did not stop reading")
			}
		})
	}
}

// completer shows a ChatModel as a chatter for chat: one callback with the whole answer.
type completer struct{ m provider.ChatModel }

func (c completer) Chat(ctx context.Context, _ *api.ChatRequest, fn api.ChatResponseFunc) error {
	out, err := c.m.Complete(ctx, []provider.Message{{Role: "user", Content: "hi"}})
	if err != nil {
		return err
	}
	return fn(api.ChatResponse{Message: api.Message{Content: out.Text}, Done: true})
}
