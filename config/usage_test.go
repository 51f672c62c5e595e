package config

import (
	"os"
	"path/filepath"
	"testing"
)

func TestValidateUsage(t *testing.T) {
	const noPassword = "usage.postgres_url: must not hold a password: set it in the PGPASSWORD environment variable or a password file (PGPASSFILE)"
	checkValidation(t, []validationCase{
		{"queue size zero", func(c *Config) { c.Usage.QueueSize = 0 }, "usage.queue_size", "usage.queue_size: must be > 0, got 0"},
		{"batch over the queue", func(c *Config) { c.Usage.BatchSize = c.Usage.QueueSize + 1 }, "usage.batch_size",
			"usage.batch_size: must be between 1 and usage.queue_size (4096), got 4097"},
		{"flush interval zero", func(c *Config) { c.Usage.FlushInterval = 0 }, "usage.flush_interval", "usage.flush_interval: must be > 0, got 0s"},
		{"write timeout zero", func(c *Config) { c.Usage.WriteTimeout = 0 }, "usage.write_timeout", "usage.write_timeout: must be > 0, got 0s"},
		{"negative retention", func(c *Config) { c.Usage.Retention = d("-1h") }, "usage.retention", "usage.retention: must be >= 0 (0 keeps records forever), got -1h0m0s"},
		{"path with a query", func(c *Config) { c.Usage.Path = "u.db?mode=ro" }, "usage.path", `usage.path: must not contain '?', got "u.db?mode=ro"`},
		{"URL of another scheme", func(c *Config) { c.Usage.PostgresURL = "mysql://db/usage" }, "usage.postgres_url",
			`usage.postgres_url: must be a postgres:// or postgresql:// URL, got scheme "mysql"`},
		{"password in the URL", func(c *Config) { c.Usage.PostgresURL = "postgres://u:secret@db/usage" }, "usage.postgres_url", noPassword},
		{"password in the URL's query", func(c *Config) { c.Usage.PostgresURL = "postgres://u@db/usage?password=secret" }, "usage.postgres_url", noPassword},
		{"password in a key=value string", func(c *Config) { c.Usage.PostgresURL = "host=db user=u password=secret" }, "usage.postgres_url", noPassword},
	})
	t.Run("off checks nothing else", func(t *testing.T) {
		c := Default()
		c.Usage = Usage{}
		if err := c.Validate(); err != nil {
			t.Errorf("Validate(): got %v, want nil", err)
		}
	})
	t.Run("PostgreSQL without a password", func(t *testing.T) {
		for _, dsn := range []string{"postgres://u@db:5432/usage?sslmode=verify-full", "host=db user=u dbname=passwords"} {
			c := Default()
			c.Usage.PostgresURL = dsn
			if err := c.Validate(); err != nil {
				t.Errorf("Validate() with %q: got %v, want nil", dsn, err)
			}
		}
	})
}

// besideFile is Default() as Load gives it for the config file at path when the file does not
// name usage.path: the usage database beside the file.
func besideFile(t *testing.T, path string) Config {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	c := Default()
	c.Usage.Path = filepath.Join(filepath.Dir(abs), c.Usage.Path)
	return c
}

// TestUsagePath: the usage database is beside the config file by default, a relative
// usage.path in the file is taken from the file's directory, one from the environment from the
// working directory, and without a config file the default is in the working directory.
func TestUsagePath(t *testing.T) {
	dir := t.TempDir()
	abs := filepath.Join(t.TempDir(), "elsewhere.db")
	tests := []struct {
		name, file, env, want string
		noFile                bool
	}{
		{name: "default, beside the file", file: `{}`, want: filepath.Join(dir, "toolrouter-usage.db")},
		{name: "default, usage section without a path", file: `{"usage": {"queue_size": 10, "batch_size": 5}}`, want: filepath.Join(dir, "toolrouter-usage.db")},
		{name: "relative in the file", file: `{"usage": {"path": "data/u.db"}}`, want: filepath.Join(dir, "data/u.db")},
		{name: "absolute in the file", file: `{"usage": {"path": "` + abs + `"}}`, want: abs},
		{name: "off in the file", file: `{"usage": {"path": ""}}`, want: ""},
		{name: "relative in the environment", file: `{}`, env: "u.db", want: "u.db"},
		{name: "no config file", noFile: true, want: "toolrouter-usage.db"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			if tc.env != "" {
				t.Setenv("TOOLROUTER_USAGE__PATH", tc.env)
			}
			path := ""
			if !tc.noFile {
				path = filepath.Join(dir, "config.json")
				if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			c, err := Load(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if c.Usage.Path != tc.want {
				t.Errorf("usage.path: got %q, want %q", c.Usage.Path, tc.want)
			}
		})
	}
}
