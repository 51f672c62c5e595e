package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"toolrouter/answer"
	"toolrouter/approval"
	"toolrouter/redact"
	"toolrouter/router"
	"toolrouter/server"
)

// approved is what approve prints: the call that was held and what running it gave, as POST
// /v1/approve answers.
type approved struct {
	Held approval.Call `json:"held"`
	Call *router.Call  `json:"call"`
}

// approveHeld runs the call held under the token p.rest[0] for p.as, once, through the one
// approval path (router.Router.Approve) and the held calls of the usage database that toolrouter
// mcp and serve keep them in, and prints it. It is the operator's way to approve a call that
// `toolrouter mcp` held for a client without elicitation: a command run in a shell, which no
// model behind an MCP host can call. A refused token is an error naming its code
// (unknown_token, token_used, token_expired, token_identity, tool_changed, tool_unavailable); a
// call that ran and failed is printed and exits 2.
func (p *parts) approveHeld(ctx context.Context, stdout io.Writer) error {
	call, held, err := p.rt.Approve(ctx, p.as, p.rest[0])
	if err != nil {
		pr := answer.Classify(err, p.red, p.logger)
		msg := pr.Message
		if errors.Is(err, approval.ErrUnknownToken) && p.store == nil {
			msg += "; held calls are kept in the usage database (usage.path or usage.postgres_url), which this configuration turns off, so only the process that held the call knows it"
		}
		return fmt.Errorf("%s: %s", pr.Code, msg)
	}
	if call == nil {
		// The route that held it waits for the decision in this process; none does here.
		return errors.New("the call was approved for a route that waits for it")
	}
	if err := printJSON(stdout, approved{Held: held, Call: call}); err != nil {
		return err
	}
	if call.Error != nil {
		return &exitError{exitDegraded, fmt.Errorf("the approved call failed: %s: %s", call.Error.Code, call.Error.Message)}
	}
	return nil
}

// modelCheckTimeout bounds mcp's check that its model server answers.
const modelCheckTimeout = 5 * time.Second

// warnModelUnreachable warns when the model server does not answer within modelCheckTimeout: an
// MCP host starts `toolrouter mcp` without the shell's environment, so a model server set there
// (TOOLROUTER_OLLAMA__HOST, OLLAMA_HOST) is lost and every route would degrade. It runs beside
// the start and never holds it.
func warnModelUnreachable(ctx context.Context, probe server.ModelProbe, host string, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, modelCheckTimeout)
	defer cancel()
	if _, err := probe.List(ctx); err != nil && !errors.Is(context.Cause(ctx), context.Canceled) {
		logger.Warn("the model server does not answer: every route will degrade until it does. An MCP host starts toolrouter mcp "+
			"without your shell's environment: set ollama.host in the config file, or \"env\" in the host's entry for toolrouter",
			"ollama", redact.URL(host), "err", err)
	}
}
