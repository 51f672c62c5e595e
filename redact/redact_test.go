package redact

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"password", "https://bob:hunter22@example.com/mcp", "https://bob:REDACTED@example.com/mcp"},
		{"token as user name", "https://ghp_abcdef@example.com/mcp", "https://REDACTED@example.com/mcp"},
		{"secret query values", "https://example.com/mcp?api_key=k1&region=eu&X-Amz-Signature=s2&access_token=t3",
			"https://example.com/mcp?api_key=REDACTED&region=eu&X-Amz-Signature=REDACTED&access_token=REDACTED"},
		{"fragment", "https://example.com/cb#access_token=t3&state=x", "https://example.com/cb#access_token=REDACTED&state=x"},
		{"nothing secret", "http://127.0.0.1:8080/mcp?page=2", "http://127.0.0.1:8080/mcp?page=2"},
		{"unparsable", "http://u:p w@h%zz/x?token=abc&q=1", "http://REDACTED@h%zz/x?token=REDACTED&q=REDACTED"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := URL(tc.in); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestString(t *testing.T) {
	r := ForServer("https://bob:pa55word@example.com/mcp?token=t0k3n-value",
		map[string]string{"Authorization": "Bearer hdr-secret", "X-Short": "ab"},
		map[string]string{"GITHUB_TOKEN": "gh-env-secret", "HOME": "/home/bob", "API_KEY": "a b/c+d"})
	tests := []struct {
		name, in string
		gone     []string
		kept     []string
	}{
		{"url in an error", `Post "https://example.com/mcp?token=t0k3n-value&page=2": dial tcp: refused`,
			[]string{"t0k3n-value"}, []string{"page=2", "dial tcp: refused"}},
		{"literal secrets anywhere", "stderr: auth failed for hdr-secret with gh-env-secret and pa55word",
			[]string{"hdr-secret", "gh-env-secret", "pa55word"}, []string{"auth failed for"}},
		{"escaped forms", "sent key=a+b%2Fc%2Bd and a%20b%2Fc+d", []string{"a+b%2Fc%2Bd", "a%20b%2Fc+d"}, []string{"sent key="}},
		{"short values only in URLs", "ab is fine; HOME=/home/bob", nil, []string{"ab is fine", "/home/bob"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := r.String(tc.in)
			for _, g := range tc.gone {
				if strings.Contains(got, g) {
					t.Errorf("got %q, want %q masked", got, g)
				}
			}
			for _, k := range tc.kept {
				if !strings.Contains(got, k) {
					t.Errorf("got %q, want %q kept", got, k)
				}
			}
		})
	}
}

var errSentinel = errors.New("sentinel")

func TestErrorKeepsChain(t *testing.T) {
	r := New("s3cr3t-value")
	err := r.Error(fmt.Errorf("calling with s3cr3t-value: %w", errSentinel))
	if strings.Contains(err.Error(), "s3cr3t-value") {
		t.Errorf("got %q, want the secret masked", err)
	}
	if !errors.Is(err, errSentinel) {
		t.Errorf("got errors.Is(err, sentinel) false, want true")
	}
	if r.Error(nil) != nil {
		t.Error("got an error for nil, want nil")
	}
}

type stringer string

func (s stringer) String() string { return string(s) }

func TestHandler(t *testing.T) {
	var buf bytes.Buffer
	r := New("s3cr3t-value")
	log := slog.New(r.Handler(slog.NewJSONHandler(&buf, nil))).With("url", "http://h/?key=abcd1234")
	log.WithGroup("g").Info("msg s3cr3t-value", "err", errors.New("e s3cr3t-value"),
		"s", stringer("x s3cr3t-value"), slog.Group("inner", "v", "s3cr3t-value"), "b", []byte("s3cr3t-value"))
	out := buf.String()
	for _, g := range []string{"s3cr3t-value", "abcd1234"} {
		if strings.Contains(out, g) {
			t.Errorf("got log %s, want %q masked", out, g)
		}
	}
	if strings.Count(out, Mask) != 6 {
		t.Errorf("got log %s, want 6 masks", out)
	}
}
