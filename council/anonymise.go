package council

import (
	"cmp"
	"hash/fnv"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"

	"toolrouter/prompts"
)

// Anonymisation. Reviewers (stage 2) and the chairman (stage 3) see the answers as "Response A",
// "Response B", …, never a member's name or model id:
//
//   - Labels are a permutation of the members chosen from a hash of the query: stable for one
//     query (reproducible runs, identical prompts for every reviewer) but different from query
//     to query, so "Response A" is not always the first configured member. A member's label is
//     known before it answers (its answer is shown labelled as it arrives); a member that fails
//     leaves its label unused.
//   - Every member's name and model id (and the parts of an id such as "llama3.1" in
//     "llama3.1:8b" or "gpt-4o" in "openai/gpt-4o") are replaced by "[model]" in the answers and
//     reviews shown to other models, case-insensitively, so an answer that says "As GPT-4o, …"
//     does not reveal its author. Strings shorter than 3 characters are not replaced.
//   - The user's own text (query, history) and the tool results are shown as they are.
//
// The label-to-member map is returned in the Result for the caller, never shown to a model.

// labels gives each of n members, in order, the anonymous label its answer has when it answers:
// known before stage 1 ends, so that its answer can be shown labelled as soon as it is in. A member
// that fails leaves its label unused (Response A and Response C, when Response B's member failed).
func labels(query string, n int) []string {
	h := fnv.New64a()
	h.Write([]byte(query))
	seed := h.Sum64()
	perm := rand.New(rand.NewPCG(seed, seed>>1|1)).Perm(n)
	out := make([]string, n)
	for i, p := range perm {
		out[i] = labelName(p)
	}
	return out
}

// labelName is "Response A" … "Response Z", then "Response AA" ….
func labelName(i int) string {
	s := ""
	for i >= 0 {
		s = string(rune('A'+i%26)) + s
		i = i/26 - 1
	}
	return "Response " + s
}

// anonymous returns the answers in label order, redacted.
func (r *Result) anonymous(redact func(string) string) []prompts.CouncilAnswer {
	var out []prompts.CouncilAnswer
	for _, a := range r.Stage1 {
		if a.Error == "" {
			out = append(out, prompts.CouncilAnswer{Label: a.Label, Text: redact(a.Response)})
		}
	}
	slices.SortFunc(out, func(x, y prompts.CouncilAnswer) int { return compareLabels(x.Label, y.Label) })
	return out
}

// compareLabels orders "Response B" before "Response AA".
func compareLabels(x, y string) int {
	if c := cmp.Compare(len(x), len(y)); c != 0 {
		return c
	}
	return cmp.Compare(x, y)
}

// redactor returns a function that replaces the members' names and model ids with "[model]".
func redactor(members []Member) func(string) string {
	seen := map[string]bool{}
	var words []string
	add := func(s string) {
		s = strings.ToLower(strings.TrimSpace(s))
		if len(s) >= 3 && !seen[s] {
			seen[s] = true
			words = append(words, s)
		}
	}
	for _, m := range members {
		add(m.Name)
		add(m.ModelID)
		for _, part := range strings.FieldsFunc(m.ModelID, func(r rune) bool { return r == ':' || r == '/' || r == '@' }) {
			add(part)
		}
	}
	if len(words) == 0 {
		return func(s string) string { return s }
	}
	// Longest first: alternation takes the first alternative that matches.
	slices.SortFunc(words, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	for i, w := range words {
		words[i] = regexp.QuoteMeta(w)
	}
	re := regexp.MustCompile(`(?i)` + strings.Join(words, "|"))
	return func(s string) string { return re.ReplaceAllLiteralString(s, "[model]") }
}
