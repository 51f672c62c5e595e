// Package mcpconfig reads the MCP server lists that other MCP clients keep, so that toolrouter
// serves the servers a user has already configured: Claude Desktop's claude_desktop_config.json,
// Cursor's mcp.json, Windsurf's mcp_config.json and Claude Code's .mcp.json (an "mcpServers"
// object), and VS Code's .vscode/mcp.json or settings.json ("servers" and "inputs", at the top or
// under "mcp"). It infers each server's transport, expands the files' ${...} variables, resolves
// their relative paths and derives each server's id (ServerID). It does not validate what a
// server's settings mean (package config does) and starts nothing.
package mcpconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Transport is how a server is reached; the values are package config's transport names.
type Transport string

// Values of Transport.
const (
	Stdio          Transport = "stdio"
	StreamableHTTP Transport = "streamable-http"
	SSE            Transport = "sse"
)

// Server is one server read from a file, its variables expanded and its paths absolute.
type Server struct {
	// Name is the name the file gives it ("GitHub"); ID is ServerID(Name) ("github").
	Name string
	ID   string
	// File is the file it was read from, as it was named to Read.
	File      string
	Transport Transport
	// Command, Args, Env and Cwd start a stdio server; Cwd is the file's directory unless set.
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string
	// URL and Headers reach an HTTP or SSE server.
	URL     string
	Headers map[string]string
	// Secrets names the headers and environment variables whose values were read from a
	// variable named like a secret or a password input (see SecretSourced), sorted.
	Secrets []string
}

// Options tunes Read; the zero value works.
type Options struct {
	// LookupEnv reads the environment for ${env:VAR}, ${VAR} and inputs (nil: os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// Inputs are values for ${input:ID} given in configuration, by id; InputsFrom says where
	// ("config file config.json"). The environment variable InputEnv(ID) wins over them, and an
	// input the file declares a password is read only from there.
	Inputs     map[string]string
	InputsFrom string
	// Home is the directory "~" and ${userHome} stand for (""; the user's home directory).
	Home string
}

// maxFileBytes bounds one configuration file; maxEnvFileBytes one envFile.
const (
	maxFileBytes    = 4 << 20
	maxEnvFileBytes = 1 << 20
)

// Read reads the servers of every file in paths, in order, each file's servers sorted by name.
// A server with "disabled": true is left out. Two servers with the same id, in one file or two,
// are an error naming both; so is a file that cannot be read, a variable without a value and a
// server with neither a command nor a URL. Every problem found is reported, joined.
func Read(paths []string, opts Options) ([]Server, error) {
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	if opts.Home == "" {
		opts.Home, _ = os.UserHomeDir()
	}
	var (
		out  []Server
		errs []error
		seen = map[string]Server{} // id -> the first server with it
	)
	named := map[string]string{} // absolute path -> the path as given
	for _, p := range paths {
		if a, err := filepath.Abs(expandHome(p, opts.Home)); err == nil {
			if first, twice := named[a]; twice {
				errs = append(errs, fmt.Errorf("mcp config %s: named twice (also as %s)", p, first))
				continue
			}
			named[a] = p
		}
		servers, err := readFile(p, opts)
		if err != nil {
			errs = append(errs, err)
		}
		for _, s := range servers {
			if first, dup := seen[s.ID]; dup {
				errs = append(errs, duplicateError(first, s))
				continue
			}
			seen[s.ID] = s
			out = append(out, s)
		}
	}
	return out, errors.Join(errs...)
}

func duplicateError(first, s Server) error {
	if first.File == s.File {
		return fmt.Errorf("%s: servers %q and %q both have the id %q: rename one", s.File, first.Name, s.Name, s.ID)
	}
	if first.Name == s.Name {
		return fmt.Errorf("server %q is defined in both %s and %s: remove or rename one", s.Name, first.File, s.File)
	}
	return fmt.Errorf("server %q in %s and server %q in %s have the same id %q: rename one", first.Name, first.File, s.Name, s.File, s.ID)
}

// fileShape is every top-level shape Read understands.
type fileShape struct {
	MCPServers map[string]json.RawMessage `json:"mcpServers"`
	Servers    map[string]json.RawMessage `json:"servers"`
	Inputs     []input                    `json:"inputs"`
	// MCP is VS Code's settings.json section.
	MCP *struct {
		Servers map[string]json.RawMessage `json:"servers"`
		Inputs  []input                    `json:"inputs"`
	} `json:"mcp"`
}

// input is one of VS Code's "inputs": a value the editor would prompt for.
type input struct {
	ID          string `json:"id"`
	Description string `json:"description"`
	Password    bool   `json:"password"`
}

// entry is one server as the files write it; keys other clients add (autoApprove, alwaysAllow,
// timeout, ...) are ignored.
type entry struct {
	Type          string          `json:"type"`
	Transport     string          `json:"transport"`
	TransportType string          `json:"transportType"`
	Command       string          `json:"command"`
	Args          []any           `json:"args"`
	Env           map[string]any  `json:"env"`
	EnvFile       string          `json:"envFile"`
	Cwd           string          `json:"cwd"`
	URL           string          `json:"url"`
	ServerURL     string          `json:"serverUrl"`
	Headers       map[string]any  `json:"headers"`
	Disabled      json.RawMessage `json:"disabled"`
}

// readFile reads one file's servers; the error joins its problems, each naming the file.
func readFile(p string, opts Options) ([]Server, error) {
	path := expandHome(p, opts.Home)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("mcp config %s: %w", p, err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("mcp config %s: %w", p, err)
	}
	if len(raw) > maxFileBytes {
		return nil, fmt.Errorf("mcp config %s: larger than %d bytes", p, maxFileBytes)
	}
	var shape fileShape
	if err := json.Unmarshal(stripJSONC(raw), &shape); err != nil {
		return nil, fmt.Errorf("mcp config %s: %w", p, err)
	}
	servers, inputs := shape.MCPServers, shape.Inputs
	switch {
	case shape.MCPServers != nil && (shape.Servers != nil || shape.MCP != nil):
		return nil, fmt.Errorf("mcp config %s: has both \"mcpServers\" and VS Code's \"servers\": keep one", p)
	case shape.Servers != nil:
		servers = shape.Servers
	case shape.MCP != nil && shape.MCP.Servers != nil:
		servers, inputs = shape.MCP.Servers, shape.MCP.Inputs
	case shape.MCPServers == nil:
		return nil, fmt.Errorf("mcp config %s: no \"mcpServers\" (Claude Desktop, Cursor, Windsurf) or \"servers\" (VS Code) object", p)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("mcp config %s: %w", p, err)
	}
	r := fileReader{file: p, dir: filepath.Dir(abs), opts: opts, inputs: map[string]input{}}
	for _, in := range inputs {
		r.inputs[inputKey(in.ID)] = in
	}
	ws := r.dir
	if b := filepath.Base(ws); b == ".vscode" || b == ".cursor" {
		ws = filepath.Dir(ws)
	}
	r.vars = expander{lookupEnv: opts.LookupEnv, input: r.input, predefined: map[string]string{
		"workspaceFolder": ws, "workspaceFolderBasename": filepath.Base(ws), "userHome": opts.Home,
		"pathSeparator": string(filepath.Separator), "/": string(filepath.Separator),
	}}
	names := make([]string, 0, len(servers))
	for name := range servers {
		names = append(names, name)
	}
	slices.Sort(names)
	var (
		out  []Server
		errs []error
	)
	for _, name := range names {
		s, ok, err := r.server(name, servers[name])
		if err != nil {
			errs = append(errs, fmt.Errorf("mcp config %s: server %q: %w", p, name, err))
		} else if ok {
			out = append(out, s)
		}
	}
	return out, errors.Join(errs...)
}

// fileReader reads the servers of one file.
type fileReader struct {
	file   string
	dir    string // the file's directory, absolute
	opts   Options
	inputs map[string]input // declared inputs by inputKey
	vars   expander
}

// server reads one entry; ok is false for a disabled server.
func (r fileReader) server(name string, raw json.RawMessage) (s Server, ok bool, err error) {
	id, err := ServerID(name)
	if err != nil {
		return Server{}, false, err
	}
	var e entry
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&e); err != nil {
		return Server{}, false, err
	}
	if disabled, err := flag(e.Disabled); err != nil {
		return Server{}, false, fmt.Errorf("disabled: %w", err)
	} else if disabled {
		return Server{}, false, nil
	}
	s = Server{Name: name, ID: id, File: r.file, URL: e.URL}
	if e.ServerURL != "" {
		if s.URL != "" && s.URL != e.ServerURL {
			return Server{}, false, errors.New(`has both "url" and "serverUrl": keep one`)
		}
		s.URL = e.ServerURL
	}
	if s.Transport, err = transport(e, s.URL); err != nil {
		return Server{}, false, err
	}
	var errs []error
	field := func(key, v string) string {
		out, err := r.vars.expand(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		}
		return out
	}
	s.URL = field("url", s.URL)
	if s.Headers, err = strings1(e.Headers, "headers"); err != nil {
		return Server{}, false, err
	}
	password := func(id string) bool { return r.inputs[inputKey(id)].Password }
	for _, k := range sortedKeys(s.Headers) {
		if SecretSourced(s.Headers[k], password) {
			s.Secrets = append(s.Secrets, k)
		}
		s.Headers[k] = field("headers."+k, s.Headers[k])
	}
	if s.Transport == Stdio {
		s.Cwd = r.path(field("cwd", e.Cwd))
		if s.Cwd == "" {
			s.Cwd = r.dir
		}
		s.Command = expandHome(field("command", e.Command), r.opts.Home)
		if !filepath.IsAbs(s.Command) && strings.ContainsRune(s.Command, '/') {
			s.Command = filepath.Join(s.Cwd, s.Command)
		}
	} else if e.Cwd != "" || e.Command != "" {
		errs = append(errs, fmt.Errorf("command and cwd are not used with transport %q", s.Transport))
	}
	for i, a := range e.Args {
		v, err := scalar(a)
		if err != nil {
			return Server{}, false, fmt.Errorf("args[%d]: %w", i, err)
		}
		s.Args = append(s.Args, expandHome(field(fmt.Sprintf("args[%d]", i), v), r.opts.Home))
	}
	env, err := strings1(e.Env, "env")
	if err != nil {
		return Server{}, false, err
	}
	if e.EnvFile != "" {
		f := r.path(field("envFile", e.EnvFile))
		fromFile, err := readEnvFile(f)
		if err != nil {
			errs = append(errs, fmt.Errorf("envFile: %w", err))
		}
		for k, v := range fromFile {
			if _, set := env[k]; !set {
				if env == nil {
					env = map[string]string{}
				}
				env[k] = v // not expanded: an env file's values are literal
			}
		}
	}
	for _, k := range sortedKeys(e.Env) {
		if SecretSourced(env[k], password) {
			s.Secrets = append(s.Secrets, k)
		}
		env[k] = field("env."+k, env[k])
	}
	slices.Sort(s.Secrets)
	s.Env = env
	return s, true, errors.Join(errs...)
}

// path makes a path from the file absolute: "~" is the home directory, a relative path is
// relative to the file's directory. "" stays "".
func (r fileReader) path(p string) string {
	p = expandHome(p, r.opts.Home)
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(r.dir, p)
}

// input gives ${input:id}: from the environment variable InputEnv(id), else from Options.Inputs
// unless the file declares the input a password.
func (r fileReader) input(id string) (string, error) {
	env := InputEnv(id)
	if v, ok := r.opts.LookupEnv(env); ok {
		return v, nil
	}
	decl := r.inputs[inputKey(id)]
	for k, v := range r.opts.Inputs {
		if inputKey(k) != inputKey(id) {
			continue
		}
		if decl.Password {
			return "", fmt.Errorf("input %q is a password: set it in the environment variable %s, never in configuration (%s)", id, env, r.opts.InputsFrom)
		}
		return v, nil
	}
	what := ""
	if decl.Description != "" {
		what = fmt.Sprintf(" (%s)", decl.Description)
	}
	if decl.Password {
		return "", fmt.Errorf("input %q%s has no value: set the environment variable %s", id, what, env)
	}
	return "", fmt.Errorf("input %q%s has no value: set the environment variable %s or inputs.%s in the config file", id, what, env, id)
}

// transport infers a server's transport: its type (or transport, transportType) when given,
// else stdio for a command and streamable HTTP for a URL.
func transport(e entry, url string) (Transport, error) {
	given := e.Type
	for _, t := range []string{e.Transport, e.TransportType} {
		if given == "" {
			given = t
		}
	}
	switch strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(given)) {
	case "stdio":
		return Stdio, nil
	case "http", "streamablehttp":
		return StreamableHTTP, nil
	case "sse":
		return SSE, nil
	case "":
	default:
		return "", fmt.Errorf("unknown type %q: want \"stdio\", \"http\" (streamable HTTP) or \"sse\"", given)
	}
	switch {
	case e.Command != "" && url != "":
		return "", errors.New(`has both "command" and "url": give "type" ("stdio", "http" or "sse")`)
	case e.Command != "":
		return Stdio, nil
	case url != "":
		return StreamableHTTP, nil
	}
	return "", errors.New(`needs "command" (a stdio server) or "url" (an HTTP server)`)
}

// flag reads "disabled": true, false or absent.
func flag(raw json.RawMessage) (bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return false, nil
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		return false, fmt.Errorf("want true or false, got %s", raw)
	}
	return b, nil
}

// strings1 turns a map of scalars (env, headers) into strings; nil stays nil.
func strings1(m map[string]any, key string) (map[string]string, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		s, err := scalar(v)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", key, k, err)
		}
		out[k] = s
	}
	return out, nil
}

// scalar is a string, number or boolean as a string.
func scalar(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case json.Number:
		return v.String(), nil
	case bool:
		return fmt.Sprint(v), nil
	case nil:
		return "", errors.New("null is not supported: give a string or leave the key out")
	}
	return "", fmt.Errorf("want a string, got %T", v)
}

// expandHome replaces a leading "~" (alone or before a slash) with home.
func expandHome(p, home string) string {
	if p == "~" {
		return home
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return p
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
