package router

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/provider"
)

// reply is one model answer.
type reply struct {
	Text             string
	ToolCalls        []api.ToolCall
	PromptTokens     int
	CompletionTokens int
	Duration         time.Duration
}

// complete sends one non-streaming chat request (format-constrained, or with tools in native mode)
// and returns the answer. Each call is bounded by CallTimeout.
func (r *Router) complete(ctx context.Context, msgs []api.Message, format []byte, tools api.Tools) (reply, error) {
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
		Tools:    tools,
		Options:  r.set.Options,
	}
	if r.set.KeepAlive != 0 {
		req.KeepAlive = &api.Duration{Duration: r.set.KeepAlive}
	}
	var (
		out  reply
		text strings.Builder
		done bool
	)
	start := time.Now()
	err := r.chat.Chat(ctx, req, func(resp api.ChatResponse) error {
		text.WriteString(resp.Message.Content)
		out.ToolCalls = append(out.ToolCalls, resp.Message.ToolCalls...)
		if resp.Done {
			done = true
			out.PromptTokens += resp.PromptEvalCount
			out.CompletionTokens += resp.EvalCount
		}
		return nil
	})
	out.Duration = time.Since(start)
	out.Text = text.String()
	switch {
	case err != nil && ctx.Err() != nil:
		return out, fmt.Errorf("model %s: %w", r.set.Model, ctx.Err())
	case err != nil:
		return out, fmt.Errorf("model %s: %w", r.set.Model, err)
	case !done:
		return out, fmt.Errorf("model %s: %w", r.set.Model, provider.ErrNoDone)
	}
	return out, nil
}
