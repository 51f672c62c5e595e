package mcpconfig

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"toolrouter/redact"
)

// envVarName is the pattern of a variable in ${VAR}.
var envVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// expander replaces the ${...} variables of one value.
type expander struct {
	lookupEnv func(string) (string, bool)
	// predefined are ${workspaceFolder}, ${userHome} and the like; nil outside an MCP file.
	predefined map[string]string
	// input gives ${input:ID}; nil where inputs are not read.
	input func(id string) (string, error)
}

// ExpandEnv replaces ${env:VAR} and ${VAR} in s with the variable's value, and ${VAR:-default}
// with the default when VAR is unset or empty. A variable that is not set is an error naming it,
// never an empty string. lookup reads the environment (nil: os.LookupEnv).
func ExpandEnv(s string, lookup func(string) (string, bool)) (string, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	return expander{lookupEnv: lookup}.expand(s)
}

func (x expander) expand(s string) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("unclosed ${ in %q", s)
		}
		v, err := x.variable(s[i+2 : i+end])
		if err != nil {
			return "", err
		}
		b.WriteString(v)
		s = s[i+end+1:]
	}
}

// variable is the value of one ${body}.
func (x expander) variable(body string) (string, error) {
	if v, ok := x.predefined[body]; ok {
		return v, nil
	}
	kind, name, scoped := strings.Cut(body, ":")
	switch {
	case scoped && kind == "env":
		if v, ok := x.lookupEnv(name); ok {
			return v, nil
		}
		return "", fmt.Errorf("environment variable %s is not set (${%s})", name, body)
	case scoped && kind == "input":
		if x.input == nil {
			return "", fmt.Errorf("${%s}: inputs are read only in MCP configuration files", body)
		}
		return x.input(name)
	case scoped && strings.HasPrefix(name, "-") && envVarName.MatchString(kind):
		if v, ok := x.lookupEnv(kind); ok && v != "" {
			return v, nil
		}
		return name[1:], nil
	case !scoped && envVarName.MatchString(body):
		if v, ok := x.lookupEnv(body); ok {
			return v, nil
		}
		return "", fmt.Errorf("environment variable %s is not set (${%s})", body, body)
	}
	return "", fmt.Errorf("unsupported variable ${%s}: want ${env:VAR}, ${VAR}, ${VAR:-default}, ${input:ID}, ${workspaceFolder}, ${workspaceFolderBasename}, ${userHome}, ${pathSeparator} or ${/}", body)
}

// SecretSourced reports whether s reads an environment variable named like a secret
// (${env:GITHUB_TOKEN}, ${API_KEY}, ${API_KEY:-x}; see redact.SecretName), or an input that
// password reports a password: the value it expands to is then a credential, whatever the header
// or variable holding it is called. password may be nil.
func SecretSourced(s string, password func(id string) bool) bool {
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			return false
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return false
		}
		body := s[i+2 : i+end]
		s = s[i+end+1:]
		kind, name, scoped := strings.Cut(body, ":")
		switch {
		case scoped && kind == "env":
			if redact.SecretName(name) {
				return true
			}
		case scoped && kind == "input":
			if password != nil && password(name) {
				return true
			}
		case envVarName.MatchString(kind) && redact.SecretName(kind):
			return true // ${VAR} and ${VAR:-default}
		}
	}
}
