package config

import (
	"fmt"
	"net"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// FieldError is one invalid configuration value: Key is the koanf key
// ("router.on_model_failure", "servers.fs.url").
type FieldError struct {
	Key    string
	Reason string
}

func (e *FieldError) Error() string { return e.Key + ": " + e.Reason }

// serverName is the pattern of a server name. Names cannot contain dots
// because qualified tool names are "server.tool".
var serverName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// Validate checks every value and returns all problems as *FieldError
// values joined with errors.Join, sorted by message; nil when c is valid.
func (c Config) Validate() error {
	v := &validator{}

	v.hostPort("listen", c.Listen)

	v.httpURL("ollama.host", c.Ollama.Host)
	if strings.TrimSpace(c.Ollama.Model) == "" {
		v.add("ollama.model", "must not be empty")
	}
	v.positive("ollama.timeout", c.Ollama.Timeout)

	if n := c.Router.RepairAttempts; n < 0 || n > 10 {
		v.add("router.repair_attempts", "must be between 0 and 10, got %d", n)
	}
	v.positive("router.select_timeout", c.Router.SelectTimeout)
	v.positive("router.arguments_timeout", c.Router.ArgumentsTimeout)
	v.positive("router.execute_timeout", c.Router.ExecuteTimeout)
	if f := c.Router.OnModelFailure; f != FailNoTool && f != FailError {
		v.add("router.on_model_failure", "must be %q or %q, got %q", FailNoTool, FailError, f)
	}
	if n := c.Router.MaxQueryBytes; n <= 0 {
		v.add("router.max_query_bytes", "must be > 0, got %d", n)
	}
	if n := c.Router.MaxHistory; n < 0 {
		v.add("router.max_history", "must be >= 0, got %d", n)
	}

	if m := c.Router.Mode; m != ModeTwoPhase && m != ModeNative {
		v.add("router.mode", "must be %q or %q, got %q", ModeTwoPhase, ModeNative, m)
	}
	if n := c.Router.MaxToolCalls; n < 1 || n > 32 {
		v.add("router.max_tool_calls", "must be between 1 and 32, got %d", n)
	}
	if n := c.Router.ParallelCalls; n < 1 || n > 32 {
		v.add("router.parallel_calls", "must be between 1 and 32, got %d", n)
	}
	v.positive("router.deadline", c.Router.Deadline)
	if n := c.Router.ContextReserve; n < 0 {
		v.add("router.context_reserve", "must be >= 0, got %d", n)
	}
	if c.Trajectory.Path != "" {
		if c.Trajectory.MaxBytes <= 0 {
			v.add("trajectory.max_bytes", "must be > 0, got %d", c.Trajectory.MaxBytes)
		}
		if c.Trajectory.MaxFiles < 0 {
			v.add("trajectory.max_files", "must be >= 0, got %d", c.Trajectory.MaxFiles)
		}
		if c.Trajectory.QueueSize <= 0 {
			v.add("trajectory.queue_size", "must be > 0, got %d", c.Trajectory.QueueSize)
		}
	}

	if n := c.HTTP.BodyLimit; n <= 0 {
		v.add("http.body_limit", "must be > 0, got %d", n)
	}
	v.positive("http.read_timeout", c.HTTP.ReadTimeout)
	v.positive("http.write_timeout", c.HTTP.WriteTimeout)
	v.positive("http.request_timeout", c.HTTP.RequestTimeout)
	v.positive("http.shutdown_timeout", c.HTTP.ShutdownTimeout)

	for name, s := range c.Servers {
		v.server(name, s)
	}
	return sortedJoin(v.errs)
}

type validator struct{ errs []error }

func (v *validator) add(key, format string, args ...any) {
	v.errs = append(v.errs, &FieldError{Key: key, Reason: fmt.Sprintf(format, args...)})
}

func (v *validator) positive(key string, d Duration) {
	if d <= 0 {
		v.add(key, "must be > 0, got %s", d)
	}
}

func (v *validator) hostPort(key, s string) {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		v.add(key, "must be host:port, got %q", s)
		return
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n > 65535 {
		v.add(key, "port must be a number from 0 to 65535, got %q", port)
	}
}

func (v *validator) httpURL(key, s string) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.add(key, "must be an absolute http or https URL, got %q", s)
	}
}

func (v *validator) server(name string, s Server) {
	key := "servers." + name
	if !serverName.MatchString(name) {
		v.add(key, "invalid server name %q: must match %s", name, serverName)
	}
	switch s.Transport {
	case TransportBuiltin:
		if b := s.BuiltinName(name); !slices.Contains(KnownBuiltins, b) {
			v.add(key+".builtin", "unknown built-in %q, want one of %s", b, strings.Join(KnownBuiltins, ", "))
		}
		v.notAllowed(key, s, "command", "args", "env", "cwd", "url", "headers")
	case TransportStdio:
		if strings.TrimSpace(s.Command) == "" {
			v.add(key+".command", "required for transport %q", s.Transport)
		}
		v.notAllowed(key, s, "builtin", "url", "headers")
	case TransportStreamableHTTP, TransportSSE:
		if s.URL == "" {
			v.add(key+".url", "required for transport %q", s.Transport)
		} else {
			v.httpURL(key+".url", s.URL)
		}
		v.notAllowed(key, s, "builtin", "command", "args", "env", "cwd")
	default:
		quoted := make([]string, len(Transports))
		for i, t := range Transports {
			quoted[i] = strconv.Quote(string(t))
		}
		v.add(key+".transport", "must be one of %s, got %q", strings.Join(quoted, ", "), s.Transport)
	}
	v.positive(key+".connect_timeout", s.ConnectTimeout)
	v.positive(key+".call_timeout", s.CallTimeout)
	v.patterns(key+".tools.allow", s.Tools.Allow)
	v.patterns(key+".tools.deny", s.Tools.Deny)
}

// notAllowed reports the listed fields of s that are set although its
// transport does not use them.
func (v *validator) notAllowed(key string, s Server, fields ...string) {
	set := map[string]bool{
		"builtin": s.Builtin != "",
		"command": s.Command != "",
		"args":    len(s.Args) > 0,
		"env":     len(s.Env) > 0,
		"cwd":     s.Cwd != "",
		"url":     s.URL != "",
		"headers": len(s.Headers) > 0,
	}
	for _, f := range fields {
		if set[f] {
			v.add(key+"."+f, "not allowed with transport %q", s.Transport)
		}
	}
}

func (v *validator) patterns(key string, patterns []string) {
	for i, p := range patterns {
		if p == "" {
			v.add(fmt.Sprintf("%s[%d]", key, i), "must not be empty")
		} else if _, err := path.Match(p, ""); err != nil {
			v.add(fmt.Sprintf("%s[%d]", key, i), "invalid glob pattern %q: %v", p, err)
		}
	}
}
