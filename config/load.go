package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	kjson "github.com/knadh/koanf/parsers/json"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/env"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"

	"toolrouter/access"
)

// Load builds the configuration from the built-in defaults, OLLAMA_HOST (as ollama.host), the
// JSON file at path (none when path is ""), the servers of the MCP clients' files it lists in
// servers_from and of mcpConfigs (-mcp-config), the TOOLROUTER_ environment and flags (koanf keys
// such as "ollama.host" mapped to values; only flags the user set), in that order, and validates
// it. Paths in the config file are relative to its directory; servers are keyed by their ids
// (mcpconfig.ServerID), their names kept as display names.
func Load(path string, flags map[string]any, mcpConfigs ...string) (Config, error) {
	ko := koanf.New(".")
	defaults, err := defaultsMap()
	if err != nil {
		return Config{}, err
	}
	if err := ko.Load(confmap.Provider(defaults, ""), nil); err != nil {
		return Config{}, fmt.Errorf("config: loading defaults: %w", err)
	}
	hostFrom := "the built-in default"
	if h := ollamaHostFromEnv(); h != "" {
		if err := ko.Set("ollama.host", h); err != nil {
			return Config{}, fmt.Errorf("config: %s: %w", OllamaHostEnv, err)
		}
		hostFrom = "environment variable " + OllamaHostEnv
	}

	var unknown []error
	origins := map[string]origin{} // server id -> where it was defined
	var fileRaw map[string]any
	if path != "" {
		fk := koanf.New(".")
		if err := fk.Load(file.Provider(path), kjson.Parser()); err != nil {
			return Config{}, fmt.Errorf("config: loading config file %s: %w", path, err)
		}
		fileRaw = fk.Raw()
		for _, k := range withoutCallers(unknownKeys(fileRaw)) {
			unknown = append(unknown, unknownKey(fmt.Sprintf("config file %s", path), k))
		}
		if err := prepareFile(fileRaw, path, origins); err != nil {
			return Config{}, fmt.Errorf("config: %w", err)
		}
		if err := ko.Load(confmap.Provider(fileRaw, ""), nil); err != nil {
			return Config{}, fmt.Errorf("config: merging config file %s: %w", path, err)
		}
		if ollama, ok := fileRaw["ollama"].(map[string]any); ok && ollama["host"] != nil {
			hostFrom = "config file " + path
		}
	}

	ek := koanf.New(".")
	vars := map[string]string{} // koanf key -> variable name
	keyVars := keyEnvNames(ko)  // variables holding API keys, not settings
	if err := ek.Load(env.ProviderWithValue(EnvPrefix, ".", func(name, value string) (string, any) {
		if keyVars[name] {
			return "", nil // skipped
		}
		key, val := envKey(name, value)
		if key != "" {
			vars[key] = name
		}
		return key, val
	}), nil); err != nil {
		return Config{}, fmt.Errorf("config: loading environment: %w", err)
	}
	envRaw := ek.Raw()
	for _, k := range withoutCallers(unknownKeys(envRaw)) {
		for key, name := range vars {
			if key == k || strings.HasPrefix(key, k+".") {
				unknown = append(unknown, unknownKey("environment variable "+name, k))
			}
		}
	}
	if name, ok := vars["ollama.host"]; ok {
		hostFrom = "environment variable " + name
	}

	var flagRaw map[string]any
	if len(flags) > 0 {
		if flagRaw, err = confmap.Provider(flags, ".").Read(); err != nil {
			return Config{}, fmt.Errorf("config: reading flags: %w", err)
		}
		for _, k := range withoutCallers(unknownKeys(flagRaw)) {
			unknown = append(unknown, unknownKey("flags", k))
		}
		if _, ok := flags["ollama.host"]; ok {
			hostFrom = "flag -ollama"
		}
	}
	if callers, ok := ko.Raw()["callers"]; ok {
		unknown = append(unknown, callersError(callers))
	} else if callers, ok := envRaw["callers"]; ok {
		unknown = append(unknown, callersError(callers))
	}
	if len(unknown) > 0 {
		return Config{}, fmt.Errorf("config: %w", sortedJoin(unknown))
	}

	if files := append(serversFrom(fileRaw, envRaw), mcpConfigs...); len(files) > 0 {
		layer, replaced, err := mcpServers(files, stringMap(fileRaw["inputs"]), path, origins)
		if err != nil {
			return Config{}, fmt.Errorf("config: %w", err)
		}
		for _, id := range replaced {
			ko.Delete("servers." + id)
		}
		if err := ko.Load(confmap.Provider(map[string]any{"servers": layer}, ""), nil); err != nil {
			return Config{}, fmt.Errorf("config: merging MCP servers: %w", err)
		}
	}
	if err := ko.Load(confmap.Provider(envRaw, ""), nil); err != nil {
		return Config{}, fmt.Errorf("config: merging environment: %w", err)
	}
	if flagRaw != nil {
		if err := ko.Load(confmap.Provider(flagRaw, ""), nil); err != nil {
			return Config{}, fmt.Errorf("config: merging flags: %w", err)
		}
	}
	raw := ko.Raw()
	applyEntryDefaults(raw)
	cfg, err := decode(raw)
	if err != nil {
		return Config{}, err
	}
	for id, o := range origins {
		if s, ok := cfg.Servers[id]; ok {
			if o.name != id {
				s.DisplayName = o.name
			}
			if o.mcp {
				s.Source = o.file
			}
			cfg.Servers[id] = s
		}
	}
	if err := normalizeOllamaHosts(&cfg, hostFrom); err != nil {
		return Config{}, fmt.Errorf("config: invalid configuration:\n%w", err)
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, fmt.Errorf("config: invalid configuration:\n%w", err)
	}
	return cfg, nil
}

// withoutCallers drops the key callers and the keys under it from a list of unknown keys: Load
// reports them once, with the orgs that replace them (callersError).
func withoutCallers(keys []string) []string {
	return slices.DeleteFunc(keys, func(k string) bool { return k == "callers" || strings.HasPrefix(k, "callers.") })
}

// callersError is the error for a configuration that still has the flat callers lists (raw, as
// merged): the migration to orgs, with the orgs for these lists.
func callersError(raw any) error {
	var rules map[string]access.Rules
	if b, err := json.Marshal(raw); err == nil {
		_ = json.Unmarshal(b, &rules) // lists of another shape migrate as none
	}
	return access.CallersError(rules)
}

// keyEnvNames returns the environment variables that auth.keys[*].env name in the configuration
// merged so far: they hold API keys, so the environment layer does not read them as settings.
func keyEnvNames(ko *koanf.Koanf) map[string]bool {
	names := map[string]bool{}
	keys, _ := ko.Get("auth.keys").([]any)
	for _, k := range keys {
		if m, ok := k.(map[string]any); ok {
			if name, ok := m["env"].(string); ok && name != "" {
				names[name] = true
			}
		}
	}
	return names
}

// defaultsMap returns Default() as a koanf map, via its JSON encoding.
func defaultsMap() (map[string]any, error) {
	b, err := json.Marshal(Default())
	if err != nil {
		return nil, fmt.Errorf("config: encoding defaults: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("config: decoding defaults: %w", err)
	}
	return m, nil
}

// decode turns a merged koanf map into a Config and normalises it: option
// numbers are normalised and a missing member list is empty.
func decode(raw map[string]any) (Config, error) {
	ko := koanf.New(".")
	if err := ko.Load(confmap.Provider(raw, ""), nil); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	var cfg Config
	err := ko.UnmarshalWithConf("", &cfg, koanf.UnmarshalConf{
		Tag: "koanf",
		DecoderConfig: &mapstructure.DecoderConfig{
			DecodeHook: mapstructure.ComposeDecodeHookFunc(
				durationHook,
				mapstructure.StringToTimeDurationHookFunc(),
				mapstructure.TextUnmarshallerHookFunc(),
			),
			WeaklyTypedInput: true,
		},
	})
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	for k, v := range cfg.Ollama.Options {
		cfg.Ollama.Options[k] = normalizeNumber(v)
	}
	for i := range cfg.Council.Members {
		normalizeOptions(cfg.Council.Members[i].Options)
	}
	normalizeOptions(cfg.Council.Chairman.Options)
	if cfg.Council.Members == nil {
		cfg.Council.Members = []Member{}
	}
	return cfg, nil
}

func normalizeOptions(opts map[string]any) {
	for k, v := range opts {
		opts[k] = normalizeNumber(v)
	}
}

// secretKeys are key names that would hold a secret; they are refused with
// a pointer to api_key_env rather than as a mere unknown key.
var secretKeys = []string{"api_key", "apikey", "key", "token", "api_token", "secret", "password", "authorization"}

// unknownKey is the error for an unknown key k found in source. A key that
// looks like a secret says where the secret goes instead; the value is never
// shown.
func unknownKey(source, k string) error {
	segs := strings.Split(k, ".")
	if !slices.Contains(secretKeys, strings.ToLower(segs[len(segs)-1])) {
		return fmt.Errorf("%s: unknown key %q", source, k)
	}
	if segs[0] == "auth" {
		return fmt.Errorf("%s: key %q is not allowed: API keys never go in configuration; "+
			"give auth.keys[N].sha256 (the key's SHA-256, as \"toolrouter keys new\" prints it) or auth.keys[N].env (the variable holding the key)", source, k)
	}
	where := "providers.NAME.api_key_env"
	if len(segs) == 3 && segs[0] == "providers" {
		where = "providers." + segs[1] + ".api_key_env"
	}
	return fmt.Errorf("%s: key %q is not allowed: API keys never go in configuration; put the key in an environment variable and name that variable in %q", source, k, where)
}

// envKey maps an environment variable to a koanf key and value:
// TOOLROUTER_ROUTER__REPAIR_ATTEMPTS -> router.repair_attempts. Names are
// lowercased except the keys of servers.<name>.env and .headers. Values
// under ollama.options that look like numbers or booleans are converted.
func envKey(name, value string) (string, any) {
	rest := strings.TrimPrefix(name, EnvPrefix)
	if rest == "" {
		return "", nil
	}
	orig := strings.Split(rest, "__")
	segs := make([]string, len(orig))
	for i, s := range orig {
		segs[i] = strings.ToLower(s)
	}
	var val any = value
	switch {
	case len(segs) >= 4 && segs[0] == "servers" && (segs[2] == "env" || segs[2] == "headers"):
		segs = append(segs[:3], strings.Join(orig[3:], "__"))
	case len(segs) >= 3 && segs[0] == "ollama" && segs[1] == "options":
		segs = append(segs[:2], strings.Join(segs[2:], "__"))
		val = parseScalar(value)
	case len(segs) >= 4 && segs[0] == "council" && segs[1] == "chairman" && segs[2] == "options":
		segs = append(segs[:3], strings.Join(segs[3:], "__"))
		val = parseScalar(value)
	}
	return strings.Join(segs, "."), val
}

// parseScalar converts a numeric or boolean string to int, float64 or bool.
func parseScalar(s string) any {
	if i, err := strconv.Atoi(s); err == nil {
		return i
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	if s == "true" || s == "false" {
		return s == "true"
	}
	return s
}

// normalizeNumber turns whole float64 numbers (as JSON decodes them) into
// int so that options compare and print naturally.
func normalizeNumber(v any) any {
	if f, ok := v.(float64); ok && f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
		return int(f)
	}
	return v
}

// unknownKeys returns the sorted keys of m that Config does not define.
func unknownKeys(m map[string]any) []string {
	var out []string
	walkKeys(m, reflect.TypeOf(Config{}), "", &out)
	slices.Sort(out)
	return out
}

func walkKeys(m map[string]any, t reflect.Type, prefix string, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch t.Kind() {
	case reflect.Struct:
		fields := map[string]reflect.Type{}
		var remain reflect.Type // a ",remain" map takes the keys no field names (servers.NAME.tools.TOOL)
		var collect func(t reflect.Type)
		collect = func(t reflect.Type) {
			for i := range t.NumField() {
				f := t.Field(i)
				tag, opt, _ := strings.Cut(f.Tag.Get("koanf"), ",")
				switch {
				case tag != "" && tag != "-":
					fields[tag] = f.Type
				case opt == "remain":
					remain = f.Type
				case opt == "squash": // an embedded struct whose keys are the parent's (safety's inventory.Checks)
					collect(f.Type)
				}
			}
		}
		collect(t)
		for k, v := range m {
			ft, ok := fields[k]
			if _, isMap := v.(map[string]any); !ok && remain != nil && isMap {
				walkKeys(map[string]any{k: v}, remain, prefix, out)
				continue
			}
			if !ok {
				*out = append(*out, join(k))
				continue
			}
			switch sub := v.(type) {
			case map[string]any:
				walkKeys(sub, ft, join(k), out)
			case []any:
				// Lists of structs (council.members) have fixed fields too.
				if ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct {
					for i, item := range sub {
						if im, ok := item.(map[string]any); ok {
							walkKeys(im, ft.Elem(), fmt.Sprintf("%s[%d]", join(k), i), out)
						}
					}
				}
			}
		}
	case reflect.Map:
		// Maps of structs (servers) have free names but fixed fields;
		// other maps (env, headers, options) are free-form.
		elem := t.Elem()
		for elem.Kind() == reflect.Pointer {
			elem = elem.Elem()
		}
		if elem.Kind() != reflect.Struct {
			return
		}
		for k, v := range m {
			if sub, ok := v.(map[string]any); ok {
				walkKeys(sub, elem, join(k), out)
			}
		}
	}
}

// sortedJoin joins errs sorted by message; nil when errs is empty.
func sortedJoin(errs []error) error {
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}
