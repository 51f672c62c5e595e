package redact

import "testing"

func TestSecret(t *testing.T) {
	r := New("s3cr3t-value-42")
	cases := []struct {
		name, in string
		kind     string // "" when none
	}{
		{"configured credential", "please use s3cr3t-value-42 here", "a configured credential"},
		{"configured credential, URL-escaped", "https://h/?q=" + "s3cr3t-value-42", "a configured credential"},
		{"URL password", "fetch https://bob:hunter22@example.com/x", "a URL with credentials"},
		{"URL secret parameter", "https://api.example.com/v1?api_key=abcdef123", "a URL with credentials"},
		{"private key", "-----BEGIN RSA PRIVATE KEY-----\nMIIE", "a private key"},
		{"AWS key", "key AKIAIOSFODNN7EXAMPLE there", "an AWS access key id"},
		{"GitHub token", "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789AB", "a GitHub token"},
		{"sk key", "sk-proj-abcdefghijklmnopqrstuv", "an API key (sk-…)"},
		{"JWT", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "a JSON Web Token"},
		{"plain URL", "https://example.com/search?q=weather", ""},
		{"ordinary text", "What is 17 times 23? Ask sk-ip and AKIA.", ""},
		{"a path", "/home/user/notes.txt", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kind, found := r.Secret(c.in)
			if found != (c.kind != "") || kind != c.kind {
				t.Errorf("Secret(%q) = %q, %v; want %q", c.in, kind, found, c.kind)
			}
		})
	}
	if kind, found := (*Redactor)(nil).Secret("https://u:password1@h/"); !found || kind != "a URL with credentials" {
		t.Errorf("nil Redactor: got %q, %v", kind, found)
	}
}

// BenchmarkSecret is the check of one ordinary argument, as every call's arguments get it.
func BenchmarkSecret(b *testing.B) {
	r := New("s3cr3t-value-42")
	for b.Loop() {
		if _, found := r.Secret("the quarterly report for the north region, 2024"); found {
			b.Fatal("found a secret")
		}
	}
}
