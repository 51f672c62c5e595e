package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

// credentials holds one credential per character class a JSON or HTML encoder escapes, or a URL
// encoder changes, and a few that are plain.
var credentials = []struct{ name, cred string }{
	{"quote", `pa"ss"w0rd-1`},
	{"backslash", `pa\ss\w0rd-2`},
	{"angle brackets", `<pa>ss<w0rd>3`},
	{"ampersand", `pa&ss&w0rd4`},
	{"apostrophe", `pa'ss'w0rd5`},
	{"space and slash", `pa ss/w0rd 6`},
	{"percent plus equals", `pa%2Bss+w0rd=7==`},
	{"non-ASCII", `pässwörd-東京-8`},
	{"control characters", "pa\tss\nw0rd\u00079"},
	{"line separator", "pa\u2028ss\u2029w0rd10"},
	{"plain", `sk_live_abcdef0123456789`},
}

// TestValueEveryCharacterClass: a configured credential is masked in decoded structured content
// wherever it sits (a whole value, inside a longer string, a key, an array element, deep), in the
// JSON text of a result, and in a URL's query, whatever characters it holds.
func TestValueEveryCharacterClass(t *testing.T) {
	for _, tc := range credentials {
		t.Run(tc.name, func(t *testing.T) {
			r := New(tc.cred)
			structured := map[string]any{
				"k1":    tc.cred,
				"text":  "the password is " + tc.cred + ", keep it",
				tc.cred: "as a key",
				"list":  []any{"ok", map[string]any{"deep": []any{tc.cred}}},
				"n":     json.Number("42"),
			}
			got := r.Value(structured)
			b, _ := json.Marshal(got)
			var back any
			_ = json.Unmarshal(b, &back)
			if strings.Contains(flatten(back), tc.cred) {
				t.Errorf("Value: got %s, want %q masked everywhere", b, tc.cred)
			}
			if m := got.(map[string]any); m["k1"] != Mask || m["n"] != json.Number("42") || m[Mask] != "as a key" {
				t.Errorf("Value: got %s, want k1 and the key masked and n kept", b)
			}
			if structured["k1"] != tc.cred {
				t.Errorf("Value changed its input")
			}
			// The same result as JSON text, as a server writes it, HTML-escaped or not.
			for _, html := range []bool{true, false} {
				text := string(encodeHTML(structured, html))
				masked := r.Text(text)
				var v any
				if err := json.Unmarshal([]byte(masked), &v); err != nil {
					t.Fatalf("Text: got %q, not JSON: %v", masked, err)
				}
				if strings.Contains(flatten(v), tc.cred) {
					t.Errorf("Text(html %v): got %s, want %q masked", html, masked, tc.cred)
				}
			}
		})
	}
}

// TestValueURLInStructured: a token in a link's query is masked in structured content and in JSON
// text, where & is written \u0026.
func TestValueURLInStructured(t *testing.T) {
	const link = "https://api.example.com/items?page=2&access_token=tok-1234567"
	v := New().Value(map[string]any{"next": link})
	if got := v.(map[string]any)["next"]; got != "https://api.example.com/items?page=2&access_token="+Mask {
		t.Errorf("Value: got %q, want the token masked and page kept", got)
	}
	text := string(encodeHTML(map[string]any{"next": link}, true))
	if !strings.Contains(text, `\u0026`) {
		t.Fatalf("the test needs & escaped: %s", text)
	}
	if got := New().Text(text); strings.Contains(got, "tok-1234567") || !strings.Contains(got, "page=2") {
		t.Errorf("Text: got %s, want the token masked and page kept", got)
	}
	if got := New().Text("not JSON: " + link); strings.Contains(got, "tok-1234567") {
		t.Errorf("Text: got %s, want the token masked", got)
	}
}

// TestCredentialsValue: refused arguments lose configured credentials, URL credentials and
// well-known formats, a private key's body included.
func TestCredentialsValue(t *testing.T) {
	r := New("s3cr3t-value-42")
	pem := "-----BEGIN RSA PRIVATE KEY-----\nMIIEbody0123\n-----END RSA PRIVATE KEY-----"
	args := map[string]any{
		"a": "use s3cr3t-value-42",
		"b": []any{"ghp_abcdefghijklmnopqrstuvwxyz0123456789AB"},
		"c": map[string]any{"url": "https://bob:hunter22@example.com/x?page=1"},
		"d": "key:\n" + pem + "\nend",
		"e": "an ordinary value",
	}
	got := r.CredentialsValue(args)
	b, _ := json.Marshal(got)
	for _, gone := range []string{"s3cr3t-value-42", "ghp_abc", "hunter22", "MIIEbody0123"} {
		if strings.Contains(string(b), gone) {
			t.Errorf("got %s, want %q masked", b, gone)
		}
	}
	for _, kept := range []string{"an ordinary value", "page=1", "bob:", "\\nend"} {
		if !strings.Contains(string(b), kept) {
			t.Errorf("got %s, want %q kept", b, kept)
		}
	}
}

func encodeHTML(v any, html bool) []byte {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(v)
	return []byte(b.String())
}

// flatten is every string and key of a decoded JSON value, joined.
func flatten(v any) string {
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch t := v.(type) {
		case string:
			b.WriteString(t + "\x00")
		case []any:
			for _, e := range t {
				walk(e)
			}
		case map[string]any:
			for k, e := range t {
				b.WriteString(k + "\x00")
				walk(e)
			}
		}
	}
	walk(v)
	return b.String()
}
