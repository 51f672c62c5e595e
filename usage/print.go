package usage

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Print writes a summary as a text table: a line naming the window and grouping, then one row per
// group. A group with no key (requests whose credential was missing or refused) is "(none)".
func Print(w io.Writer, s *Summary) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "usage from %s to %s by %s\n", s.Since.UTC().Format(time.RFC3339), s.Until.UTC().Format(time.RFC3339), s.GroupBy)
	fmt.Fprintf(tw, "%s\tREQUESTS\tTOOL CALLS\tTOOL ERRORS\tMODEL CALLS\tPROMPT TOKENS\tCOMPLETION TOKENS\tDURATION MS\n", strings.ToUpper(string(s.GroupBy)))
	for _, r := range s.Rows {
		key := r.Key
		if key == "" {
			key = "(none)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%.0f\n", key, r.Requests, r.ToolCalls, r.ToolErrors, r.ModelCalls,
			r.PromptTokens, r.CompletionTokens, r.DurationMS)
	}
	if len(s.Rows) == 0 {
		fmt.Fprintln(tw, "(no requests in this window)")
	}
	if s.Truncated {
		fmt.Fprintf(tw, "(only the first %d groups are shown)\n", MaxRows)
	}
	return tw.Flush()
}
