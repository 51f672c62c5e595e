// Package redact removes credentials from what toolrouter shows: the inventory's export, /readyz,
// error strings, log lines, tool results and refused calls' arguments. It is the one place that
// decides what a secret looks like; every surface that reports an MCP server goes through a
// Redactor built from the configured credentials.
//
// Three rules apply:
//
//   - URLs (given alone, or found inside any text) lose their userinfo password (or a lone user
//     name, where tokens are often put) and the values of query and fragment parameters whose names
//     look secret (token, key, secret, password, sig, auth, ...). Nothing else of a URL changes.
//   - The literal values a Redactor was built with (the credentials among a server's header and
//     environment values, the password and secret query values of its URL) are replaced wherever
//     they stand as words of their own, raw, URL-escaped or JSON-escaped. Values shorter than
//     MinSecretLen are not literal secrets, so that a one-character value does not garble every
//     message.
//   - Structured values (a result's JSON, a call's arguments) are masked value by value, every
//     string and every key decoded, never on their encoded text (see Value).
package redact

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Mask replaces a secret.
const Mask = "REDACTED"

// MinSecretLen is the shortest literal secret replaced in free text.
const MinSecretLen = 4

// secretWords are the words of a parameter, header or variable name that mark its value as
// secret, matched whole ("access_token", "X-Api-Key", "apiKey", "PGPASSWORD"'s suffix); secretSuffixes
// may end a longer word ("accesstoken", "pgpassword"). Words, not substrings: "keyword",
// "design" and "author" name no secret.
var (
	secretWords = []string{
		"token", "tokens", "key", "keys", "apikey", "secret", "secrets", "password", "passwd", "pwd", "pass",
		"passphrase", "sig", "signature", "auth", "authorization", "credential", "credentials", "creds",
		"session", "sessionid", "cookie", "jwt", "bearer", "private", "privatekey", "accesskey", "secretkey",
	}
	secretSuffixes = []string{"token", "secret", "password", "passwd", "apikey", "accesskey", "secretkey", "privatekey"}
)

// SecretName reports whether a query parameter, header or environment variable called name is
// likely to hold a secret: one of its words (split at punctuation, digits and camelCase) is a
// secret word.
func SecretName(name string) bool {
	found := false
	nameWords(name, func(w string) bool {
		if slices.Contains(secretWords, w) {
			found = true
		}
		for _, suf := range secretSuffixes {
			if strings.HasSuffix(w, suf) {
				found = true
			}
		}
		return !found
	})
	return found
}

// nameWords calls f with each lower-cased word of name until f returns false: words are runs of
// letters split where a lower-case letter meets an upper-case one ("apiKey") and before the last
// of a run of capitals followed by a lower-case letter ("APIKey").
func nameWords(name string, f func(string) bool) {
	rs := []rune(name)
	start := -1
	for i := 0; i <= len(rs); i++ {
		if i < len(rs) && unicode.IsLetter(rs[i]) {
			if start < 0 {
				start = i
				continue
			}
			split := unicode.IsUpper(rs[i]) && (unicode.IsLower(rs[i-1]) ||
				(i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1])))
			if !split {
				continue
			}
		}
		if start >= 0 && !f(strings.ToLower(string(rs[start:i]))) {
			return
		}
		start = -1
		if i < len(rs) && unicode.IsLetter(rs[i]) {
			start = i
		}
	}
}

// URL returns raw with its credentials masked: the userinfo password (or a user name given
// without one, where tokens are often put, except on ssh URLs, where it is the login) and the
// values of secret-looking query and fragment parameters. Nothing else of raw changes: it is not
// re-encoded. A string that does not parse as a URL has any userinfo and every parameter value
// masked.
func URL(raw string) string {
	if _, err := url.Parse(raw); err != nil {
		return unparsable(raw)
	}
	return maskURL(raw)
}

// maskURL masks the credentials of raw, read leniently: the userinfo of its authority, and the
// values of secret-named parameters of its query and fragment.
func maskURL(raw string) string {
	var b strings.Builder
	done := 0 // raw[:done] is written to b or dropped
	mask := func(from, to int) {
		b.WriteString(raw[done:from])
		b.WriteString(Mask)
		done = to
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	auth := len(scheme) + 3
	end := auth + len(rest)
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		end = auth + i
	}
	if at := strings.LastIndexByte(raw[auth:end], '@'); at >= 0 {
		info := raw[auth : auth+at]
		if user, pw, ok := strings.Cut(info, ":"); ok {
			if pw != "" {
				mask(auth+len(user)+1, auth+at)
			}
		} else if info != "" && !sshScheme(scheme) {
			mask(auth, auth+at)
		}
	}
	q := strings.IndexByte(raw[end:], '?')
	h := strings.IndexByte(raw[end:], '#')
	if q >= 0 && (h < 0 || q < h) {
		qend := len(raw)
		if h >= 0 {
			qend = end + h
		}
		maskParams(raw, end+q+1, qend, mask)
	}
	if h >= 0 && strings.Contains(raw[end+h:], "=") {
		maskParams(raw, end+h+1, len(raw), mask)
	}
	if done == 0 {
		return raw
	}
	b.WriteString(raw[done:])
	return b.String()
}

// maskParams masks, through mask, the non-empty values of the secret-named parameters in
// raw[from:to], a query or fragment of &-separated name=value pairs.
func maskParams(raw string, from, to int, mask func(from, to int)) {
	for from < to {
		pe := to
		if i := strings.IndexByte(raw[from:to], '&'); i >= 0 {
			pe = from + i
		}
		if eq := strings.IndexByte(raw[from:pe], '='); eq > 0 && from+eq+1 < pe {
			k := raw[from : from+eq]
			name, err := url.QueryUnescape(k)
			if err != nil {
				name = k
			}
			if SecretName(name) {
				mask(from+eq+1, pe)
			}
		}
		from = pe + 1
	}
}

// sshScheme reports whether a URL's user name is a login rather than a token (ssh://git@host).
func sshScheme(scheme string) bool {
	switch strings.ToLower(scheme) {
	case "ssh", "git+ssh", "ssh+git", "sftp", "scp":
		return true
	}
	return false
}

var (
	userinfo   = regexp.MustCompile(`//[^/?#@]*@`)
	paramValue = regexp.MustCompile(`=[^&#]*`)
)

func unparsable(raw string) string {
	s := userinfo.ReplaceAllString(raw, "//"+Mask+"@")
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i] + paramValue.ReplaceAllString(s[i:], "="+Mask)
	}
	return s
}

// urlInText finds URLs inside free text (an error that quotes its request URL, for one).
var urlInText = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>` + "`" + `]+`)

// Redactor masks a fixed set of secrets, and credentials in any URL, in text. The zero value and
// nil mask URLs only. It is safe for concurrent use.
type Redactor struct {
	forms []string // the secrets' forms (raw and escaped), longest first
}

// New returns a Redactor for the given secret values (empty ones and those shorter than
// MinSecretLen are ignored).
func New(secrets ...string) *Redactor {
	var forms []string
	for _, s := range secrets {
		if len(s) < MinSecretLen {
			continue
		}
		for _, f := range []string{s, url.QueryEscape(s), url.PathEscape(s), jsonForm(s, true), jsonForm(s, false)} {
			if !slices.Contains(forms, f) {
				forms = append(forms, f)
			}
		}
	}
	// Longest first, so that a secret containing another is masked whole.
	slices.SortStableFunc(forms, func(a, b string) int { return len(b) - len(a) })
	return &Redactor{forms: forms}
}

// jsonForm is s as it appears inside a JSON string, with or without <, > and & escaped.
func jsonForm(s string, escapeHTML bool) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	_ = enc.Encode(s) // a string always encodes
	out := strings.TrimSuffix(b.String(), "\n")
	return out[1 : len(out)-1]
}

// ForServer returns a Redactor for an MCP server's connection settings (see ServerSecrets).
func ForServer(rawURL string, headers, env map[string]string, marked ...string) *Redactor {
	return New(ServerSecrets(rawURL, headers, env, marked...)...)
}

// ServerSecrets lists the credentials of an MCP server's connection settings, so that one
// Redactor can mask those of many servers: the password (or lone user name) and secret query
// values of its URL, and the values of its headers and environment variables that hold
// credentials: those named like one (Authorization, Proxy-Authorization, X-Api-Key, Cookie,
// names with token, key, secret, password, auth, ...; see SecretName) and those named in marked
// (headers case-insensitively). Other values (X-Env: prod, Accept: application/json) are not
// secrets.
func ServerSecrets(rawURL string, headers, env map[string]string, marked ...string) []string {
	var secrets []string
	if u, err := url.Parse(rawURL); err == nil && rawURL != "" {
		if u.User != nil {
			p, ok := u.User.Password()
			if ok {
				secrets = append(secrets, p)
			} else {
				secrets = append(secrets, u.User.Username())
			}
		}
		for _, q := range []string{u.RawQuery, u.EscapedFragment()} {
			vals, _ := url.ParseQuery(q)
			for k, vs := range vals {
				if SecretName(k) {
					secrets = append(secrets, vs...)
				}
			}
		}
	}
	for k, v := range headers {
		if !SecretName(k) && !slices.ContainsFunc(marked, func(m string) bool { return strings.EqualFold(m, k) }) {
			continue
		}
		secrets = append(secrets, v)
		// "Bearer abc": the credential alone may be quoted without its scheme.
		if _, cred, ok := strings.Cut(v, " "); ok {
			secrets = append(secrets, strings.TrimSpace(cred))
		}
	}
	for k, v := range env {
		if SecretName(k) || slices.Contains(marked, k) {
			secrets = append(secrets, v)
		}
	}
	return secrets
}

// String returns s with every known secret and every URL credential masked. A known secret is
// masked where it stands as a word of its own: "prod" is a secret in "env=prod" but not in
// "production".
func (r *Redactor) String(s string) string {
	s = r.literals(s)
	if strings.Contains(s, "://") {
		s = urlInText.ReplaceAllStringFunc(s, URL)
	}
	return s
}

// literals returns s with the Redactor's secrets masked.
func (r *Redactor) literals(s string) string {
	spans := r.find(s, false)
	if len(spans) == 0 {
		return s
	}
	slices.SortFunc(spans, func(a, b span) int { return a.from - b.from })
	var b strings.Builder
	b.Grow(len(s))
	done := 0
	for _, sp := range spans {
		b.WriteString(s[done:sp.from])
		b.WriteString(Mask)
		done = sp.to
	}
	b.WriteString(s[done:])
	return b.String()
}

// span is s[from:to].
type span struct{ from, to int }

// find returns where the Redactor's secrets stand in s as words of their own, longest first and
// never overlapping; with first, at most one. It takes time linear in len(s) per form, however
// many matches there are.
func (r *Redactor) find(s string, first bool) []span {
	if r == nil {
		return nil
	}
	var spans []span
	var covered []uint64 // bit i: s[i] is in a span; made at the first match
	in := func(i int) bool { return covered != nil && covered[i>>6]&(1<<(i&63)) != 0 }
	for _, f := range r.forms {
		if len(f) > len(s) {
			continue
		}
		for i := 0; i+len(f) <= len(s); {
			k := strings.Index(s[i:], f)
			if k < 0 {
				break
			}
			from, to := i+k, i+k+len(f)
			// Forms come longest first, so a span this one overlaps holds one of its ends.
			if !bounded(s, from, to) || in(from) || in(to-1) {
				i = from + 1
				continue
			}
			spans = append(spans, span{from, to})
			if first {
				return spans
			}
			if covered == nil {
				covered = make([]uint64, (len(s)+63)/64)
			}
			for b := from; b < to; b++ {
				covered[b>>6] |= 1 << (b & 63)
			}
			i = to
		}
	}
	return spans
}

// bounded reports whether s[from:to] stands as a word of its own: where its edge is a letter or
// digit, the character beyond it is not one.
func bounded(s string, from, to int) bool {
	if from > 0 {
		before, _ := utf8.DecodeLastRuneInString(s[:from])
		first, _ := utf8.DecodeRuneInString(s[from:to])
		if wordRune(before) && wordRune(first) {
			return false
		}
	}
	if to < len(s) {
		last, _ := utf8.DecodeLastRuneInString(s[from:to])
		after, _ := utf8.DecodeRuneInString(s[to:])
		if wordRune(last) && wordRune(after) {
			return false
		}
	}
	return true
}

func wordRune(c rune) bool { return c == '_' || unicode.IsLetter(c) || unicode.IsDigit(c) }

// Error returns err with a masked message; errors.Is and errors.As still see err. Nil stays nil.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	return &redacted{msg: r.String(err.Error()), err: err}
}

type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }

// Handler wraps h so that every record's message and attribute values (strings, errors, Stringers,
// inside groups too) are masked before h sees them.
func (r *Redactor) Handler(h slog.Handler) slog.Handler {
	if rh, ok := h.(*handler); ok && rh.r == r {
		return h
	}
	return &handler{h: h, r: r}
}

type handler struct {
	h slog.Handler
	r *Redactor
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = h.attr(a)
	}
	return &handler{h: h.h.WithAttrs(clean), r: h.r}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{h: h.h.WithGroup(name), r: h.r}
}

func (h *handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.String(v.String()))
	case slog.KindGroup:
		g := v.Group()
		clean := make([]any, len(g))
		for i, ga := range g {
			clean[i] = h.attr(ga)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, h.r.String(x.Error()))
		case fmt.Stringer:
			return slog.String(a.Key, h.r.String(x.String()))
		case []byte:
			return slog.String(a.Key, h.r.String(string(x)))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
