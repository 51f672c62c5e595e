package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"toolrouter/mcpconfig"
)

// fileRelativeKeys are the path-valued keys (besides servers_from and servers.NAME.cwd and
// .command) that a config file gives relative to its own directory: Load makes them absolute, so
// that toolrouter finds the same files whatever directory it is started from. A path given in the
// environment or a flag stays relative to the working directory.
var fileRelativeKeys = []string{"trajectory.path", "retrieval.examples_file", "retrieval.vector_cache", "usage.path"}

// origin is where a server was defined: its display name and the file.
type origin struct {
	name string // the name the file gives it
	file string // the file; "" for the environment and defaults
	mcp  bool   // an MCP client's file (servers_from, -mcp-config), not the config file
}

// prepareFile readies the config file's raw map (as read from path) for merging: its relative
// paths become absolute against the file's directory ("~" is the home directory), the
// ${env:VAR} and ${VAR} variables of its servers' url, headers and env are expanded, and its
// servers are keyed by their ids (mcpconfig.ServerID), their names kept in origins.
func prepareFile(raw map[string]any, path string, origins map[string]origin) error {
	// The usage database's default lives beside the config file, as if the file named it.
	usage, ok := raw["usage"].(map[string]any)
	if !ok && raw["usage"] == nil {
		usage = map[string]any{}
		raw["usage"] = usage
	}
	if usage != nil {
		setMissing(usage, "path", Default().Usage.Path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	dir := filepath.Dir(abs)
	home, _ := os.UserHomeDir()
	resolve := func(p string) string {
		if p == "~" || strings.HasPrefix(p, "~/") {
			p = filepath.Join(home, strings.TrimPrefix(p, "~"))
		}
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	for _, key := range fileRelativeKeys {
		sect, leaf, _ := strings.Cut(key, ".")
		if m, ok := raw[sect].(map[string]any); ok {
			if p, ok := m[leaf].(string); ok {
				m[leaf] = resolve(p)
			}
		}
	}
	if list, ok := raw["servers_from"].([]any); ok {
		for i, p := range list {
			if s, ok := p.(string); ok {
				list[i] = resolve(s)
			}
		}
	}
	servers, ok := raw["servers"].(map[string]any)
	if !ok {
		return nil
	}
	var errs []error
	byID := map[string]any{}
	names := make([]string, 0, len(servers))
	for name := range servers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		id, err := mcpconfig.ServerID(name)
		if err != nil {
			errs = append(errs, fmt.Errorf("config file %s: servers.%s: %w", path, name, err))
			continue
		}
		if first, dup := origins[id]; dup {
			errs = append(errs, fmt.Errorf("config file %s: servers %q and %q both have the id %q: rename one", path, first.name, name, id))
			continue
		}
		origins[id] = origin{name: name, file: path}
		byID[id] = servers[name]
		s, ok := servers[name].(map[string]any)
		if !ok {
			continue // decode reports the type error
		}
		cwd, _ := s["cwd"].(string)
		if cwd != "" {
			cwd = resolve(cwd)
			s["cwd"] = cwd
		}
		if cmd, ok := s["command"].(string); ok && strings.ContainsRune(cmd, '/') && !filepath.IsAbs(cmd) {
			if cwd != "" {
				s["command"] = filepath.Join(cwd, cmd)
			} else {
				s["command"] = resolve(cmd)
			}
		}
		expand := func(key string, v any) any {
			str, ok := v.(string)
			if !ok {
				return v
			}
			out, err := mcpconfig.ExpandEnv(str, nil)
			if err != nil {
				errs = append(errs, fmt.Errorf("config file %s: servers.%s.%s: %w", path, name, key, err))
			}
			return out
		}
		if u, ok := s["url"]; ok {
			s["url"] = expand("url", u)
		}
		var sourced []string // headers and variables read from a secret-named variable
		for _, field := range []string{"headers", "env"} {
			m, _ := s[field].(map[string]any)
			for k, v := range m {
				if str, ok := v.(string); ok && mcpconfig.SecretSourced(str, nil) {
					sourced = append(sourced, k)
				}
				m[k] = expand(field+"."+k, v)
			}
		}
		if marked, ok := s["secrets"].([]any); len(sourced) > 0 && (ok || s["secrets"] == nil) {
			slices.Sort(sourced)
			s["secrets"] = append(marked, anySlice(sourced)...) // another type: decode reports it
		}
	}
	raw["servers"] = byID
	return sortedJoin(errs)
}

// mcpServers reads the MCP clients' files (servers_from, then -mcp-config) and returns their
// servers as a layer to merge, keyed by id. A server with the id of one the config file defines
// is an error naming both files; one with the id of a built-in default (calculator, clock) takes
// its place, so the caller deletes those named in replaced.
func mcpServers(files []string, inputs map[string]string, configFile string, origins map[string]origin) (layer map[string]any, replaced []string, err error) {
	servers, err := mcpconfig.Read(files, mcpconfig.Options{Inputs: inputs, InputsFrom: "config file " + configFile})
	if err != nil {
		return nil, nil, err
	}
	var errs []error
	layer = map[string]any{}
	defaults := Default().Servers
	for _, s := range servers {
		if first, dup := origins[s.ID]; dup {
			errs = append(errs, fmt.Errorf("server %q in %s and server %q in config file %s have the same id %q: remove or rename one",
				s.Name, s.File, first.name, first.file, s.ID))
			continue
		}
		origins[s.ID] = origin{name: s.Name, file: s.File, mcp: true}
		if _, ok := defaults[s.ID]; ok {
			replaced = append(replaced, s.ID)
		}
		m := map[string]any{"transport": string(s.Transport)}
		for k, v := range map[string]string{"command": s.Command, "cwd": s.Cwd, "url": s.URL} {
			if v != "" {
				m[k] = v
			}
		}
		if len(s.Args) > 0 {
			m["args"] = anySlice(s.Args)
		}
		if len(s.Env) > 0 {
			m["env"] = anyMap(s.Env)
		}
		if len(s.Headers) > 0 {
			m["headers"] = anyMap(s.Headers)
		}
		if len(s.Secrets) > 0 {
			m["secrets"] = anySlice(s.Secrets)
		}
		layer[s.ID] = m
	}
	return layer, replaced, sortedJoin(errs)
}

// serversFrom is the list of MCP files to read: the environment's servers_from when set (one
// path, relative to the working directory), else the config file's (already absolute).
func serversFrom(fileRaw, envRaw map[string]any) []string {
	v, ok := envRaw["servers_from"]
	if !ok {
		v = fileRaw["servers_from"]
	}
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, p := range v {
			if s, ok := p.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// stringMap reads a free-form map of strings (inputs) from a raw layer.
func stringMap(v any) map[string]string {
	m, _ := v.(map[string]any)
	out := make(map[string]string, len(m))
	for k, x := range m {
		if s, ok := x.(string); ok {
			out[k] = s
		}
	}
	return out
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func anyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
