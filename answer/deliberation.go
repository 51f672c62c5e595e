package answer

import (
	"fmt"
	"strings"

	"github.com/ollama/ollama/api"

	"toolrouter/council"
)

// Deliberation is what a streamed council completion shows of the council's stages 1 and 2 as
// reasoning, before the chairman's answer: each member's answer as it completes, then the
// aggregate ranking.
type Deliberation struct {
	// Show sends the deliberation (council.stream_deliberation); a request's reasoning_effort
	// "none" turns it off for that request.
	Show bool
	// Names names the members (council.reasoning_names); otherwise they are their answers'
	// anonymous labels, as the council's reviewers see them.
	Names bool
}

// shows reports whether a request with think shows the deliberation.
func (d Deliberation) shows(think *api.ThinkValue) bool {
	return d.Show && (think == nil || !think.IsBool() || think.Bool())
}

// councilStream turns the council's events into a streamed completion's deltas: the chairman's
// pieces (stage3_delta) as text, and, when reasoning, the deliberation as thinking. It reports
// whether any text went out, so that the caller sends the final answer whole when none did (an
// answer that awaits approval, a councillor that does not stream).
type councilStream struct {
	onDelta   func(Delta)
	reasoning bool
	names     bool
	sentText  bool // set by the council's events, read once Run has returned
}

// event takes one routing or council event.
func (s *councilStream) event(ev Event) {
	ce, ok := ev.Data.(council.Event)
	if !ok {
		return
	}
	if ce.Type == council.Stage3Delta {
		if d, ok := ce.Data.(council.Delta); ok && d.Text != "" {
			s.sentText = true
			s.onDelta(Delta{Text: d.Text})
		}
		return
	}
	if !s.reasoning {
		return
	}
	if text := s.reasoningOf(ce); text != "" {
		s.onDelta(Delta{Thinking: text})
	}
}

// reasoningOf is the reasoning an event shows, "" for none.
func (s *councilStream) reasoningOf(ev council.Event) string {
	switch ev.Type {
	case council.Stage1Start:
		if st, ok := ev.Data.(council.StageStart); ok {
			if s.names {
				return fmt.Sprintf("Asking the council: %s.\n\n", strings.Join(st.Members, ", "))
			}
			return fmt.Sprintf("Asking the council's %d members.\n\n", len(st.Members))
		}
	case council.Stage1Answer:
		a, ok := ev.Data.(council.Answer)
		if !ok {
			return ""
		}
		switch {
		case a.Error != "" && s.names:
			return fmt.Sprintf("%s did not answer: %s\n\n", a.Model, a.Error)
		case a.Error != "":
			return "A member did not answer.\n\n"
		}
		return fmt.Sprintf("**%s**\n%s\n\n", s.who(a.Model, a.Label), strings.TrimSpace(a.Response))
	case council.Stage2Start:
		return "The members rank each other's answers.\n\n"
	case council.Stage2Complete:
		meta, ok := ev.Metadata.(council.Stage2Metadata)
		if !ok || len(meta.AggregateRankings) == 0 {
			return ""
		}
		var b strings.Builder
		b.WriteString("**Aggregate ranking**\n")
		for i, r := range meta.AggregateRankings {
			fmt.Fprintf(&b, "%d. %s (average position %.2g over %d reviews)\n", i+1, s.who(r.Model, r.Label), r.AverageRank, r.RankingsCount)
		}
		b.WriteString("\n")
		return b.String()
	}
	return ""
}

// who names a member's answer: its label, or its member's name and label.
func (s *councilStream) who(model, label string) string {
	if s.names {
		return fmt.Sprintf("%s (%s)", model, label)
	}
	return label
}
