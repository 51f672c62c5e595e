package council

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Ranking is what could be read from a reviewer's ranking.
type Ranking struct {
	// Labels are the valid labels ranked, best first, each once.
	Labels []string
	// Section reports that a "FINAL RANKING" line was found.
	Section bool
	// Problems lists what was wrong or ignored: no section, duplicates, unknown or missing labels.
	Problems []string
}

var (
	// finalRanking finds the heading, however decorated: "FINAL RANKING:", "**Final Ranking**",
	// "## Final ranking -".
	finalRanking = regexp.MustCompile(`(?i)final\s+ranking`)
	// labelRef is "Response C", "response c", "Response: C", "Response (C)".
	labelRef = regexp.MustCompile(`(?i)\bresponse\s*[:#(\[]?\s*([a-z]{1,2})\b`)
	// listItem is a numbered or bulleted line: "1. ", "2) ", "- ", "* ", "#1:", "1st:".
	listItem = regexp.MustCompile(`^\s*(?:#?\d+\s*(?:st|nd|rd|th)?\s*[.):\-]|[-*•]\s)`)
	// bareLabel is a list item that is only a letter: "1. C", "2) (B)".
	bareLabel = regexp.MustCompile(`^\s*(?:#?\d+\s*(?:st|nd|rd|th)?\s*[.):\-]|[-*•])\s*[(\[]?([A-Za-z]{1,2})[)\]]?\s*[.:]?\s*$`)
	// markdown is emphasis and code marks that get between words and labels.
	markdown = strings.NewReplacer("**", "", "__", "", "*", "", "`", "", "#", "")
)

// ParseRanking reads a reviewer's ranking of labels ("Response A", …) from its reply, robustly:
//
//   - The ranking is taken after the last "FINAL RANKING" heading (any case, markdown or not). In
//     it, a numbered or bulleted line counts its first label only ("1. Response C is best, unlike
//     Response A" ranks C), other lines count every label in order ("Response B > Response A").
//     Items naming a bare letter ("2. C") count too.
//   - Without a heading, the numbered lines of the whole reply are used, then a line with ">".
//   - Labels are matched case-insensitively; unknown labels are ignored and duplicates keep their
//     first place, both recorded in Problems, as are labels missing from the ranking.
func ParseRanking(text string, labels []string) Ranking {
	var r Ranking
	valid := map[string]string{} // upper-case letters -> label
	for _, l := range labels {
		valid[strings.ToUpper(strings.TrimSpace(strings.TrimPrefix(l, "Response ")))] = l
	}
	clean := markdown.Replace(text)
	section := clean
	if locs := finalRanking.FindAllStringIndex(clean, -1); len(locs) > 0 {
		r.Section = true
		section = clean[locs[len(locs)-1][1]:]
	} else {
		r.Problems = append(r.Problems, "no FINAL RANKING section")
	}
	lines := strings.Split(section, "\n")
	var refs []string
	if r.Section {
		for _, line := range lines {
			refs = append(refs, lineRefs(line, valid)...)
		}
	} else {
		for _, line := range lines {
			if listItem.MatchString(line) {
				refs = append(refs, lineRefs(line, valid)...)
			}
		}
		if len(refs) == 0 {
			for _, line := range lines {
				if strings.Contains(line, ">") {
					refs = append(refs, lineRefs(line, valid)...)
				}
			}
		}
	}
	seen := map[string]bool{}
	for _, ref := range refs {
		l, ok := valid[ref]
		switch {
		case !ok:
			r.Problems = append(r.Problems, fmt.Sprintf("unknown label Response %s ignored", ref))
		case seen[l]:
			r.Problems = append(r.Problems, fmt.Sprintf("%s ranked twice; first place kept", l))
		default:
			seen[l] = true
			r.Labels = append(r.Labels, l)
		}
	}
	for _, l := range labels {
		if !seen[l] {
			r.Problems = append(r.Problems, l+" not ranked")
		}
	}
	return r
}

// lineRefs returns the label letters a line names, upper-cased. A letter counts when it is a
// valid label ("response c") or written in capitals ("Response F", reported as unknown), so that
// "the response is" is not read as a label.
func lineRefs(line string, valid map[string]string) []string {
	ref := func(m []string) (string, bool) {
		up := strings.ToUpper(m[1])
		_, ok := valid[up]
		return up, ok || m[1] == up
	}
	var out []string
	for _, m := range labelRef.FindAllStringSubmatch(line, -1) {
		if up, ok := ref(m); ok {
			out = append(out, up)
		}
	}
	if listItem.MatchString(line) {
		if len(out) > 0 {
			return out[:1]
		}
		if m := bareLabel.FindStringSubmatch(line); m != nil {
			if up, ok := ref(m); ok {
				return []string{up}
			}
		}
	}
	return out
}

// complete reports whether r is a usable, whole ranking: found under a heading, every label once
// (the reviewer's own may be left out), nothing unknown or repeated.
func (r Ranking) complete(labels []string, own string) bool {
	if !r.Section {
		return false
	}
	for _, p := range r.Problems {
		if p != own+" not ranked" {
			return false
		}
	}
	return len(r.Labels) >= len(labels)-1
}

// aggregate averages each answer's position over the reviews. A reviewer's vote on its own answer
// is not counted (models favour their own answers); the other answers keep their positions in its
// ranking, so a two-member council still ranks. Answers no other reviewer ranked are not listed.
// Ties go to more votes, then to the label order.
func aggregate(reviews []Review, labelToModel map[string]string, labels []string) []Aggregate {
	sum := map[string]int{}
	n := map[string]int{}
	for _, r := range reviews {
		for i, l := range r.ParsedRanking {
			if l != r.Label {
				sum[l] += i + 1
				n[l]++
			}
		}
	}
	var out []Aggregate
	for _, l := range labels {
		if n[l] > 0 {
			out = append(out, Aggregate{Model: labelToModel[l], Label: l, AverageRank: float64(sum[l]) / float64(n[l]), RankingsCount: n[l]})
		}
	}
	sortAggregate(out)
	return slices.Clip(out)
}
