package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"toolrouter/prompts"
	"toolrouter/router"
)

// maxSummaryResult bounds each result's text in a summary.
const maxSummaryResult = 2000

// Summary is the route tool's text content: the decision in one line, then each call with its
// result or error, a long result shortened (the structured content has it whole); a held call
// says how to approve it on ctx's transport.
func Summary(ctx context.Context, out *router.Outcome) string {
	var b strings.Builder
	switch {
	case !out.UseTool:
		b.WriteString("No tool used.")
		if out.Reasoning != "" {
			fmt.Fprintf(&b, " %s", oneLine(out.Reasoning))
		}
		if out.Degraded != "" {
			fmt.Fprintf(&b, " (degraded: %s)", out.Degraded)
		}
	default:
		fmt.Fprintf(&b, "Used %d tool call(s) in %d round(s), stopped: %s.", len(out.Calls), out.Rounds, out.Stopped)
		if out.Reasoning != "" {
			fmt.Fprintf(&b, " %s", oneLine(out.Reasoning))
		}
	}
	for _, c := range out.Calls {
		name := c.Tool
		if c.Server != "" {
			name = c.Server + "." + c.Tool
		}
		fmt.Fprintf(&b, "\n\n%d. %s", c.Step, name)
		switch {
		case c.Pending != nil:
			fmt.Fprintf(&b, " %s", pendingText(ctx, c.Pending))
		case c.Error != nil:
			fmt.Fprintf(&b, " failed (%s): %s", c.Error.Code, c.Error.Message)
		case c.Result != nil && c.Result.IsError:
			fmt.Fprintf(&b, " answered with an error:\n%s", prompts.Shorten(c.Result.Text, maxSummaryResult))
		case c.Result != nil:
			fmt.Fprintf(&b, ":\n%s", prompts.Shorten(c.Result.Text, maxSummaryResult))
		}
	}
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
