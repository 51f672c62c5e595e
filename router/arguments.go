package router

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ollama/ollama/api"

	"toolrouter/inventory"
	"toolrouter/prompts"
	"toolrouter/schema"
)

// invalidArgsError means every attempt produced arguments the schema rejects.
type invalidArgsError struct {
	attempts int
	feedback string
}

func (e *invalidArgsError) Error() string {
	return fmt.Sprintf("arguments still invalid after %d attempts: %s", e.attempts, e.feedback)
}

// arguments runs phase 2: the model writes the arguments under the tool's derived format schema;
// they are validated against the full original schema and, when invalid, the validator's findings
// go back to the model, up to RepairAttempts times. Model failures are returned as errors; arguments
// that stay invalid as *invalidArgsError. Each failed attempt is recorded in out.Attempts.
func (r *Router) arguments(ctx context.Context, ps *promptSet, tool *inventory.Tool, req Request, usage *Usage, out *Outcome) (map[string]any, error) {
	if r.set.ArgumentsTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.set.ArgumentsTimeout)
		defer cancel()
	}
	head, err := ps.argumentsHead(tool)
	if err != nil {
		return nil, err
	}
	tail, err := prompts.ArgumentsQuery(req.Query)
	if err != nil {
		return nil, err
	}
	msgs := []api.Message{{Role: "user", Content: head + tail}}
	var feedback string
	for attempt := 0; attempt <= r.set.RepairAttempts; attempt++ {
		text, err := r.complete(ctx, msgs, tool.Format, usage)
		if err != nil {
			return nil, err
		}
		args, err := tool.Schema.Validate([]byte(strings.TrimSpace(text)))
		if err == nil {
			return args, nil
		}
		var verr *schema.ValidationError
		if !errors.As(err, &verr) {
			return nil, fmt.Errorf("validating arguments: %w", err)
		}
		feedback = verr.Error()
		out.Attempts = append(out.Attempts, Attempt{Output: text, Feedback: feedback})
		repair, err := prompts.Repair(tool.Qualified, feedback)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs,
			api.Message{Role: "assistant", Content: text},
			api.Message{Role: "user", Content: repair})
	}
	return nil, &invalidArgsError{attempts: r.set.RepairAttempts + 1, feedback: feedback}
}
