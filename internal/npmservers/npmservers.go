// Package npmservers installs the MCP reference servers, the MCP Inspector and the openai client from
// the npm registry (pinned in examples/npm/package-lock.json) for tests, once per machine, and says where their entry points are.
package npmservers

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// skipMessage is why a test that needs the reference servers is skipped on a machine without Node.js.
const skipMessage = "node not found: the npm reference-server tests need Node.js; .ci/run installs it"

// Dir returns examples/npm, installing its node_modules with `npm ci` if any package is missing. Test
// packages running in parallel serialise on a file lock. It skips the test when node is missing
// (.ci/run installs it, so CI runs these tests); a failed install fails the test.
func Dir(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "examples", "npm")
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(skipMessage + " (CI=true: failing instead of skipping)")
		}
		t.Skip(skipMessage)
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".install.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatalf("opening install lock: %v", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatalf("locking %s: %v", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if installed(dir) {
		return dir
	}
	if _, err := exec.LookPath("npm"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("npm not found (CI=true): installing the npm reference servers and the MCP Inspector needs npm")
		}
		t.Skip("npm not found: installing the npm reference servers needs npm; .ci/run installs it")
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
	return dir
}

// installed reports whether every dependency of dir's package.json is in its node_modules.
func installed(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return false
	}
	var pkg struct{ Dependencies map[string]string }
	if json.Unmarshal(b, &pkg) != nil || len(pkg.Dependencies) == 0 {
		return false
	}
	for name := range pkg.Dependencies {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", name, "package.json")); err != nil {
			return false
		}
	}
	return true
}

// Entry is the script node runs for the named reference server ("everything", "filesystem", "memory").
func Entry(dir, name string) string {
	return filepath.Join(dir, "node_modules", "@modelcontextprotocol", fmt.Sprintf("server-%s", name), "dist", "index.js")
}

// Inspector is the script node runs for the MCP Inspector's command line (`mcp-inspector --cli`).
func Inspector(dir string) string {
	return filepath.Join(dir, "node_modules", "@modelcontextprotocol", "inspector", "clients", "cli", "build", "index.js")
}
