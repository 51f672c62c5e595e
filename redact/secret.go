package redact

import (
	"regexp"
	"strings"
)

// shapes are credential formats recognisable by their look alone: what a tool call's arguments
// must not carry unless the tool is meant to take one.
// Each holds a literal every match contains (hint), checked before the expression runs: most
// arguments hold none, and then no expression runs at all.
var shapes = []struct {
	kind  string
	hints []string
	re    *regexp.Regexp
}{
	{"a private key", []string{"PRIVATE KEY"}, regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----`)},
	{"an AWS access key id", []string{"AKIA", "ASIA"}, regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`)},
	{"a GitHub token", []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}, regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{36,}\b`)},
	{"a Slack token", []string{"xox"}, regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`)},
	{"an API key (sk-…)", []string{"sk-"}, regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{20,}`)},
	{"a Google API key", []string{"AIza"}, regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}\b`)},
	{"a JSON Web Token", []string{"eyJ"}, regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`)},
}

// Secret reports whether s carries a credential, and what kind: one of the Redactor's literal
// secrets, a URL whose credentials String would mask, or a well-known credential format (a
// private key, an AWS, GitHub, Slack, Google or sk- API key, a JSON Web Token). It never returns
// the secret itself. A nil Redactor checks URLs and formats only.
func (r *Redactor) Secret(s string) (kind string, found bool) {
	if r != nil && r.literal != nil && r.literal.Replace(s) != s {
		return "a configured credential", true
	}
	if strings.Contains(s, "://") {
		for _, u := range urlInText.FindAllString(s, -1) {
			if URL(u) != u {
				return "a URL with credentials", true
			}
		}
	}
	if len(s) < 8 {
		return "", false // shorter than any credential format
	}
	for _, sh := range shapes {
		if containsAny(s, sh.hints) && sh.re.MatchString(s) {
			return sh.kind, true
		}
	}
	return "", false
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
