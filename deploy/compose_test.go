package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"

	"toolrouter/deploy/image"
)

// composeEnv is what an operator exports before docker compose up.
var composeEnv = map[string]string{
	"POSTGRES_PASSWORD":  "pg-secret-from-the-environment",
	"TOOLROUTER_API_KEY": "tr_compose-test-key-0123456789",
}

// loadCompose loads compose.yaml as docker compose does, with env as the only environment.
func loadCompose(t *testing.T, env map[string]string) (*types.Project, error) {
	t.Helper()
	var list []string
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	opts, err := cli.NewProjectOptions([]string{"compose.yaml"}, cli.WithWorkingDirectory("."), cli.WithEnv(list))
	if err != nil {
		t.Fatal(err)
	}
	return opts.LoadProject(context.Background())
}

func TestComposeServices(t *testing.T) {
	p, err := loadCompose(t, composeEnv)
	if err != nil {
		t.Fatalf("loading compose.yaml: %v", err)
	}
	if got, want := p.ServiceNames(), []string{"ollama", "ollama-pull", "postgres", "redis", "toolrouter"}; !slices.Equal(sorted(got), want) {
		t.Fatalf("services: got %v, want %v", got, want)
	}

	// Every service that runs on has a healthcheck; the model pull is a job and has none.
	for name, s := range p.Services {
		t.Run("healthcheck/"+name, func(t *testing.T) {
			hc := s.HealthCheck
			if name == "ollama-pull" {
				if s.Restart != "no" {
					t.Errorf("restart: got %q, want \"no\" (it runs once)", s.Restart)
				}
				return
			}
			if hc == nil || hc.Disable || len(hc.Test) < 2 || hc.Test[0] != "CMD" || hc.Interval == nil || hc.Retries == nil {
				t.Errorf("healthcheck: got %+v, want a CMD test with an interval and retries", hc)
			}
		})
	}

	// depends_on waits on what each dependency offers: health, or the job's success.
	for _, tc := range []struct{ service, on, condition string }{
		{"ollama-pull", "ollama", types.ServiceConditionHealthy},
		{"toolrouter", "ollama", types.ServiceConditionHealthy},
		{"toolrouter", "ollama-pull", types.ServiceConditionCompletedSuccessfully},
		{"toolrouter", "redis", types.ServiceConditionHealthy},
		{"toolrouter", "postgres", types.ServiceConditionHealthy},
	} {
		t.Run("depends_on/"+tc.service+"/"+tc.on, func(t *testing.T) {
			d, ok := p.Services[tc.service].DependsOn[tc.on]
			if !ok || d.Condition != tc.condition {
				t.Errorf("%s depends_on %s: got %+v (present %v), want condition %s", tc.service, tc.on, d, ok, tc.condition)
			}
			if tc.condition == types.ServiceConditionHealthy && p.Services[tc.on].HealthCheck == nil {
				t.Errorf("%s waits for %s to be healthy, which has no healthcheck", tc.service, tc.on)
			}
		})
	}

	// Every volume is a named volume the file declares, so data outlives the containers.
	for name, s := range p.Services {
		for _, v := range s.Volumes {
			if _, declared := p.Volumes[v.Source]; v.Type != types.VolumeTypeVolume || !declared {
				t.Errorf("%s: volume %s:%s is not a declared named volume", name, v.Source, v.Target)
			}
		}
	}
}

// TestComposeWiring checks that toolrouter's environment names the other services as they are
// configured: hosts, ports, the model pulled, the database's user, name and password, the key.
func TestComposeWiring(t *testing.T) {
	p, err := loadCompose(t, composeEnv)
	if err != nil {
		t.Fatalf("loading compose.yaml: %v", err)
	}
	tr, pg, pull := p.Services["toolrouter"], p.Services["postgres"], p.Services["ollama-pull"]
	env := func(s types.ServiceConfig, k string) string {
		if v := s.Environment[k]; v != nil {
			return *v
		}
		return ""
	}
	ollamaURL := parseURL(t, env(tr, "TOOLROUTER_OLLAMA__HOST"))
	redisURL := parseURL(t, env(tr, "TOOLROUTER_LIMITS__REDIS_URL"))
	pgURL := parseURL(t, env(tr, "TOOLROUTER_USAGE__POSTGRES_URL"))
	pgPassword, pgHasPassword := pgURL.User.Password()

	var cfg struct {
		HTTP struct {
			AllowedHosts []string `json:"allowed_hosts"`
		} `json:"http"`
		Auth struct {
			Keys []struct{ Env string } `json:"keys"`
		} `json:"auth"`
	}
	configFile := p.Configs[tr.Configs[0].Source].File
	b, err := os.ReadFile(configFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("%s: %v", configFile, err)
	}

	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"ollama host is the ollama service", ollamaURL.Host, "ollama:11434"},
		{"the model pulled is the model served", pull.Entrypoint[len(pull.Entrypoint)-1], env(tr, "TOOLROUTER_OLLAMA__MODEL")},
		{"the pull asks the ollama service", env(pull, "OLLAMA_HOST"), ollamaURL.String()},
		{"redis URL is the redis service", redisURL.Scheme + "://" + redisURL.Host, "redis://redis:6379"},
		{"postgres URL is the postgres service", pgURL.Scheme + "://" + pgURL.Host, "postgres://postgres:5432"},
		{"postgres user", pgURL.User.Username(), env(pg, "POSTGRES_USER")},
		{"postgres database", strings.TrimPrefix(pgURL.Path, "/"), env(pg, "POSTGRES_DB")},
		{"no password in the URL (toolrouter refuses one)", pgHasPassword || pgPassword != "", false},
		{"PGPASSWORD is the database's password", env(tr, "PGPASSWORD"), env(pg, "POSTGRES_PASSWORD")},
		{"the database's password comes from the environment", env(pg, "POSTGRES_PASSWORD"), composeEnv["POSTGRES_PASSWORD"]},
		{"the callers' key comes from the environment", env(tr, "TOOLROUTER_API_KEY"), composeEnv["TOOLROUTER_API_KEY"]},
		{"the config's key reads that variable", len(cfg.Auth.Keys) > 0 && cfg.Auth.Keys[0].Env == "TOOLROUTER_API_KEY", true},
		{"the service's name is an allowed Host", slices.Contains(cfg.HTTP.AllowedHosts, "toolrouter:8090"), true},
		{"command reads the mounted config", []string(tr.Command), []string{"-config", tr.Configs[0].Target, "serve"}},
		{"config mounted where the image tests it", tr.Configs[0].Target, "/etc/toolrouter/config.json"},
		{"config file", filepath.Base(configFile), "compose.config.json"},
		{"healthcheck runs the image's probe", []string(tr.HealthCheck.Test), []string{"CMD", image.HealthcheckPath}},
		{"published port", portsOf(tr), []string{"127.0.0.1:8090->8090"}},
		{"data volume at the image's /data", volumeAt(tr, image.DataDir), "toolrouter"},
		{"root filesystem read-only", tr.ReadOnly, true},
		{"a writable /tmp", []string(tr.Tmpfs), []string{"/tmp"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !equal(tc.got, tc.want) {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

// TestComposeRequiresSecrets: without the password or the key, compose refuses to start and
// says which variable is missing, rather than starting with an empty one.
func TestComposeRequiresSecrets(t *testing.T) {
	for _, missing := range []string{"POSTGRES_PASSWORD", "TOOLROUTER_API_KEY"} {
		t.Run(missing, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range composeEnv {
				if k != missing {
					env[k] = v
				}
			}
			_, err := loadCompose(t, env)
			if err == nil || !strings.Contains(err.Error(), missing) {
				t.Errorf("without %s: got error %v, want one naming it", missing, err)
			}
		})
	}
}

func parseURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		t.Fatalf("URL %q: %v, want scheme://host:port", s, err)
	}
	return u
}

func portsOf(s types.ServiceConfig) []string {
	var out []string
	for _, p := range s.Ports {
		out = append(out, net.JoinHostPort(p.HostIP, p.Published)+"->"+itoa(p.Target))
	}
	return out
}

func volumeAt(s types.ServiceConfig, target string) string {
	for _, v := range s.Volumes {
		if v.Target == target {
			return v.Source
		}
	}
	return ""
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

func itoa(n uint32) string { return strconv.FormatUint(uint64(n), 10) }

// equal compares as the failure message prints.
func equal(a, b any) bool { return fmt.Sprint(a) == fmt.Sprint(b) }
