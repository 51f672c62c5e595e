package redact

import (
	"regexp"
	"strings"
)

// shapes are credential formats recognisable by their look alone: what a tool call's arguments
// must not carry unless the tool is meant to take one.
// Each holds a literal every match contains (hint), checked before the expression runs: most
// arguments hold none, and then no expression runs at all. whole, when set, is what Credentials
// masks (a private key's body, not only its first line); re otherwise.
var shapes = []struct {
	kind  string
	hints []string
	re    *regexp.Regexp
	whole *regexp.Regexp
}{
	{"a private key", []string{"PRIVATE KEY"}, regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----`),
		regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z ]*PRIVATE KEY-----|$)`)},
	{"an AWS access key id", []string{"AKIA", "ASIA"}, regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`), nil},
	{"a GitHub token", []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}, regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{36,}\b`), nil},
	{"a Slack token", []string{"xox"}, regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`), nil},
	{"an API key (sk-…)", []string{"sk-"}, regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{20,}`), nil},
	{"a Google API key", []string{"AIza"}, regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}\b`), nil},
	{"a JSON Web Token", []string{"eyJ"}, regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), nil},
}

// Secret reports whether s carries a credential, and what kind: one of the Redactor's literal
// secrets standing as a word of its own, a URL with userinfo or a non-empty secret-named query
// or fragment parameter (how the URL is spelt does not matter), or a well-known credential format
// (a private key, an AWS, GitHub, Slack, Google or sk- API key, a JSON Web Token). It never
// returns the secret itself. A nil Redactor checks URLs and formats only.
func (r *Redactor) Secret(s string) (kind string, found bool) {
	if len(r.find(s, true)) > 0 {
		return "a configured credential", true
	}
	if strings.Contains(s, "://") {
		for _, u := range urlInText.FindAllString(s, -1) {
			if maskURL(u) != u {
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

// Credentials returns s with everything Secret finds masked: what String masks, and every
// well-known credential format. It is for text that was refused for carrying a credential.
func (r *Redactor) Credentials(s string) string {
	s = r.String(s)
	if len(s) < 8 {
		return s
	}
	for _, sh := range shapes {
		if containsAny(s, sh.hints) {
			re := sh.whole
			if re == nil {
				re = sh.re
			}
			s = re.ReplaceAllLiteralString(s, Mask)
		}
	}
	return s
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
