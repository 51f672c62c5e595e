package provider_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"toolrouter/internal/fakeollama"
	"toolrouter/provider"
)

// chatter is what both clients offer.
type chatter interface {
	Chat(ctx context.Context, req *api.ChatRequest, fn api.ChatResponseFunc) error
}

type transcript struct {
	contents []string
	done     bool
	prompt   int
	err      error
}

func chat(c chatter, stream bool) transcript {
	var tr transcript
	req := &api.ChatRequest{Model: "m", Stream: &stream, Messages: []api.Message{{Role: "user", Content: "hi"}}}
	tr.err = c.Chat(context.Background(), req, func(r api.ChatResponse) error {
		tr.contents = append(tr.contents, r.Message.Content)
		if r.Done {
			tr.done, tr.prompt = true, r.PromptEvalCount
		}
		return nil
	})
	return tr
}

// TestChatMatchesAPIClient sends the same server behaviour to api.Client and provider.Ollama and
// requires the same callbacks and the same kind of error.
func TestChatMatchesAPIClient(t *testing.T) {
	long := strings.Repeat("x", 200<<10) // longer than the reader's buffer
	tests := []struct {
		name   string
		reply  fakeollama.Reply
		stream bool
	}{
		{"non-streaming", fakeollama.Reply{Content: `{"a":1}`, PromptTokens: 12}, false},
		{"streaming", fakeollama.Reply{Content: "hello there, council", PromptTokens: 7}, true},
		{"long line", fakeollama.Reply{Content: long}, false},
		{"server error", fakeollama.Reply{Status: http.StatusInternalServerError, Error: "out of memory"}, false},
		{"model not found", fakeollama.Reply{Status: http.StatusNotFound, Error: `model "m" not found`}, false},
		{"no done", fakeollama.Reply{Content: "partial", NoDone: true}, true},
		{"error line", fakeollama.Reply{Raw: `{"error":"model runner crashed"}` + "\n"}, false},
		{"garbage", fakeollama.Reply{Raw: "<html>proxy error</html>\n"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			model := fakeollama.New(t, tc.reply, tc.reply)
			u, _ := url.Parse(model.URL)
			want := chat(api.NewClient(u, http.DefaultClient), tc.stream)
			got := chat(provider.NewOllama(u, nil), tc.stream)
			if !reflect.DeepEqual(got.contents, want.contents) || got.done != want.done || got.prompt != want.prompt {
				t.Errorf("got %d chunks done=%v prompt=%d, want %d chunks done=%v prompt=%d",
					len(got.contents), got.done, got.prompt, len(want.contents), want.done, want.prompt)
			}
			if (got.err == nil) != (want.err == nil) {
				t.Fatalf("got err %v, want %v", got.err, want.err)
			}
			var gs, ws api.StatusError
			if errors.As(want.err, &ws) {
				if !errors.As(got.err, &gs) || gs.StatusCode != ws.StatusCode || gs.ErrorMessage != ws.ErrorMessage {
					t.Errorf("got err %#v, want %#v", got.err, want.err)
				}
			} else if want.err != nil && !strings.Contains(got.err.Error(), strings.TrimSpace(want.err.Error())) {
				t.Errorf("got err %q, want it to contain %q", got.err, want.err)
			}
		})
	}
}

func TestList(t *testing.T) {
	model := fakeollama.New(t)
	model.Models = []string{"qwen2.5:7b", "llama3.2:3b"}
	u, _ := url.Parse(model.URL)
	list, err := provider.NewOllama(u, nil).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range list.Models {
		names = append(names, m.Name)
	}
	if fmt.Sprint(names) != "[qwen2.5:7b llama3.2:3b]" {
		t.Errorf("got %v, want the fake's models", names)
	}
	model.Close()
	if _, err := provider.NewOllama(u, nil).List(context.Background()); err == nil {
		t.Error("List on a closed server succeeded")
	}
}

func BenchmarkChat(b *testing.B) {
	model := fakeollama.NewFunc(b, func(api.ChatRequest) fakeollama.Reply {
		return fakeollama.Reply{Content: `{"reasoning":"r","use_tool":true,"tool":"calculator.add","direct":true}`}
	})
	u, _ := url.Parse(model.URL)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	for _, c := range []struct {
		name string
		c    chatter
	}{{"api.Client", api.NewClient(u, hc)}, {"provider.Ollama", provider.NewOllama(u, hc)}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if tr := chat(c.c, false); tr.err != nil || !tr.done {
					b.Fatal(tr.err)
				}
			}
		})
	}
}
