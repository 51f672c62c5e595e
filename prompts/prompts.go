// Package prompts holds the text/template prompts sent to the tool-calling model. The templates are
// embedded, parsed once at start-up and covered by golden tests; this package renders text and
// knows nothing of models or MCP.
package prompts

import (
	"embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"text/template"
	"unicode"
	"unicode/utf8"
)

//go:embed *.tmpl
var files embed.FS

var templates = template.Must(template.New("").Funcs(template.FuncMap{
	"json":    toJSON,
	"values":  values,
	"oneline": oneline,
	"brief":   brief,
	"data":    Data,
	"rule":    func() string { return DataRule },
}).ParseFS(files, "*.tmpl"))

// Server is one server as the selection prompt shows it.
type Server struct {
	Name    string
	Purpose string
	Tools   []Tool
}

// Tool is one tool as the prompts show it.
type Tool struct {
	Qualified   string
	Description string
	Parameters  []Param
	Schema      json.RawMessage
}

// Param is one top-level parameter.
type Param struct {
	Name        string
	Type        string
	Description string
	Required    bool
	Enum        []any
}

// Select renders the phase-1 system prompt: the instructions, then the tools. Everything before
// the tools is the same for every query (there is one wording for a whole inventory and one for a
// shortlist), so the model server reuses its cached prefix; with the whole inventory shown the
// entire prompt is static. The query goes in a later message.
func Select(servers []Server, style SelectStyle) (string, error) {
	if style.Reasoning == "" {
		style.Reasoning = "none"
	}
	return render("select.tmpl", struct {
		Servers   []Server
		Shortlist bool
		Reasoning string
	}{servers, style.Shortlist, style.Reasoning})
}

// SelectStyle is what shapes the phase-1 instructions: whether a shortlist is shown, and what the
// answer says besides its decision (Reasoning: "none", "brief" or "full", router.reasoning).
type SelectStyle struct {
	Shortlist bool
	Reasoning string
}

// SelectGroup is one server's part of the phase-1 prompt, from pieces rendered by
// SelectServerText and SelectToolText.
type SelectGroup struct {
	Heading string
	Tools   []string
}

// selectPrefix is Select's text without tools, for each style.
var selectPrefix = func() map[SelectStyle]string {
	p := map[SelectStyle]string{}
	for _, shortlist := range []bool{false, true} {
		for _, reasoning := range []string{"none", "brief", "full"} {
			st := SelectStyle{Shortlist: shortlist, Reasoning: reasoning}
			s, err := Select(nil, st)
			if err != nil {
				panic(err)
			}
			p[st] = strings.TrimSuffix(s, "\n")
		}
	}
	return p
}()

// SelectFrom assembles the phase-1 prompt from pieces rendered once (a tool's entry is the same in
// every shortlist): the same text Select writes for the same servers and tools.
func SelectFrom(style SelectStyle, groups []SelectGroup) string {
	var b strings.Builder
	if style.Reasoning == "" {
		style.Reasoning = "none"
	}
	b.WriteString(selectPrefix[style])
	for _, g := range groups {
		b.WriteString(strings.TrimSuffix(g.Heading, "\n"))
		for _, t := range g.Tools {
			b.WriteString(t)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	return b.String()
}

// SelectServerText and SelectToolText are a server's heading and a tool's entry exactly as
// Select writes them, for measuring what each adds to the prompt.
func SelectServerText(s Server) (string, error) {
	return render("select_server", Server{Name: s.Name, Purpose: s.Purpose})
}

// SelectToolText: see SelectServerText.
func SelectToolText(t Tool) (string, error) { return render("select_tool", t) }

// MaxBrief bounds a description or purpose in the selection prompt; the full text stays in the
// inventory export and the phase-2 prompt of the chosen tool.
const MaxBrief = 600

func oneline(s string) string { return strings.Join(strings.Fields(s), " ") }

// brief is a server's text on one line, without control characters (which could forge prompt
// structure), shortened to MaxBrief bytes.
func brief(s string) string {
	s = oneline(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s))
	if len(s) <= MaxBrief {
		return s
	}
	cut := MaxBrief
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// ArgumentsTool renders the static, per-tool part of the phase-2 prompt (instructions, the tool's
// description, parameters and schema); callers cache it per inventory version.
func ArgumentsTool(tool Tool) (string, error) {
	return render("arguments.tmpl", struct{ Tool Tool }{tool})
}

// Prior is the result of an earlier step, as later prompts show it.
type Prior struct {
	Step      int
	Tool      string
	Arguments string // compact JSON
	Text      string // the result, or why the step failed; possibly trimmed
	Failed    bool
	// Mark is the request's boundary around results (see Data); "" shows them bare.
	Mark string
}

// ArgumentsPrompt is the whole phase-2 prompt of one call: head, the tool's static part
// (ArgumentsTool, cached by callers), then the per-request part (earlier steps' results, for
// $result_of_step_N references, the call's task and the query), rendered in one buffer.
func ArgumentsPrompt(head, query, task string, prior []Prior) (string, error) {
	if len(prior) == 0 {
		f := argumentsFrames().noTask
		if task != "" {
			f = argumentsFrames().withTask
		}
		if f.ok {
			return f.fill(head, query, task), nil
		}
	}
	var b strings.Builder
	size := len(head) + len(query) + len(task) + argumentsQueryText
	for _, p := range prior {
		size += len(p.Tool) + len(p.Text) + 32
	}
	b.Grow(size)
	b.WriteString(head)
	if err := renderArgumentsQuery(&b, query, task, prior); err != nil {
		return "", err
	}
	return b.String(), nil
}

func renderArgumentsQuery(b *strings.Builder, query, task string, prior []Prior) error {
	data := struct {
		Query, Task string
		Prior       []Prior
	}{query, task, prior}
	if err := templates.ExecuteTemplate(b, "arguments_query.tmpl", data); err != nil {
		return fmt.Errorf("rendering %s: %w", "arguments_query.tmpl", err)
	}
	return nil
}

// argumentsFrame is arguments_query.tmpl rendered once without earlier results, with markers
// where the query and the task go: most calls have no earlier results, and splicing their
// values into the frame is what running the template would write (text/template writes a string
// as it is), without the template's reflection. The template decides only whether the task is
// empty, so there is one frame for each case.
type argumentsFrame struct {
	parts []framePart
	ok    bool // the frame rendered, each marker in it once
}

// framePart is literal text followed by the value named by field ("" after the last part).
type framePart struct {
	text, field string
}

const (
	queryMarker = "\x00query\x00"
	taskMarker  = "\x00task\x00"
)

// frames are the frames for a call without and with a task.
type frames struct{ noTask, withTask argumentsFrame }

var argumentsFrames = sync.OnceValue(func() frames { return frames{newArgumentsFrame(""), newArgumentsFrame(taskMarker)} })

func newArgumentsFrame(task string) argumentsFrame {
	var b strings.Builder
	if renderArgumentsQuery(&b, queryMarker, task, nil) != nil {
		return argumentsFrame{}
	}
	rest := b.String()
	var f argumentsFrame
	counts := map[string]int{}
	for {
		q, t := strings.Index(rest, queryMarker), strings.Index(rest, taskMarker)
		if q < 0 && t < 0 {
			f.parts = append(f.parts, framePart{text: rest})
			break
		}
		marker := queryMarker
		if q < 0 || t >= 0 && t < q {
			q, marker = t, taskMarker
		}
		f.parts = append(f.parts, framePart{text: rest[:q], field: marker})
		counts[marker]++
		rest = rest[q+len(marker):]
	}
	f.ok = counts[queryMarker] == 1 && counts[taskMarker] == min(1, len(task))
	return f
}

// fill writes head, then the frame with query and task in place.
func (f argumentsFrame) fill(head, query, task string) string {
	size := len(head) + len(query) + len(task)
	for _, p := range f.parts {
		size += len(p.text)
	}
	var b strings.Builder
	b.Grow(size)
	b.WriteString(head)
	for _, p := range f.parts {
		b.WriteString(p.text)
		switch p.field {
		case queryMarker:
			b.WriteString(query)
		case taskMarker:
			b.WriteString(task)
		}
	}
	return b.String()
}

// argumentsQueryText is about the bytes arguments_query.tmpl adds around its values, with
// earlier results: enough room that rendering it seldom grows the buffer.
const argumentsQueryText = 512

// SelectFollowup renders the message that shows the model what its calls returned and asks whether
// another call is needed (remaining > 0) or only reports them (remaining == 0).
func SelectFollowup(results []Prior, remaining int) (string, error) {
	return render("select_followup.tmpl", struct {
		Results   []Prior
		Remaining int
	}{results, remaining})
}

// GenerateExamples renders the request for n questions a user might ask that tool answers
// (retrieval.generate_examples).
func GenerateExamples(tool Tool, n int) (string, error) {
	return render("examples.tmpl", struct {
		Tool Tool
		N    int
	}{tool, n})
}

// Repair renders the message that sends the validator's findings back to the model.
func Repair(tool string, feedback string) (string, error) {
	return render("repair.tmpl", struct{ Tool, Feedback string }{tool, feedback})
}

func render(name string, data any) (string, error) {
	var b strings.Builder
	if err := templates.ExecuteTemplate(&b, name, data); err != nil {
		return "", fmt.Errorf("rendering %s: %w", name, err)
	}
	return b.String(), nil
}

func toJSON(v any) (string, error) {
	if raw, ok := v.(json.RawMessage); ok {
		return string(raw), nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// values renders allowed values compactly: "a", "b", 3.
func values(vs []any) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		b, _ := json.Marshal(v)
		parts[i] = string(b)
	}
	return strings.Join(parts, ", ")
}

// shortenMarker replaces the middle of a shortened text.
const shortenMarker = "\n…[%d bytes trimmed]…\n"

// Shorten keeps about keep bytes of s: its head and its tail, with a marker saying how much of the
// middle was cut, so a prompt shows where a long result begins and ends. Cuts fall on UTF-8
// boundaries; s is returned as is when it fits.
func Shorten(s string, keep int) string {
	if len(s) <= keep {
		return s
	}
	half := keep / 2
	head := half
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	tail := len(s) - half
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return s[:head] + fmt.Sprintf(shortenMarker, tail-head) + s[tail:]
}
