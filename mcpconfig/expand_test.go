package mcpconfig

import "testing"

// TestSecretSourced: a value read from a variable named like a secret, or from a password input,
// is a credential; one read from any other variable is not.
func TestSecretSourced(t *testing.T) {
	password := func(id string) bool { return id == "api-key" }
	for s, want := range map[string]bool{
		"Bearer ${env:GITHUB_TOKEN}": true, "${API_KEY}": true, "${DB_PASSWORD:-none}": true, "${input:api-key}": true,
		"${env:TEAM}": false, "${MODE:-fast}": false, "${input:team}": false, "${workspaceFolder}/x": false,
		"literal": false, "${KEYBOARD_LAYOUT}": false, "unclosed ${API_KEY": false,
	} {
		if got := SecretSourced(s, password); got != want {
			t.Errorf("SecretSourced(%q): got %v, want %v", s, got, want)
		}
	}
}
