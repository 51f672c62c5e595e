package redact

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOnlyCredentialsCount: of a server's headers, only those that hold credentials are secrets,
// and a secret is matched as a word of its own: X-Env: prod and Accept: application/json neither
// refuse "product" nor rewrite "production", while the bearer token is masked and refused.
func TestOnlyCredentialsCount(t *testing.T) {
	const token = "tok3n-abc-0123456789"
	r := ForServer("https://mcp.example.com/", map[string]string{
		"X-Env": "prod", "Accept": "application/json", "X-Team": "platform", "Authorization": "Bearer " + token,
		"X-Custom-Auth-Value": "custom-cred-1", "X-Tenant": "tenant-9876",
	}, map[string]string{"DEPLOY_ENV": "staging", "SLACK_BOT_TOKEN": "xoxb-env-secret", "DB_URL": "marked-env-cred"},
		"x-tenant", "DB_URL")
	for _, tc := range []struct {
		in, want string
		secret   bool
	}{
		{"the product catalogue", "the product catalogue", false},
		{"deploy to production", "deploy to production", false},
		{"send application/json please", "send application/json please", false},
		{"the platform team in staging", "the platform team in staging", false},
		{"Bearer " + token, Mask, true}, // the whole header value
		{"token=" + token + ";", "token=" + Mask + ";", true},
		{"x" + token, "x" + token, false}, // not a word of its own
		{"a custom-cred-1 b", "a " + Mask + " b", true},
		{"tenant-9876", Mask, true},
		{"env xoxb-env-secret", "env " + Mask, true},
		{"marked-env-cred!", Mask + "!", true},
	} {
		if got := r.String(tc.in); got != tc.want {
			t.Errorf("String(%q): got %q, want %q", tc.in, got, tc.want)
		}
		if _, found := r.Secret(tc.in); found != tc.secret {
			t.Errorf("Secret(%q): got %v, want %v", tc.in, found, tc.secret)
		}
	}
}

func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"access_token": true, "token": true, "X-Api-Key": true, "apiKey": true, "APIKey": true, "api_key": true,
		"key": true, "secret": true, "client_secret": true, "password": true, "PGPASSWORD": true, "sig": true,
		"signature": true, "X-Amz-Signature": true, "auth": true, "Authorization": true, "Proxy-Authorization": true,
		"Cookie": true, "GITHUB_PERSONAL_ACCESS_TOKEN": true, "AWS_SECRET_ACCESS_KEY": true, "accesstoken": true,
		"refresh_token2": true, "MYSQL_PWD": true,
		"page": false, "q": false, "keyword": false, "keywords": false, "design": false, "author": false,
		"signup": false, "monkey": false, "X-Env": false, "Accept": false, "X-Team": false, "HOME": false,
		"lang": false, "utm_source": false, "state": false, "passage": false,
	} {
		if got := SecretName(name); got != want {
			t.Errorf("SecretName(%q): got %v, want %v", name, got, want)
		}
	}
}

// realURLs carry no credential, however they are spelt.
var realURLs = []string{
	"http://json-schema.org/draft-07/schema#",
	"https://json-schema.org/draft/2020-12/schema",
	"https://ja.wikipedia.org/wiki/東京",
	"https://de.wikipedia.org/wiki/Straße?action=edit&section=2",
	"HTTPS://EXAMPLE.COM/Path",
	"Http://example.com",
	"https://example.com/a%20b/c?q=a+b&lang=en#top",
	"https://example.com/search?q=api+key+rotation&keyword=token",
	"https://www.google.com/search?q=weather&hl=en&source=hp&ei=abc",
	"https://github.com/modelcontextprotocol/servers/blob/main/README.md#L10-L20",
	"https://api.github.com/repos/o/r/issues?state=open&per_page=100&page=2",
	"https://maps.example.com/?ll=35.68,139.76&z=12&design=modern&author=bob",
	"https://example.com/path;params?x=1#frag=ment",
	"https://example.com/?token=",
	"https://example.com:8443/x?",
	"ftp://ftp.example.org/pub/file.tar.gz",
	"ssh://git@github.com/org/repo.git",
	"https://[2001:db8::1]:8080/index.html",
	"https://example.com/100%",
	"file:///home/user/notes.txt",
	"https://xn--bcher-kva.example/",
	"https://example.com/#/route?page=2",
	"https://youtube.com/watch?v=dQw4w9WgXcQ&t=42s",
}

// credentialURLs each carry one.
var credentialURLs = []string{
	"https://bob:hunter22@example.com/x",
	"https://ghp_abcdef@github.com/org/repo.git",
	"https://example.com/x?page=2&access_token=abc123",
	"HTTPS://EXAMPLE.COM/x?API_KEY=abc123",
	"https://example.com/cb#access_token=abc&state=x",
	"https://s3.amazonaws.com/b/o?X-Amz-Signature=deadbeef&X-Amz-Date=1",
	"https://acct.blob.core.windows.net/c/b?sv=2020&sig=abc%2Fdef",
	"https://example.com/x?password=p&user=u",
	"https://example.com/東京?apiKey=k",
	"postgres://app:s3cret@db:5432/app",
	"https://example.com/x?client_secret=s#top",
}

// TestURLCorpus: no URL without a credential is flagged or rewritten, whatever its spelling (a
// trailing #, an upper-case scheme, a non-ASCII path), nor any URL or argument value of the BFCL
// and MetaTool data; every URL with userinfo or a credential-named query value is.
func TestURLCorpus(t *testing.T) {
	r := ForServer("https://mcp.example.com/", map[string]string{"X-Env": "prod", "Accept": "application/json",
		"Authorization": "Bearer tok3n-abc-0123456789"}, nil)
	values := append([]string(nil), realURLs...)
	values = append(values, benchValues(t)...)
	urls := 0
	for _, v := range values {
		if strings.Contains(v, "://") {
			urls++
		}
		if kind, found := r.Secret(v); found {
			t.Errorf("false positive: Secret(%q) = %q", v, kind)
		}
		if got := r.String(v); got != v {
			t.Errorf("String(%q) rewrote it: %q", v, got)
		}
	}
	t.Logf("%d values (%d with a URL), 0 flagged", len(values), urls)
	for _, u := range credentialURLs {
		if kind, found := r.Secret("fetch " + u + " now"); !found || kind != "a URL with credentials" {
			t.Errorf("missed: Secret(%q) = %q, %v", u, kind, found)
		}
		if got := URL(u); got == u || !strings.Contains(got, Mask) {
			t.Errorf("URL(%q): got %q, want its credential masked", u, got)
		}
	}
}

// benchValues are the string values of the BFCL ground truth (arguments real calls carry) and
// every line of the BFCL and MetaTool files with a URL in it, from bench/data.
func benchValues(t *testing.T) []string {
	t.Helper()
	dir := filepath.Join("..", "bench", "data")
	var out []string
	answers, _ := filepath.Glob(filepath.Join(dir, "bfcl", "possible_answer", "*.json"))
	files, _ := filepath.Glob(filepath.Join(dir, "bfcl", "*.json"))
	meta, _ := filepath.Glob(filepath.Join(dir, "metatool", "*"))
	if len(answers) == 0 || len(files) == 0 {
		t.Fatalf("no BFCL data under %s", dir)
	}
	for _, p := range answers {
		eachLine(t, p, func(line string) {
			var v any
			if err := json.Unmarshal([]byte(line), &v); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			out = append(out, strings.Split(strings.Trim(flatten(v), "\x00"), "\x00")...)
		})
	}
	for _, p := range append(files, meta...) {
		eachLine(t, p, func(line string) {
			out = append(out, urlInText.FindAllString(line, -1)...)
		})
	}
	return out
}

func eachLine(t *testing.T, path string, f func(string)) {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		f(sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestManyMatches: a text that repeats a secret a million times is masked in linear time (the
// test's deadline would stop a quadratic one).
func TestManyMatches(t *testing.T) {
	r := New("tok3n", "tok3n-longer")
	text := strings.Repeat("tok3n tok3n-longer ", 500_000)
	got := r.String(text)
	if strings.Contains(got, "tok3n") || strings.Count(got, Mask) != 1_000_000 {
		t.Errorf("got %d masks and the secret shown %v, want 1000000 and none", strings.Count(got, Mask), strings.Contains(got, "tok3n"))
	}
}
