package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// OllamaHostEnv is the environment variable Ollama's own client reads for its server's address.
// toolrouter honours it below its config file: -ollama > TOOLROUTER_OLLAMA__HOST > the config
// file's ollama.host > OLLAMA_HOST > the built-in default.
const OllamaHostEnv = "OLLAMA_HOST"

// ollamaHostFromEnv is OLLAMA_HOST as Ollama reads it (spaces and quotes trimmed); "" when unset.
func ollamaHostFromEnv() string {
	return strings.Trim(strings.TrimSpace(os.Getenv(OllamaHostEnv)), "\"'")
}

// ollamaURL parses an Ollama server address in every form Ollama's client accepts in OLLAMA_HOST,
// exactly as its envconfig.Host does: "host", "host:port", ":port", "scheme://host" (port 80 for
// http, 443 for https), "scheme://host:port", "[::1]:11434", a path prefix ("host:port/ollama"),
// "ollama.com" (https on 443) and "" (http://127.0.0.1:11434). Beyond Ollama's forms it keeps the
// user and password of "scheme://user:pass@host", and refuses a port that is not a number from 0
// to 65535 (Ollama would warn and use the default port).
func ollamaURL(s string) (*url.URL, error) {
	defaultPort := "11434"
	s = strings.TrimSpace(s)
	scheme, hostport, ok := strings.Cut(s, "://")
	switch {
	case !ok:
		scheme, hostport = "http", s
		if s == "ollama.com" {
			scheme, hostport = "https", "ollama.com:443"
		}
	case scheme == "http":
		defaultPort = "80"
	case scheme == "https":
		defaultPort = "443"
	}
	hostport, path, _ := strings.Cut(hostport, "/")
	var user *url.Userinfo
	if i := strings.LastIndex(hostport, "@"); ok && i >= 0 {
		u, err := url.Parse(scheme + "://" + hostport[:i+1] + "h")
		if err != nil {
			return nil, fmt.Errorf("invalid user information in %q", s)
		}
		user, hostport = u.User, hostport[i+1:]
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = "127.0.0.1", defaultPort
		if ip := net.ParseIP(strings.Trim(hostport, "[]")); ip != nil {
			host = ip.String()
		} else if hostport != "" {
			host = hostport
		}
	}
	if n, err := strconv.ParseInt(port, 10, 32); err != nil || n > 65535 || n < 0 {
		return nil, fmt.Errorf("invalid port %q: want a number from 0 to 65535", port)
	}
	return &url.URL{Scheme: scheme, User: user, Host: net.JoinHostPort(host, port), Path: path}, nil
}

// normalizeOllamaHosts rewrites ollama.host and the base_url of every "ollama" provider in the
// canonical form ollamaURL gives, so that every part sees an absolute URL; from says where
// ollama.host was set, for the error.
func normalizeOllamaHosts(c *Config, from string) error {
	var errs []error
	u, err := ollamaURL(c.Ollama.Host)
	if err != nil {
		errs = append(errs, &FieldError{Key: "ollama.host", Reason: fmt.Sprintf("%v (set by %s)", err, from)})
	} else {
		c.Ollama.Host = u.String()
	}
	for name, p := range c.Providers {
		if p.Type != ProviderOllama || p.BaseURL == "" {
			continue
		}
		if u, err := ollamaURL(p.BaseURL); err != nil {
			errs = append(errs, &FieldError{Key: "providers." + name + ".base_url", Reason: err.Error()})
		} else {
			p.BaseURL = u.String()
			c.Providers[name] = p
		}
	}
	return sortedJoin(errs)
}
