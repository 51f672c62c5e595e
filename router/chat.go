package router

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ollama/ollama/api"
)

// errNoDone means the model's stream ended without its final message.
var errNoDone = errors.New("model response ended before it was done")

// complete sends one non-streaming, format-constrained chat request and returns the message text.
// Each call is bounded by CallTimeout and counted in usage.
func (r *Router) complete(ctx context.Context, msgs []api.Message, format []byte, usage *Usage) (string, error) {
	if r.set.CallTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.set.CallTimeout)
		defer cancel()
	}
	stream := false
	req := &api.ChatRequest{
		Model:    r.set.Model,
		Messages: msgs,
		Stream:   &stream,
		Format:   format,
		Options:  r.set.Options,
	}
	if r.set.KeepAlive != 0 {
		req.KeepAlive = &api.Duration{Duration: r.set.KeepAlive}
	}
	var (
		text strings.Builder
		done bool
	)
	usage.LLMCalls++
	err := r.chat.Chat(ctx, req, func(resp api.ChatResponse) error {
		text.WriteString(resp.Message.Content)
		if resp.Done {
			done = true
			usage.PromptTokens += resp.PromptEvalCount
			usage.CompletionTokens += resp.EvalCount
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("model %s: %w", r.set.Model, ctx.Err())
		}
		return "", fmt.Errorf("model %s: %w", r.set.Model, err)
	}
	if !done {
		return "", fmt.Errorf("model %s: %w", r.set.Model, errNoDone)
	}
	return text.String(), nil
}
