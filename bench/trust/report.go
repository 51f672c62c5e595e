package trust

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Target is what answers: toolrouter, or the model server itself.
type Target string

// Targets.
const (
	Toolrouter Target = "toolrouter"
	Plain      Target = "plain Ollama"
)

// Key names one row: who answered, at which door, under which tool_choice.
type Key struct {
	Target Target
	Door   Door
	Choice Choice
}

// Tally adds up the answers of one row.
type Tally struct {
	Requests, Errors    int
	Calls, Named, Valid int
	Honoured            int
	Scored, Accurate    int // questions scored by BFCL's checker, and those right
	ModelCalls, Decoded int
	Walls               []time.Duration
	FirstError          string
}

// Add counts one answer and its score.
func (t *Tally) Add(a Answer, s Score) {
	t.Requests++
	if a.Err != "" {
		t.Errors++
		if t.FirstError == "" {
			t.FirstError = a.Err
		}
		return
	}
	t.Calls += s.Calls
	t.Named += s.Named
	t.Valid += s.Valid
	if s.Honoured {
		t.Honoured++
	}
	t.ModelCalls += a.ModelCalls
	t.Decoded += a.Decoded
	t.Walls = append(t.Walls, a.Wall)
}

// Result is a run: each row's tally, and the doors skipped with why.
type Result struct {
	Rows    map[Key]*Tally
	Skipped []string
	// Accuracy says BFCL's checker scored the auto answers.
	Accuracy bool
}

// Row returns the tally of k, made on first use.
func (r *Result) Row(k Key) *Tally {
	if r.Rows == nil {
		r.Rows = map[Key]*Tally{}
	}
	t, ok := r.Rows[k]
	if !ok {
		t = &Tally{}
		r.Rows[k] = t
	}
	return t
}

func pct(n, d int) string {
	if d == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f%% (%d/%d)", 100*float64(n)/float64(d), n, d)
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// keys are the rows of r in report order.
func (r *Result) keys() []Key {
	var out []Key
	for _, t := range []Target{Toolrouter, Plain} {
		for _, d := range Doors {
			for _, c := range Choices {
				if _, ok := r.Rows[Key{t, d, c}]; ok {
					out = append(out, Key{t, d, c})
				}
			}
		}
	}
	return out
}

// Markdown is the run's two tables: trust (calls naming a function of the request, arguments
// that validate, tool_choice honoured; BFCL accuracy with -accuracy) and cost (tool_choice auto:
// model calls, decoded tokens and wall time per request, toolrouter against the model server's own
// tool calling at the same door).
func Markdown(r *Result) string {
	var b strings.Builder
	b.WriteString("| answered by | door | tool_choice | requests | errors | calls | calls naming a function of the request | arguments valid against its schema | tool_choice honoured |")
	if r.Accuracy {
		b.WriteString(" BFCL accuracy |")
	}
	b.WriteString("\n|---|---|---|---:|---:|---:|---:|---:|---:|")
	if r.Accuracy {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, k := range r.keys() {
		t := r.Rows[k]
		honoured := pct(t.Honoured, t.Requests-t.Errors)
		if k.Choice == Auto {
			honoured = "— (any answer)"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %d | %d | %d | %s | %s | %s |", k.Target, k.Door.Path(), k.Choice, t.Requests, t.Errors, t.Calls,
			pct(t.Named, t.Calls), pct(t.Valid, t.Calls), honoured)
		if r.Accuracy {
			acc := "—"
			if t.Scored > 0 {
				acc = pct(t.Accurate, t.Scored)
			}
			fmt.Fprintf(&b, " %s |", acc)
		}
		b.WriteString("\n")
	}
	var errs []string
	for _, k := range r.keys() {
		if t := r.Rows[k]; t.FirstError != "" {
			errs = append(errs, fmt.Sprintf("%s at `%s`, %s: %s", k.Target, k.Door.Path(), k.Choice, t.FirstError))
		}
	}
	if len(errs) > 0 {
		b.WriteString("\nFirst error of each row with errors (an error is not counted in the shares):\n\n")
		for _, e := range errs {
			fmt.Fprintf(&b, "- %s\n", e)
		}
	}
	if len(r.Skipped) > 0 {
		b.WriteString("\nSkipped:\n\n")
		for _, s := range r.Skipped {
			fmt.Fprintf(&b, "- %s\n", s)
		}
	}
	b.WriteString("\n**Cost of the two phases** (tool_choice auto; per answered request: model calls, decoded tokens, median wall time seen by the client):\n\n")
	b.WriteString("| answered by | door | model calls | decoded tokens | wall ms |\n|---|---|---:|---:|---:|\n")
	type cost struct{ calls, tokens, wall float64 }
	costs := map[Key]cost{}
	for _, k := range r.keys() {
		t := r.Rows[k]
		if k.Choice != Auto || t.Requests == t.Errors {
			continue
		}
		n := float64(t.Requests - t.Errors)
		c := cost{float64(t.ModelCalls) / n, float64(t.Decoded) / n, float64(median(t.Walls).Microseconds()) / 1000}
		costs[k] = c
		fmt.Fprintf(&b, "| %s | `%s` | %.2f | %.1f | %.1f |\n", k.Target, k.Door.Path(), c.calls, c.tokens, c.wall)
	}
	// Toolrouter against the model server's own tool calling: at the same door when both have
	// it, else at the first door each has.
	var tk, pk *Key
	for _, d := range Doors {
		t, p := Key{Toolrouter, d, Auto}, Key{Plain, d, Auto}
		_, okT := costs[t]
		_, okP := costs[p]
		if okT && okP {
			tk, pk = &t, &p
			break
		}
		if okT && tk == nil {
			tk = &t
		}
		if okP && pk == nil {
			pk = &p
		}
	}
	if tk != nil && pk != nil {
		t, p := costs[*tk], costs[*pk]
		ratio := func(a, b float64) string {
			if b == 0 {
				return "—"
			}
			return fmt.Sprintf("%.2f×", a/b)
		}
		fmt.Fprintf(&b, "\nToolrouter at `%s` against the model server's own tool calling at `%s`: %s the model calls, %s the decoded tokens, %s the wall time.\n",
			tk.Door.Path(), pk.Door.Path(), ratio(t.calls, p.calls), ratio(t.tokens, p.tokens), ratio(t.wall, p.wall))
	}
	return b.String()
}
