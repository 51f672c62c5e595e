package mcpconfig

import (
	"fmt"
	"strings"
)

// MaxIDLength bounds a server's id (ServerID's result), which starts every qualified tool name.
const MaxIDLength = 64

// ServerID derives a server's id from the name a configuration gives it: lower case, and every
// character other than a-z, 0-9, '_' and '-' becomes '_' ("GitHub" → "github", "my server" →
// "my_server", "a.b" → "a_b"). The id names the server's tools ("github.create_issue"), its
// configuration keys and its access rules; the name stays its display name. An id is refused when
// it is empty or longer than MaxIDLength, or when it is all '_' (a name of symbols only).
func ServerID(name string) (string, error) {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	id := b.String()
	switch {
	case id == "":
		return "", fmt.Errorf("server name must not be empty")
	case len(id) > MaxIDLength:
		return "", fmt.Errorf("server name %q is too long: its id may have at most %d characters", name, MaxIDLength)
	case strings.Trim(id, "_") == "":
		return "", fmt.Errorf("server name %q has no letter or digit", name)
	}
	return id, nil
}

// inputKey is the form an input id is looked up by: lower case, every character other than a-z,
// 0-9 and '_' made '_' ("github-token" → "github_token").
func inputKey(id string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(id) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// InputEnvPrefix starts the environment variable that gives an input's value: the prefix, then the
// input's id in upper case with every character other than A-Z, 0-9 and '_' made '_'
// (${input:github-token} → TOOLROUTER_INPUTS__GITHUB_TOKEN). It is the variable toolrouter's own
// environment layer reads as inputs.<id>.
const InputEnvPrefix = "TOOLROUTER_INPUTS__"

// InputEnv is the environment variable that gives the value of the input id.
func InputEnv(id string) string { return InputEnvPrefix + strings.ToUpper(inputKey(id)) }
