package prompts

import (
	"embed"
	"fmt"
	"strings"
	"text/template"
)

// The council's templates are their own set, parsed once; besides text/template's built-in
// functions they use data and rule, the results' boundary.
//
//go:embed council_*.tmpl
var councilFiles embed.FS

var councilTemplates = template.Must(template.New("").Funcs(template.FuncMap{
	"data": Data,
	"rule": func() string { return DataRule },
}).ParseFS(councilFiles, "council_*.tmpl"))

// CouncilEvidence is one tool call as the council prompts show it.
type CouncilEvidence struct {
	// Step numbers the calls from 1.
	Step      int
	Server    string
	Tool      string
	Arguments string // compact JSON; empty for none
	Result    string // the tool's text
	IsError   bool   // the tool answered, with an error (Result says what)
	Failed    string // the call did not complete: why (no Result)
	// Mark is the request's boundary around results (see Data); "" shows them bare.
	Mark string
}

// CouncilAnswer is one member's answer under its anonymous label ("Response A").
type CouncilAnswer struct {
	Label string
	Text  string
}

// CouncilReview is one peer review under an anonymous reviewer name ("Reviewer 1").
type CouncilReview struct {
	Reviewer string
	Text     string
}

// CouncilRank is one line of the aggregate ranking.
type CouncilRank struct {
	Position int // from 1
	Label    string
	Average  float64
	Votes    int
}

// CouncilStage1 renders the system message of a member's stage-1 call: the instructions and the
// tool calls with their results. The conversation and the query follow it as their own messages.
func CouncilStage1(evidence []CouncilEvidence) (string, error) {
	return councilRender("council_stage1.tmpl", struct{ Evidence []CouncilEvidence }{evidence})
}

// CouncilStage2 renders a reviewer's prompt: the query, the tool results and the anonymous
// answers, with the instruction to end with a "FINAL RANKING:" list.
func CouncilStage2(query string, evidence []CouncilEvidence, answers []CouncilAnswer) (string, error) {
	return councilRender("council_stage2.tmpl", struct {
		Query    string
		Evidence []CouncilEvidence
		Answers  []CouncilAnswer
	}{query, evidence, answers})
}

// CouncilStage3 renders the chairman's prompt: the query, the tool results, the anonymous answers,
// and the reviews and aggregate ranking when there were any.
func CouncilStage3(query string, evidence []CouncilEvidence, answers []CouncilAnswer, reviews []CouncilReview, ranking []CouncilRank) (string, error) {
	return councilRender("council_stage3.tmpl", struct {
		Query    string
		Evidence []CouncilEvidence
		Answers  []CouncilAnswer
		Reviews  []CouncilReview
		Ranking  []CouncilRank
	}{query, evidence, answers, reviews, ranking})
}

func councilRender(name string, data any) (string, error) {
	var b strings.Builder
	if err := councilTemplates.ExecuteTemplate(&b, name, data); err != nil {
		return "", fmt.Errorf("rendering %s: %w", name, err)
	}
	return b.String(), nil
}

// CompletionEvidence renders the system message that gives a chat completion's model the tool
// calls made for the user's last message, with their results (or that none was made).
func CompletionEvidence(evidence []CouncilEvidence) (string, error) {
	return councilRender("council_completion.tmpl", evidence)
}
