package trust

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"toolrouter/bench/dataset"
)

// Server is one Target's base URL and the doors asked there.
type Server struct {
	Target Target
	Base   string
	Doors  []Door
}

// Options configure Run.
type Options struct {
	Model   string
	Servers []Server
	Sets    []*dataset.Dataset
	// Accuracy scores the auto answers with BFCL's checker.
	Accuracy bool
	// MaxTokens and NumCtx bound each answer and size the model's window (Request's).
	MaxTokens, NumCtx int
	Client            *http.Client
	Progress          io.Writer
}

// NamedFunction is the function a question's named tool_choice names: its first expected call's,
// else (a question no function fits) its first function.
func NamedFunction(c dataset.Case) string {
	for _, a := range c.Answers {
		for _, call := range a.Calls {
			return strings.TrimPrefix(call.Name, dataset.BFCLServer+".")
		}
	}
	return c.Toolset.Functions[0].Name
}

// Run asks every question of o.Sets at every door of every server, under each tool_choice the
// door can carry, and tallies the answers. A door that answers 404 is skipped, with a note.
func Run(ctx context.Context, o Options) (*Result, error) {
	res := &Result{Accuracy: o.Accuracy}
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	for _, srv := range o.Servers {
		for _, door := range srv.Doors {
			skipped := false
			for _, ds := range o.Sets {
				for _, c := range ds.Cases {
					fs, err := Compile(c.Toolset.Functions)
					if err != nil {
						return nil, fmt.Errorf("%s %s: %w", ds.Name, c.ID, err)
					}
					for _, choice := range Choices {
						if !door.Expressible(choice) || skipped {
							continue
						}
						req := Request{Model: o.Model, Query: c.Query, Tools: c.Toolset.Functions, Choice: choice, Name: NamedFunction(c),
							MaxTokens: o.MaxTokens, NumCtx: o.NumCtx}
						a, err := Send(ctx, o.Client, srv.Base, door, req)
						if errors.Is(err, ErrNoDoor) {
							res.Skipped = append(res.Skipped, fmt.Sprintf("%s has no `%s` (it answered 404): not measured", srv.Target, door.Path()))
							skipped = true
							continue
						}
						if err != nil {
							return nil, err
						}
						t := res.Row(Key{srv.Target, door, choice})
						s := Check(req, fs, a)
						t.Add(a, s)
						if o.Accuracy && choice == Auto && a.Err == "" {
							t.Scored++
							if Accurate(c, ds.Strings, a) {
								t.Accurate++
							}
						}
					}
				}
				if !skipped {
					fmt.Fprintf(progress, "bench trust: %s %s %s: %d questions\n", srv.Target, door.Path(), ds.Name, len(ds.Cases))
				}
			}
		}
	}
	return res, nil
}
