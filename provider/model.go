package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/tokens"
)

// Message is one provider-neutral chat message.
type Message struct {
	// Role is "system", "user" or "assistant".
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Chatter is one chat call in Ollama's types; *Ollama, *OpenAI and *api.Client have it.
type Chatter interface {
	Chat(ctx context.Context, req *api.ChatRequest, fn api.ChatResponseFunc) error
}

// ChatModel is one model of a chat server, answering whole conversations: the council's view of a
// model. It works with any Chatter, so the same type serves Ollama and OpenAI-compatible servers.
type ChatModel struct {
	Client Chatter
	// Model is the model id the server knows ("qwen2.5:7b", "gpt-4o-mini").
	Model string
	// Options are Ollama-style model options (temperature, top_p, seed, num_predict, stop, ...);
	// the OpenAI client translates the ones the chat-completions API has.
	Options map[string]any
	// KeepAlive, when not 0, is sent as Ollama's keep_alive (ignored by OpenAI servers).
	KeepAlive time.Duration
	// Stream asks the server to stream the answer; the text is the same, but long answers keep
	// the connection busy instead of idle behind proxies.
	Stream bool
	// MaxResponseBytes bounds the answer, whatever the Client (0:
	// DefaultMaxResponseBytes); past it Complete stops reading and fails with
	// ErrResponseTooLarge. The clients of this package bound it themselves as well.
	MaxResponseBytes int
	// Window, when not 0, is the most prompt tokens the model may be sent (its num_ctx minus the
	// room kept for the answer): a prompt Estimator puts over it is not sent (ErrPromptOverWindow).
	// Ollama is also told not to truncate or shift a prompt, so an overflow is never silent.
	Window    int
	Estimator *tokens.Estimator
}

// ErrPromptOverWindow means a prompt was not sent because it would not fit the model's window.
var ErrPromptOverWindow = errors.New("prompt over the model's context window")

// Complete sends msgs and returns the whole answer (see Call). An answer that ends before the
// server's final message is an error (ErrNoDone), never a silently truncated text; so is one past
// MaxResponseBytes (ErrResponseTooLarge).
func (m ChatModel) Complete(ctx context.Context, msgs []Message) (Answer, error) {
	return m.complete(ctx, msgs, m.Stream, nil)
}

// CompleteStream is Complete with the answer streamed, whatever m.Stream says: onText receives
// each piece of the answer's text as the server sends it, before the call returns. The bounds are
// Complete's; a piece past MaxResponseBytes is not passed on.
func (m ChatModel) CompleteStream(ctx context.Context, msgs []Message, onText func(string)) (Answer, error) {
	return m.complete(ctx, msgs, true, onText)
}

func (m ChatModel) complete(ctx context.Context, msgs []Message, stream bool, onText func(string)) (Answer, error) {
	off := false
	req := &api.ChatRequest{Model: m.Model, Messages: make([]api.Message, len(msgs)), Stream: &stream, Options: m.Options,
		Truncate: &off, Shift: &off}
	for i, msg := range msgs {
		req.Messages[i] = api.Message{Role: msg.Role, Content: msg.Content}
	}
	var est tokens.Estimate
	if m.Window > 0 && m.Estimator != nil {
		if est = m.Estimator.Messages(m.Model, req.Messages); est.Tokens > m.Window {
			return Answer{Model: m.Model}, fmt.Errorf("model %s: %w: about %d tokens, the window takes %d; not sent", m.Model, ErrPromptOverWindow, est.Tokens, m.Window)
		}
	}
	if m.KeepAlive != 0 {
		req.KeepAlive = &api.Duration{Duration: m.KeepAlive}
	}
	a, err := Call(ctx, m.Client, req, CallOptions{MaxResponseBytes: m.MaxResponseBytes, OnText: onText})
	if err != nil {
		return a, fmt.Errorf("model %s: %w", m.Model, err)
	}
	if est.Raw > 0 {
		m.Estimator.Observe(m.Model, est, a.Stats.PromptTokens, false)
	}
	return a, nil
}

// String names the model for logs.
func (m ChatModel) String() string { return m.Model }
