package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"toolrouter/access"
	"toolrouter/redact"
)

// FieldError is one invalid configuration value: Key is the koanf key
// ("router.on_model_failure", "servers.fs.url"). It is access's type, so that the problems
// packages access and auth find in orgs and auth are reported like the rest.
type FieldError = access.FieldError

// serverName is the pattern of a provider name.
var serverName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// serverID is the pattern of a server's id, its key in Config.Servers once Load has derived it
// from the configured name (mcpconfig.ServerID). Ids cannot contain dots because qualified tool
// names are "server.tool".
var serverID = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

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
	if n := c.Ollama.MaxResponseBytes; n < 1 || n > maxResponseBytes {
		v.add("ollama.max_response_bytes", "must be between 1 and %d, got %d", maxResponseBytes, n)
	}

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
	if n := c.Router.MaxResultBytes; n < MinResultBytes {
		v.add("router.max_result_bytes", "must be at least %d, got %d", MinResultBytes, n)
	}
	if n := c.Router.MaxHistory; n < 0 {
		v.add("router.max_history", "must be >= 0, got %d", n)
	}

	if r := c.Log.Requests; r != RequestLogInfo && r != RequestLogDebug && r != RequestLogOff {
		v.add("log.requests", "must be %q, %q or %q, got %q", RequestLogInfo, RequestLogDebug, RequestLogOff, r)
	}

	if m := c.Router.Mode; m != ModeTwoPhase && m != ModeNative {
		v.add("router.mode", "must be %q or %q, got %q", ModeTwoPhase, ModeNative, m)
	}
	if r := c.Router.Reasoning; !slices.Contains(Reasonings, r) {
		v.add("router.reasoning", "must be one of %q, got %q", Reasonings, r)
	}
	switch m := c.Router.MinConfidence; {
	case m < 0 || m >= 1 || m != m:
		v.add("router.min_confidence", "must be at least 0 and below 1 (0: off), got %v", m)
	case m > 0 && c.Router.Mode == ModeNative:
		v.add("router.min_confidence", "needs router.mode %q: native mode has no phase-1 answer to read a confidence from", ModeTwoPhase)
	case m > 0:
		if p, _ := c.Provider(c.Router.Provider); p.Type != ProviderOllama {
			v.add("router.min_confidence", "needs an Ollama provider for the router: provider %q (%s) sends no logprobs", c.Router.Provider, p.Type)
		}
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
	if r := c.Retrieval; r.PromptBudget < 0 {
		v.add("retrieval.prompt_budget", "must be >= 0 (0: half the window), got %d", r.PromptBudget)
	}
	if r := c.Retrieval; r.MaxSearches < 0 || r.MaxSearches > 4 {
		v.add("retrieval.max_searches", "must be 0..4, got %d", r.MaxSearches)
	}
	if r := c.Retrieval; r.GenerateExamples < 0 || r.GenerateExamples > 20 {
		v.add("retrieval.generate_examples", "must be 0..20, got %d", r.GenerateExamples)
	}
	if r := c.Retrieval; r.GeneratePerMinute < 1 || r.GeneratePerMinute > 6000 {
		v.add("retrieval.generate_per_minute", "must be 1..6000, got %d", r.GeneratePerMinute)
	}
	if r := c.Retrieval; r.GenerateMax < 1 {
		v.add("retrieval.generate_max", "must be at least 1, got %d", r.GenerateMax)
	}
	if r := c.Retrieval; r.ExamplesPerTool < 1 || r.ExamplesPerTool > 1000 {
		v.add("retrieval.examples_per_tool", "must be 1..1000, got %d", r.ExamplesPerTool)
	}
	v.pinned(c)
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

	v.usage(c.Usage)
	v.safety(c)

	v.positive("mcp_server.session_idle_ttl", c.MCPServer.SessionIdleTTL)
	if n := c.MCPServer.MaxSessions; n <= 0 {
		v.add("mcp_server.max_sessions", "must be > 0, got %d", n)
	}
	if n := c.MCPServer.MaxSessionsPerIdentity; n <= 0 || n > c.MCPServer.MaxSessions {
		v.add("mcp_server.max_sessions_per_identity", "must be > 0 and at most mcp_server.max_sessions (%d), got %d", c.MCPServer.MaxSessions, n)
	}

	if n := c.HTTP.BodyLimit; n <= 0 {
		v.add("http.body_limit", "must be > 0, got %d", n)
	}
	v.positive("http.read_timeout", c.HTTP.ReadTimeout)
	v.positive("http.write_timeout", c.HTTP.WriteTimeout)
	v.positive("http.request_timeout", c.HTTP.RequestTimeout)
	v.positive("http.shutdown_timeout", c.HTTP.ShutdownTimeout)
	for i, o := range c.HTTP.AllowedOrigins {
		v.origin(fmt.Sprintf("http.allowed_origins[%d]", i), o)
	}
	for i, h := range c.HTTP.AllowedHosts {
		v.host(fmt.Sprintf("http.allowed_hosts[%d]", i), h)
	}

	if c.Metrics.Listen != "" {
		v.hostPort("metrics.listen", c.Metrics.Listen)
		switch {
		case !c.Metrics.Enabled:
			v.add("metrics.listen", "is set but metrics.enabled is false: set one or the other")
		case c.Metrics.Listen == c.Listen && !strings.HasSuffix(c.Listen, ":0"): // port 0: each its own port
			v.add("metrics.listen", "must differ from listen (%q), which serves /metrics already", c.Listen)
		}
	}

	if n := c.UI.RecentRequests; n < 0 || n > MaxRecentRequests {
		v.add("ui.recent_requests", "must be between 0 and %d, got %d", MaxRecentRequests, n)
	}
	if n := c.UI.RecentRequestsBytes; n <= 0 {
		v.add("ui.recent_requests_bytes", "must be > 0, got %d", n)
	}

	v.timeoutOrder(c)

	for name, s := range c.Servers {
		v.server(name, s)
	}
	// Both report *access.FieldError values, keyed and worded like ours.
	v.join(c.Orgs.Validate())
	v.join(c.Auth.Validate(c.Orgs))
	v.limits(c.Limits)

	used := map[string]string{} // provider name -> the key that uses it
	if _, ok := c.Providers[c.Router.Provider]; !ok {
		v.add("router.provider", "unknown provider %q, want one of %s", c.Router.Provider, strings.Join(c.providerNames(), ", "))
	} else {
		used[c.Router.Provider] = "router.provider"
	}
	if c.Council.Enabled() {
		v.council(c, used)
	}
	for name, p := range c.Providers {
		v.provider(name, p, used[name])
	}
	return sortedJoin(v.errs)
}

func (c Config) providerNames() []string {
	names := make([]string, 0, len(c.Providers))
	for n := range c.Providers {
		names = append(names, strconv.Quote(n))
	}
	slices.Sort(names)
	return names
}

// envName is the pattern of an environment variable name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// keyPrefixes start common API keys; a value of api_key_env starting with one
// is a key, not a variable name.
var keyPrefixes = []string{"sk-", "sk_", "gsk_", "xai-", "hf_", "aiza", "pplx-", "r8_", "csk-", "bearer", "key-"}

// looksLikeKey reports whether s is more likely a secret than a variable
// name: a known key prefix, or a long mixed-case string with digits (variable
// names are conventionally upper case).
func looksLikeKey(s string) bool {
	low := strings.ToLower(s)
	for _, p := range keyPrefixes {
		if strings.HasPrefix(low, p) {
			return true
		}
	}
	if len(s) < 24 {
		return false
	}
	var lower, upper, digit bool
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= '0' && r <= '9':
			digit = true
		}
	}
	return lower && upper && digit
}

// provider checks one provider; usedBy names a key that uses it, empty when
// none does. Its API key's value is never part of a message.
func (v *validator) provider(name string, p Provider, usedBy string) {
	key := "providers." + name
	if !serverName.MatchString(name) {
		v.add(key, "invalid provider name %q: must match %s", name, serverName)
	}
	switch p.Type {
	case ProviderOllama:
		if p.BaseURL != "" {
			v.httpURL(key+".base_url", p.BaseURL)
		}
		if p.APIKeyEnv != "" {
			v.add(key+".api_key_env", "not allowed with type %q (Ollama takes no API key)", p.Type)
			return
		}
	case ProviderOpenAI:
		if p.BaseURL == "" {
			v.add(key+".base_url", "required for type %q, e.g. \"https://api.openai.com/v1\"", p.Type)
		} else {
			v.httpURL(key+".base_url", p.BaseURL)
		}
	default:
		v.add(key+".type", "must be %q or %q, got %q", ProviderOllama, ProviderOpenAI, p.Type)
	}
	if p.APIKeyEnv == "" {
		return
	}
	if !envName.MatchString(p.APIKeyEnv) || looksLikeKey(p.APIKeyEnv) {
		// Never echo the value: it may be the key itself.
		v.add(key+".api_key_env", "must be the name of an environment variable holding the key (e.g. OPENAI_API_KEY), never the key itself")
		return
	}
	if val, ok := os.LookupEnv(p.APIKeyEnv); usedBy != "" && (!ok || val == "") {
		v.add(key+".api_key_env", "environment variable %s is not set (provider used by %s)", p.APIKeyEnv, usedBy)
	}
}

// memberName is the pattern of a council member's name.
var memberName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:/@+-]{0,63}$`)

func (v *validator) council(c Config, used map[string]string) {
	co := c.Council
	names := map[string]string{} // name -> key of the first member with it
	check := func(key string, m Member) {
		if !memberName.MatchString(m.Name) {
			v.add(key+".name", "invalid name %q: must match %s", m.Name, memberName)
		} else if first, dup := names[m.Name]; dup {
			v.add(key+".name", "name %q is already used by %s", m.Name, first)
		} else {
			names[m.Name] = key
		}
		if _, ok := c.Providers[m.Provider]; !ok {
			v.add(key+".provider", "unknown provider %q, want one of %s", m.Provider, strings.Join(c.providerNames(), ", "))
		} else if _, ok := used[m.Provider]; !ok {
			used[m.Provider] = key
		}
		if strings.TrimSpace(m.Model) == "" {
			v.add(key+".model", "must not be empty")
		}
		v.positive(key+".timeout", m.Timeout)
		if m.PricePromptPerMTok < 0 {
			v.add(key+".price_prompt_per_mtok", "must be >= 0, got %v", m.PricePromptPerMTok)
		}
		if m.PriceCompletionPerMTok < 0 {
			v.add(key+".price_completion_per_mtok", "must be >= 0, got %v", m.PriceCompletionPerMTok)
		}
	}
	for i, m := range co.Members {
		check(fmt.Sprintf("council.members[%d]", i), m)
	}
	check("council.chairman", co.Chairman)
	if n := co.Quorum; n < 1 || n > len(co.Members) {
		v.add("council.quorum", "must be between 1 and the number of members (%d), got %d", len(co.Members), n)
	}
	if co.StageTimeout < 0 {
		v.add("council.stage_timeout", "must be >= 0, got %s", co.StageTimeout)
	}
}

// timeout is a duration setting and its key.
type timeout struct {
	key string
	d   Duration
}

// timeoutOrder checks that the timeouts nest as the package documentation
// says: an inner timeout longer than the one containing it would never take
// effect, so it is refused, naming both keys. A timeout that is not positive
// is reported by its own check.
func (v *validator) timeoutOrder(c Config) {
	var (
		write    = timeout{"http.write_timeout", c.HTTP.WriteTimeout}
		request  = timeout{"http.request_timeout", c.HTTP.RequestTimeout}
		deadline = timeout{"router.deadline", c.Router.Deadline}
		sel      = timeout{"router.select_timeout", c.Router.SelectTimeout}
		args     = timeout{"router.arguments_timeout", c.Router.ArgumentsTimeout}
		execute  = timeout{"router.execute_timeout", c.Router.ExecuteTimeout}
		model    = timeout{"ollama.timeout", c.Ollama.Timeout}
	)
	nest := [][2]timeout{ // outer, inner
		{write, request},
		{request, deadline},
		{deadline, sel}, {deadline, args}, {deadline, execute},
		{sel, model}, {args, model},
	}
	if c.Council.Enabled() {
		nest = append(nest, [2]timeout{request, {"council.stage_timeout", c.Council.StageTimeout}},
			[2]timeout{request, {"council.chairman.timeout", c.Council.Chairman.Timeout}})
		for i, m := range c.Council.Members {
			nest = append(nest, [2]timeout{request, {fmt.Sprintf("council.members[%d].timeout", i), m.Timeout}})
		}
	}
	for _, n := range nest {
		outer, inner := n[0], n[1]
		if outer.d > 0 && inner.d > outer.d {
			v.add(inner.key, "%s is longer than %s (%s), which contains it",
				inner.d, outer.key, outer.d)
		}
	}
}

type validator struct{ errs []error }

func (v *validator) add(key, format string, args ...any) {
	v.errs = append(v.errs, &FieldError{Key: key, Reason: fmt.Sprintf(format, args...)})
}

// join adds the problems of another package's validation (errors.Join of field errors).
func (v *validator) join(err error) {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		v.errs = append(v.errs, j.Unwrap()...)
	} else if err != nil {
		v.errs = append(v.errs, err)
	}
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

// maxResponseBytes bounds ollama.max_response_bytes: a model answer is held in memory whole.
const maxResponseBytes = 256 << 20

// origin checks a browser origin as an Origin header carries it: scheme://host[:port], nothing
// more (no path, no trailing slash), lower case as browsers send it.
func (v *validator) origin(key, s string) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || s != strings.ToLower(s) {
		v.add(key, "must be an origin as browsers send it, scheme://host[:port] in lower case (e.g. \"https://app.example.com\"), got %q", s)
	}
}

// host checks a Host header value as http.allowed_hosts holds it: a name or IP address, with a
// port or without (any port), lower case, nothing more.
func (v *validator) host(key, s string) {
	h := s
	if strings.ContainsAny(s, "/?#@ *\\") {
		h = ""
	} else if host, port, err := net.SplitHostPort(s); err == nil {
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
			v.add(key, "port must be a number from 1 to 65535, got %q", port)
			return
		}
		h = host
	} else if strings.Contains(strings.Trim(s, "[]"), ":") && !strings.HasPrefix(s, "[") {
		h = "" // an IPv6 address without brackets
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if h == "" || s != strings.ToLower(s) {
		v.add(key, "must be a host as the Host header carries it, \"name\" or \"name:port\" in lower case (e.g. \"toolrouter.internal:8090\"), got %q", s)
	}
}

func (v *validator) httpURL(key, s string) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.add(key, "must be an absolute http or https URL, got %q", redact.URL(s))
	}
}

func (v *validator) server(name string, s Server) {
	key := "servers." + name
	if from := len(v.errs); s.Source != "" || (s.DisplayName != "" && s.DisplayName != name) {
		// Name the server as its file does, and the file when it is an MCP client's.
		defer func() {
			where := fmt.Sprintf(" (server %q", s.DisplayName)
			if s.Source != "" {
				where += " in " + s.Source
			}
			for _, err := range v.errs[from:] {
				if fe, ok := err.(*FieldError); ok {
					fe.Reason += where + ")"
				}
			}
		}()
	}
	if !serverID.MatchString(name) || strings.Trim(name, "_") == "" {
		v.add(key, "invalid server id %q: must match %s (Load derives it from the server's name)", name, serverID)
	}
	switch s.Transport {
	case TransportBuiltin:
		if b := s.BuiltinName(name); !slices.Contains(knownBuiltins(), b) {
			v.add(key+".builtin", "unknown built-in %q, want one of %s", b, strings.Join(knownBuiltins(), ", "))
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
		quoted := make([]string, len(transports()))
		for i, t := range transports() {
			quoted[i] = strconv.Quote(string(t))
		}
		v.add(key+".transport", "must be one of %s, got %q", strings.Join(quoted, ", "), s.Transport)
	}
	v.positive(key+".connect_timeout", s.ConnectTimeout)
	v.positive(key+".call_timeout", s.CallTimeout)
	v.positive(key+".list_ttl_min", s.ListTTLMin)
	v.positive(key+".list_ttl_max", s.ListTTLMax)
	if s.ListTTLMin > 0 && s.ListTTLMax > 0 && s.ListTTLMin > s.ListTTLMax {
		v.add(key+".list_ttl_max", "must be at least list_ttl_min (%s), got %s", s.ListTTLMin, s.ListTTLMax)
	}
	for _, b := range []struct {
		key string
		n   int
	}{{"max_schema_bytes", s.MaxSchemaBytes}, {"max_schema_depth", s.MaxSchemaDepth}, {"max_message_bytes", s.MaxMessageBytes}} {
		if b.n <= 0 {
			v.add(key+"."+b.key, "must be > 0, got %d", b.n)
		}
	}
	v.patterns(key+".tools.allow", s.Tools.Allow)
	v.patterns(key+".tools.deny", s.Tools.Deny)
	for i, n := range s.Secrets {
		_, inEnv := s.Env[n]
		inHeaders := false
		for h := range s.Headers {
			inHeaders = inHeaders || strings.EqualFold(h, n)
		}
		if !inEnv && !inHeaders {
			v.add(fmt.Sprintf("%s.secrets[%d]", key, i), "%q is neither a header nor an env variable of the server", n)
		}
	}
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

// pinned checks retrieval.pinned: patterns as access lists take them (a qualified name, a server
// name, or a path.Match glob over qualified names), and a server named outright must be
// configured, so that a typo does not leave the tools it meant unpinned.
func (v *validator) pinned(c Config) {
	for i, p := range c.Retrieval.Pinned {
		key := fmt.Sprintf("retrieval.pinned[%d]", i)
		server, _, _ := strings.Cut(p, ".")
		switch {
		case p == "":
			v.add(key, "must not be empty")
		case strings.Contains(p, "/"):
			v.add(key, "bad pattern %q: tool names have no '/'", p)
		case !validGlob(p):
			v.add(key, "bad pattern %q: not a valid glob", p)
		case !strings.ContainsAny(server, `*?[\`) && !c.hasServer(server):
			v.add(key, "%q names no configured server (servers: %s)", p, strings.Join(c.serverIDs(), ", "))
		}
	}
}

func validGlob(p string) bool {
	_, err := path.Match(p, "")
	return err == nil
}

// hasServer reports whether a server of that id is configured, enabled or not.
func (c Config) hasServer(id string) bool {
	_, ok := c.Servers[id]
	return ok
}

// serverIDs returns the configured servers' ids, sorted.
func (c Config) serverIDs() []string {
	ids := make([]string, 0, len(c.Servers))
	for id := range c.Servers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// limits checks the rate limits' settings.
func (v *validator) limits(l Limits) {
	v.join(l.Anonymous.Validate("limits.anonymous"))
	if l.RedisURL != "" {
		u, err := url.Parse(l.RedisURL)
		switch {
		case err != nil:
			v.add("limits.redis_url", "not a URL: %q", redact.URL(l.RedisURL))
		case u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "unix":
			v.add("limits.redis_url", "must be a redis://, rediss:// or unix:// URL, got %q", redact.URL(l.RedisURL))
		case u.Scheme != "unix" && u.Host == "":
			v.add("limits.redis_url", "has no host: want redis://HOST:PORT[/DB], got %q", redact.URL(l.RedisURL))
		}
	}
	if m := l.OnRedisDown; m != RedisLocal && m != RedisFailOpen && m != RedisClosed {
		v.add("limits.on_redis_down", "must be %q, %q or %q, got %q", RedisLocal, RedisFailOpen, RedisClosed, m)
	}
	if l.Replicas < 1 {
		v.add("limits.replicas", "must be >= 1 (the replicas sharing limits.redis_url), got %d", l.Replicas)
	}
	v.positive("limits.redis_timeout", l.RedisTimeout)
}

// usage checks the usage records' settings when they are on. The PostgreSQL URL (or key=value
// connection string) may not hold a password: like every secret, it comes from the environment
// (PGPASSWORD) or a password file.
func (v *validator) usage(u Usage) {
	if !u.Enabled() {
		return
	}
	if u.PostgresURL == "" && strings.Contains(u.Path, "?") {
		v.add("usage.path", "must not contain '?', got %q", u.Path)
	}
	if dsn := u.PostgresURL; dsn != "" {
		if strings.Contains(dsn, "://") {
			p, err := url.Parse(dsn)
			switch {
			case err != nil:
				v.add("usage.postgres_url", "is not a valid URL")
			case p.Scheme != "postgres" && p.Scheme != "postgresql":
				v.add("usage.postgres_url", "must be a postgres:// or postgresql:// URL, got scheme %q", p.Scheme)
			case hasPassword(p):
				v.add("usage.postgres_url", "must not hold a password: set it in the PGPASSWORD environment variable or a password file (PGPASSFILE)")
			}
		} else if dsnPassword.MatchString(dsn) {
			v.add("usage.postgres_url", "must not hold a password: set it in the PGPASSWORD environment variable or a password file (PGPASSFILE)")
		}
	}
	if u.QueueSize <= 0 {
		v.add("usage.queue_size", "must be > 0, got %d", u.QueueSize)
	}
	if u.QueueSize > 0 && (u.BatchSize <= 0 || u.BatchSize > u.QueueSize) {
		v.add("usage.batch_size", "must be between 1 and usage.queue_size (%d), got %d", u.QueueSize, u.BatchSize)
	}
	v.positive("usage.flush_interval", u.FlushInterval)
	v.positive("usage.write_timeout", u.WriteTimeout)
	if u.Retention < 0 {
		v.add("usage.retention", "must be >= 0 (0 keeps records forever), got %s", u.Retention)
	}
}

// dsnPassword finds a password in a key=value connection string.
var dsnPassword = regexp.MustCompile(`(?i)(^|\s)password\s*=`)

// hasPassword reports whether a URL holds a password, in its user part or its query.
func hasPassword(u *url.URL) bool {
	if _, ok := u.User.Password(); ok {
		return true
	}
	for k := range u.Query() {
		if strings.EqualFold(k, "password") {
			return true
		}
	}
	return false
}
