// Package redact removes credentials from text that toolrouter shows: the inventory's export,
// /readyz, error strings and log lines. It is the one place that decides what a secret looks like;
// every surface that reports an MCP server goes through a Redactor built from that server's
// connection settings.
//
// Two rules apply:
//
//   - URLs (given alone, or found inside any text) lose their userinfo password (or a lone user
//     name, where tokens are often put) and the values of query and fragment parameters whose names
//     look secret (token, key, secret, password, sig, auth, ...).
//   - The literal values a Redactor was built with (a server's header values, the password and
//     secret query values of its URL, the values of its secret-looking environment variables) are
//     replaced wherever they appear, raw or URL-escaped. Values shorter than MinSecretLen are
//     masked inside URLs only, so that a one-character header does not garble every message.
package redact

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Mask replaces a secret.
const Mask = "REDACTED"

// MinSecretLen is the shortest literal secret replaced in free text.
const MinSecretLen = 4

// secretWords are the parts of a parameter or variable name that mark its value as secret.
var secretWords = []string{
	"token", "key", "secret", "password", "passwd", "pwd", "sig", "auth", "credential", "session",
	"cookie", "jwt", "bearer", "private", "signature",
}

// SecretName reports whether a query parameter, header or environment variable called name is
// likely to hold a secret.
func SecretName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// URL returns raw with its credentials masked: the userinfo password (or a user name given
// without one) and the values of secret-looking query and fragment parameters. A string that does
// not parse as a URL has any userinfo and every parameter value masked.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return unparsable(raw)
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), Mask)
		} else if u.User.Username() != "" {
			u.User = url.User(Mask)
		}
	}
	u.RawQuery = params(u.RawQuery)
	if strings.Contains(u.Fragment, "=") {
		u.RawFragment = params(u.EscapedFragment())
		u.Fragment, _ = url.PathUnescape(u.RawFragment)
	}
	return u.String()
}

// params masks the values of secret-looking parameters of an encoded query, keeping the order.
func params(q string) string {
	if q == "" {
		return q
	}
	parts := strings.Split(q, "&")
	for i, p := range parts {
		k, _, ok := strings.Cut(p, "=")
		if !ok {
			continue
		}
		name, err := url.QueryUnescape(k)
		if err != nil {
			name = k
		}
		if SecretName(name) {
			parts[i] = k + "=" + Mask
		}
	}
	return strings.Join(parts, "&")
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
	literal *strings.Replacer // nil when there is no literal secret
}

// New returns a Redactor for the given secret values (empty ones are ignored).
func New(secrets ...string) *Redactor {
	var forms []string
	for _, s := range secrets {
		if len(s) < MinSecretLen {
			continue
		}
		for _, f := range []string{s, url.QueryEscape(s), url.PathEscape(s)} {
			if !slices.Contains(forms, f) {
				forms = append(forms, f)
			}
		}
	}
	if len(forms) == 0 {
		return &Redactor{}
	}
	// Longest first, so that a secret containing another is masked whole.
	slices.SortFunc(forms, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, Mask)
	}
	return &Redactor{literal: strings.NewReplacer(pairs...)}
}

// ForServer returns a Redactor for an MCP server's connection settings: the password, user name
// and secret query values of its URL, every header value, and the values of its environment
// variables whose names look secret.
func ForServer(rawURL string, headers, env map[string]string) *Redactor {
	return New(ServerSecrets(rawURL, headers, env)...)
}

// ServerSecrets lists the secrets ForServer masks, so that one Redactor can mask those of many
// servers.
func ServerSecrets(rawURL string, headers, env map[string]string) []string {
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
	for _, v := range headers {
		secrets = append(secrets, v)
		// "Bearer abc": the credential alone may be quoted without its scheme.
		if _, cred, ok := strings.Cut(v, " "); ok {
			secrets = append(secrets, strings.TrimSpace(cred))
		}
	}
	for k, v := range env {
		if SecretName(k) {
			secrets = append(secrets, v)
		}
	}
	return secrets
}

// String returns s with every known secret and every URL credential masked.
func (r *Redactor) String(s string) string {
	if r != nil && r.literal != nil {
		s = r.literal.Replace(s)
	}
	if strings.Contains(s, "://") {
		s = urlInText.ReplaceAllStringFunc(s, URL)
	}
	return s
}

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
