package router

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/internal/errtext"
	"toolrouter/inventory"
	"toolrouter/prefill"
	"toolrouter/prompts"
	"toolrouter/schema"
	"toolrouter/tokens"
	"toolrouter/trajectory"
)

// arguments runs phase 2 for one call: the model writes the arguments under the tool's derived
// format schema; "$result_of_step_N" references are replaced by earlier results; the arguments are
// validated against the full original schema and, when invalid, the findings go back to the model,
// up to RepairAttempts times. The outcome is recorded in c (Arguments, or Error with Attempts). It
// returns the model's error when the model itself failed, so the loop can apply the failure mode.
func (tp *twoPhase) arguments(reqCtx context.Context, c *Call, p planned, finished []Call, priors []prompts.Prior) error {
	tool := p.tool
	t0 := time.Now()
	defer func() { c.ArgumentsMS = ms(time.Since(t0)) }()
	ctx := reqCtx
	if tp.r.set.ArgumentsTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, tp.r.set.ArgumentsTimeout)
		defer cancel()
	}
	head, err := tp.ps.argumentsHead(tool)
	if err != nil {
		return err
	}
	format := []byte(tool.Format)
	if len(priors) > 0 {
		if format, err = schema.AllowReferences(tool.Format); err != nil {
			return err
		}
	}
	priors = append([]prompts.Prior(nil), priors...) // calls of a round trim their own copies
	// With a shared prefix, phase 2 opens with phase 1's system prompt, so a model server with one
	// cache slot keeps the inventory's prefill between the phases; it is the first thing cut when
	// the prompt is over the window.
	shared := tp.r.set.SharedPrefix
	w := tp.window()
	w.prefix = head
	msgs, est, err := w.fit(tp.j, c.Round, "phase-2 prompt", tokens.Estimate{}, func() ([]api.Message, error) {
		text, err := prompts.ArgumentsPrompt(head.text, tp.query, c.Task, priors)
		user := api.Message{Role: "user", Content: text}
		if shared {
			return []api.Message{{Role: "system", Content: tp.view.text}, user}, err
		}
		return []api.Message{user}, err
	}, func(int) (string, bool) {
		if !shared {
			return "", false
		}
		shared = false
		return "phase 2 without phase 1's shared prefix", true
	}, shortenPriors(priors))
	if err != nil {
		return err
	}
	var feedback string
	for attempt := 0; attempt <= tp.r.set.RepairAttempts; attempt++ {
		ts := time.Now()
		rep, err := tp.r.argumentsAnswer(ctx, msgs, format, est)
		step := tp.j.modelCall(timingArguments, StepArguments, c.Round, ts, rep)
		step.Call, step.Tool = c.Step, tool.Qualified
		if err != nil {
			step.Error = err.Error()
			tp.j.step(step)
			if tp.j.recording() {
				tp.j.record("arguments", step, msgs, format, rep.Text, nil, nil, trajectory.Outcome{Error: err.Error()})
			}
			if expired(reqCtx) {
				c.Error = &Error{Code: CodeDeadline, Message: errtext.OneLine(err.Error())}
				return nil
			}
			c.Error = &Error{Code: CodeModelFailed, Message: errtext.OneLine(err.Error())}
			return err
		}
		args, verr := validArguments(tool, rep.Text, finished)
		if verr == nil {
			c.Arguments = args
			tp.j.step(step)
			if tp.j.recording() {
				tp.j.record("arguments", step, msgs, format, rep.Text, args, nil, trajectory.Outcome{SchemaValid: boolPtr(true)})
			}
			return nil
		}
		feedback = verr.Error()
		step.Detail = feedback
		tp.j.step(step)
		if tp.j.recording() {
			tp.j.record("arguments", step, msgs, format, rep.Text, nil, feedback, trajectory.Outcome{SchemaValid: boolPtr(false)})
		}
		c.Attempts = append(c.Attempts, Attempt{Output: rep.Text, Feedback: feedback})
		repair, err := prompts.Repair(tool.Qualified, feedback)
		if err != nil {
			return err
		}
		msgs = append(msgs, api.Message{Role: "assistant", Content: rep.Text}, api.Message{Role: "user", Content: repair})
	}
	c.Error = &Error{Code: CodeInvalidArguments,
		Message: fmt.Sprintf("arguments still invalid after %d attempts: %s", tp.r.set.RepairAttempts+1, feedback)}
	return nil
}

// validArguments decodes the model's answer, substitutes references and validates the result.
// Every problem is a *schema.ValidationError whose message goes back to the model.
func validArguments(tool *inventory.Tool, text string, finished []Call) (map[string]any, error) {
	args, ok := plainArguments(text)
	if !ok {
		var decoded map[string]any
		if err := decodeObject(text, &decoded); err != nil || decoded == nil {
			return nil, &schema.ValidationError{Issues: []schema.Issue{{Path: "/", Message: "the answer must be one JSON object of arguments"}}}
		}
		args = decoded
	}
	if issues := substitute(args, finished); len(issues) > 0 {
		return nil, &schema.ValidationError{Issues: issues}
	}
	if err := tool.Schema.ValidateValue(args); err != nil {
		var verr *schema.ValidationError
		if errors.As(err, &verr) {
			return nil, verr
		}
		return nil, &schema.ValidationError{Issues: []schema.Issue{{Path: "/", Message: errtext.OneLine(err.Error())}}}
	}
	return args, nil
}

// argumentsAnswer is one phase-2 answer: continued value by value when prefilling and the format
// fixes the object's text but for its values (prefill.ObjectValues), else a whole object.
func (r *Router) argumentsAnswer(ctx context.Context, msgs []api.Message, format []byte, est tokens.Estimate) (reply, error) {
	if lead, ok := r.continuing(ctx); ok {
		if values, ok := prefill.ObjectValues(format); ok {
			partial, err := r.continueObject(ctx, msgs, est, lead, values)
			if !errors.Is(err, prefill.ErrNotContinued) || ctx.Err() != nil {
				return partial, err
			}
			r.stopPrefill(err)
			whole, err := r.complete(ctx, msgs, format, nil, est, 0)
			return afterContinuation(partial, whole), err
		}
	}
	return r.complete(ctx, msgs, format, nil, est, 0)
}
