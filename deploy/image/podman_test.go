package image_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"toolrouter/deploy/image"
)

// runPodman loads the image with podman load and runs it with podman run as a user would, then
// checks /healthz through the published port, the image's healthcheck command and the process's
// user. Without podman it skips (by hand) or fails (in CI, whose .ci/run installs it).
func runPodman(t *testing.T, b built, id string) {
	podman, err := exec.LookPath("podman")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("podman is missing (.ci/run installs it)")
		}
		t.Skip("podman is not installed (apt-get install podman runc); the rootfs test ran the image's files")
	}
	// runc rather than crun where both are there: crun refuses the hybrid cgroup hierarchy of
	// CI's machine. The lowered ulimits: that machine refuses raising a limit inside a
	// container, which podman's defaults would. No healthcheck timers (they need systemd): the
	// healthcheck command is run with exec below.
	var global []string
	if _, err := exec.LookPath("runc"); err == nil {
		global = []string{"--runtime", "runc"}
	}
	pod := func(args ...string) (string, error) {
		out, err := exec.Command(podman, append(global, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := pod("load", "-i", b.file); err != nil {
		t.Fatalf("podman load: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = pod("rmi", "-f", id) })

	name := fmt.Sprintf("toolrouter-image-test-%d", os.Getpid())
	t.Cleanup(func() { _, _ = pod("rm", "-f", name) })
	run := exec.Command(podman, append(global, "run", "--rm", "--name", name, "--no-healthcheck",
		"--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096",
		"-p", "127.0.0.1::8090", "-e", "TOOLROUTER_AUTH__ALLOW_ANONYMOUS=true", b.tag)...)
	start(t, run)

	addr, err := pod("port", name, "8090/tcp")
	if err != nil {
		t.Fatalf("podman port: %v\n%s", err, addr)
	}
	checkHealthz(t, strings.Fields(addr)[0])
	if out, err := pod("exec", name, image.HealthcheckPath); err != nil {
		t.Errorf("the image's healthcheck: %v\n%s, want exit 0", err, out)
	}
	if out, err := pod("top", name, "huser"); err != nil {
		t.Errorf("podman top: %v\n%s", err, out)
	} else if f := strings.Fields(out); len(f) != 2 || f[1] != fmt.Sprint(image.UID) {
		t.Errorf("the container's process runs as %q, want uid %d", out, image.UID)
	}
}

// syncBuffer keeps a process's log lines for a failure's message.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  strings.Builder
}

func (s *syncBuffer) write(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.WriteString(line)
	s.b.WriteByte('\n')
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
