// Package systemd tests toolrouter.service: its hardening and state directory, and that
// systemd-analyze accepts it where systemd-analyze is installed.
package systemd

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// unit reads toolrouter.service as SECTION.KEY → values, in order.
func unit(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open("toolrouter.service")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("toolrouter.service: %q is not KEY=VALUE", line)
			}
			u[section+"."+k] = append(u[section+"."+k], v)
		}
	}
	return u
}

func TestUnitHardening(t *testing.T) {
	u := unit(t)
	for _, tc := range []struct{ key, want string }{
		{"Service.DynamicUser", "yes"},
		{"Service.StateDirectory", "toolrouter"},
		{"Service.WorkingDirectory", "/var/lib/toolrouter"},
		{"Service.Environment", "TOOLROUTER_USAGE__PATH=/var/lib/toolrouter/toolrouter-usage.db"},
		{"Service.ProtectSystem", "strict"},
		{"Service.ProtectHome", "yes"},
		{"Service.NoNewPrivileges", "yes"},
		{"Service.PrivateTmp", "yes"},
		{"Service.PrivateDevices", "yes"},
		{"Service.CapabilityBoundingSet", ""},
		{"Service.RestrictAddressFamilies", "AF_INET AF_INET6 AF_UNIX"},
		{"Service.SystemCallFilter", "@system-service"},
		{"Service.ExecReload", "/bin/kill -HUP $MAINPID"},
		{"Service.ExecStart", "/usr/local/bin/toolrouter -config /etc/toolrouter/config.json serve"},
		{"Install.WantedBy", "multi-user.target"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			if got := u[tc.key]; !slices.Contains(got, tc.want) {
				t.Errorf("%s: got %q, want %q among them", tc.key, got, tc.want)
			}
		})
	}
	t.Run("stop timeout outlasts the drain", func(t *testing.T) {
		d, err := time.ParseDuration(u["Service.TimeoutStopSec"][0])
		if err != nil || d <= 10*time.Second {
			t.Errorf("TimeoutStopSec %v (%v): want more than http.shutdown_timeout's 10 s", u["Service.TimeoutStopSec"], err)
		}
	})
}

// TestSystemdAnalyze runs systemd-analyze verify and, where systemd can judge a unit file
// offline (250 and later), its security exposure, which must stay at most 2.0 ("OK"). The
// binary is not installed here, so a copy of the unit runs this test's own executable instead.
func TestSystemdAnalyze(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("toolrouter.service")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "toolrouter.service")
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(string(b), "/usr/local/bin/toolrouter", self)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"verify", []string{"verify", file}},
		{"security", []string{"security", "--offline=yes", "--threshold=20", file}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := exec.Command(analyze, tc.args...).CombinedOutput()
			if tc.name == "security" && strings.Contains(string(out), "unrecognized option") {
				t.Skipf("this systemd-analyze cannot judge a unit offline: %s", out)
			}
			if err != nil {
				t.Errorf("systemd-analyze %s: %v\n%s", strings.Join(tc.args, " "), err, out)
			}
		})
	}
}
