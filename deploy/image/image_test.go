package image_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"toolrouter/deploy/image"
)

// built is one run of scripts/image: the tarball and what the script printed.
type built struct {
	file, tag, digest string
}

// buildImage runs scripts/image into dir/name, as an operator would.
func buildImage(t *testing.T, dir, name string) built {
	t.Helper()
	out := filepath.Join(dir, name)
	cmd := exec.Command(filepath.Join("..", "..", "scripts", "image"), out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/image: %v\n%s", err, stderr.String())
	}
	f := strings.Fields(lastLine(string(stdout)))
	if len(f) != 3 || f[0] != out || !strings.HasPrefix(f[2], "sha256:") {
		t.Fatalf("scripts/image printed %q, want %q TAG DIGEST", stdout, out)
	}
	return built{file: out, tag: f[1], digest: f[2]}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestImage builds the image twice with scripts/image, checks that both builds have one digest,
// then checks the image's configuration and files, and runs it: from its unpacked root filesystem
// always, and with podman where podman is installed.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds toolrouter and its image")
	}
	dir := t.TempDir()
	first, second := buildImage(t, dir, "a.tar"), buildImage(t, dir, "b.tar")
	if first.digest != second.digest {
		t.Errorf("two builds of one tree: digests %s and %s, want one", first.digest, second.digest)
	}
	img := readArchive(t, first, filepath.Join(dir, "layout"))
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "rootfs")
	files := unpack(t, img, root)
	checkConfig(t, cf)
	checkFiles(t, files)

	t.Run("rootfs", func(t *testing.T) { runRootfs(t, cf, root) })
	id, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("podman", func(t *testing.T) { runPodman(t, first, id.String()) })
}

// readArchive reads the archive both ways a loader may: as an OCI image layout, whose manifest
// has the digest scripts/image printed, and through Docker's manifest.json, which must name the
// same configuration and layers.
func readArchive(t *testing.T, b built, dir string) v1.Image {
	t.Helper()
	f, err := os.Open(b.file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("reading %s: %v", b.file, err)
		}
		dst := filepath.Join(dir, filepath.FromSlash(h.Name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	index, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatalf("%s as an OCI layout: %v", b.file, err)
	}
	im, err := index.IndexManifest()
	if err != nil || len(im.Manifests) == 0 {
		t.Fatalf("%s: index.json: %v, no manifest", b.file, err)
	}
	var names []string
	for _, m := range im.Manifests {
		if got := m.Digest.String(); got != b.digest {
			t.Errorf("%s: the layout's manifest is %s, want %s as scripts/image printed", b.file, got, b.digest)
		}
		names = append(names, m.Annotations["org.opencontainers.image.ref.name"])
	}
	if want := []string{b.tag[strings.LastIndex(b.tag, ":")+1:], "latest"}; !slices.Equal(names, want) {
		t.Errorf("%s: the manifests' ref.names are %q, want %q", b.file, names, want)
	}
	img, err := index.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}

	docker, err := tarball.ImageFromPath(b.file, nil)
	if err != nil {
		t.Fatalf("%s through manifest.json: %v", b.file, err)
	}
	for _, tc := range []struct {
		name string
		get  func(v1.Image) (any, error)
	}{
		{"configuration (the image ID)", func(i v1.Image) (any, error) { return i.ConfigName() }},
		{"layers", func(i v1.Image) (any, error) {
			ls, err := i.Layers()
			var ds []v1.Hash
			for _, l := range ls {
				d, _ := l.Digest()
				ds = append(ds, d)
			}
			return ds, err
		}},
	} {
		got, err1 := tc.get(docker)
		want, err2 := tc.get(img)
		if err := errors.Join(err1, err2); err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: manifest.json gives %v, the OCI layout %v (%v)", tc.name, got, want, err)
		}
	}
	return img
}

// checkConfig checks what docker run and Kubernetes read from the image's configuration.
func checkConfig(t *testing.T, cf *v1.ConfigFile) {
	c := cf.Config
	uid, _, _ := strings.Cut(c.User, ":")
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"entrypoint", c.Entrypoint, []string{image.BinaryPath}},
		{"command", c.Cmd, []string{"serve"}},
		{"user's uid", uid, strconv.Itoa(image.UID)},
		{"working directory", c.WorkingDir, image.DataDir},
		{"exposed ports", c.ExposedPorts, map[string]struct{}{"8090/tcp": {}}},
		{"usage.path in /data", slices.Contains(c.Env, "TOOLROUTER_USAGE__PATH=/data/toolrouter-usage.db"), true},
		{"listens on every interface", slices.Contains(c.Env, "TOOLROUTER_LISTEN=:8090"), true},
		{"healthcheck", c.Healthcheck != nil && slices.Equal(c.Healthcheck.Test, []string{"CMD", image.HealthcheckPath}), true},
		{"os", cf.OS, "linux"},
		{"title label", c.Labels["org.opencontainers.image.title"], "toolrouter"},
		{"created label is the config's time", c.Labels["org.opencontainers.image.created"], cf.Created.UTC().Format(time.RFC3339)},
		{"version label set", c.Labels["org.opencontainers.image.version"] != "", true},
	} {
		if fmt.Sprint(tc.got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if uid == "0" || uid == "root" || uid == "" {
		t.Errorf("user %q: want a non-root user", c.User)
	}
}

// entry is one file of the unpacked image.
type entry struct {
	uid  int
	mode int64
	body []byte
}

// checkFiles checks owners and modes: only /data is the user's, the binaries are not writable by
// it, and the CA bundle is this machine's Debian bundle.
func checkFiles(t *testing.T, files map[string]entry) {
	certs, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if err != nil {
		t.Logf("no CA bundle here to compare with: %v", err)
	}
	for _, tc := range []struct {
		path string
		uid  int
		mode int64
	}{
		{image.DataDir, image.UID, 0o750},
		{"/tmp", 0, 0o1777},
		{image.BinaryPath, 0, 0o555},
		{image.HealthcheckPath, 0, 0o555},
		{image.CACertsPath, 0, 0o644},
		{"/etc/passwd", 0, 0o644},
	} {
		e, ok := files[tc.path]
		switch {
		case !ok:
			t.Errorf("%s: missing from the image", tc.path)
		case e.uid != tc.uid || e.mode != tc.mode:
			t.Errorf("%s: got uid %d mode %o, want uid %d mode %o", tc.path, e.uid, e.mode, tc.uid, tc.mode)
		}
	}
	if certs != nil && !bytes.Equal(files[image.CACertsPath].body, certs) {
		t.Errorf("%s differs from this machine's Debian bundle", image.CACertsPath)
	}
	if want := fmt.Sprintf("nonroot:x:%d:%d:", image.UID, image.UID); !bytes.Contains(files["/etc/passwd"].body, []byte(want)) {
		t.Errorf("/etc/passwd: got %q, want a line starting %q", files["/etc/passwd"].body, want)
	}
}

// unpack extracts the image's layers into root, in order, and returns each entry's owner and
// mode (files also their contents, but for the binaries).
func unpack(t *testing.T, img v1.Image, root string) map[string]entry {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]entry{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("reading a layer: %v", err)
			}
			name := "/" + strings.TrimSuffix(h.Name, "/")
			dst := filepath.Join(root, filepath.FromSlash(name))
			e := entry{uid: h.Uid, mode: h.Mode}
			switch h.Typeflag {
			case tar.TypeDir:
				if err := os.MkdirAll(dst, 0o755); err != nil {
					t.Fatal(err)
				}
			case tar.TypeReg:
				b, err := io.ReadAll(tr)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(dst, b, 0o600); err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(name, "/usr/local/bin/") {
					e.body = b
				}
			default:
				t.Fatalf("%s: unexpected tar entry type %c", name, h.Typeflag)
			}
			files[name] = e
		}
		rc.Close()
	}
	// Modes and owners after every file is in place, so a read-only directory does not stop
	// its own files being written.
	for name, e := range files {
		dst := filepath.Join(root, filepath.FromSlash(name))
		if err := os.Chmod(dst, os.FileMode(e.mode&0o777)|modeBits(e.mode)); err != nil {
			t.Fatal(err)
		}
		if os.Geteuid() == 0 {
			if err := os.Lchown(dst, e.uid, e.uid); err != nil {
				t.Fatal(err)
			}
		}
	}
	return files
}

func modeBits(m int64) os.FileMode {
	var fm os.FileMode
	if m&0o1000 != 0 {
		fm |= os.ModeSticky
	}
	return fm
}

// runRootfs runs the image's entrypoint with its environment, working directory and user,
// chrooted into the unpacked root filesystem; not being root here, it runs the binary in place as
// the current user (the image's user was checked to be non-root above), with /data under root.
// It runs the image's own command, then compose.yaml's with compose.config.json.
func runRootfs(t *testing.T, cf *v1.ConfigFile, root string) {
	c := cf.Config
	const key = "tr_rootfs-test-key-0123456789"
	composeConfig, err := os.ReadFile(filepath.Join("..", "compose.config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "etc", "toolrouter"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc", "toolrouter", "config.json"), composeConfig, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cmd  []string
		env  []string
		// inventory is the status of GET /v1/inventory without a credential, and with key.
		inventory, withKey int
	}{
		{"image command, anonymous", c.Cmd, []string{"TOOLROUTER_AUTH__ALLOW_ANONYMOUS=true"}, http.StatusOK, http.StatusOK},
		// compose.yaml's command and environment; the compose test checks they are these.
		{"compose config", []string{"-config", "/etc/toolrouter/config.json", "serve"}, []string{"TOOLROUTER_API_KEY=" + key}, http.StatusUnauthorized, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := append(slices.Clone(c.Env), "TOOLROUTER_LISTEN=:0")
			env = append(env, tc.env...)
			args := append(slices.Clone(c.Entrypoint), tc.cmd...)
			cmd := &exec.Cmd{Path: args[0], Args: args, Dir: c.WorkingDir, Env: env}
			dbPath := image.DataDir + "/toolrouter-usage.db"
			if os.Geteuid() == 0 {
				uid, gid, err := parseUser(c.User)
				if err != nil {
					t.Fatal(err)
				}
				cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: uid, Gid: gid}}
			} else {
				t.Logf("not root: running %s in place as uid %d", args[0], os.Geteuid())
				cmd.Path = filepath.Join(root, args[0])
				cmd.Dir = filepath.Join(root, c.WorkingDir)
				cmd.Env = append(cmd.Env, "TOOLROUTER_USAGE__PATH="+filepath.Join(root, dbPath))
				cmd.Args = slices.Clone(cmd.Args)
				for i, a := range cmd.Args {
					if strings.HasPrefix(a, "/etc/") {
						cmd.Args[i] = filepath.Join(root, a)
					}
				}
			}
			listen := start(t, cmd)
			_, port, _ := strings.Cut(listen, "]:")
			addr := "127.0.0.1:" + port
			checkHealthz(t, addr)
			for _, r := range []struct {
				auth string
				want int
			}{{"", tc.inventory}, {"Bearer " + key, tc.withKey}} {
				if got := status(t, addr, "/v1/inventory", r.auth); got != r.want {
					t.Errorf("GET /v1/inventory with Authorization %q: got %d, want %d", r.auth, got, r.want)
				}
			}

			fi, err := os.Stat(filepath.Join(root, dbPath))
			if err != nil {
				t.Fatalf("usage database: %v, want it created in %s", err, image.DataDir)
			}
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 && st.Uid != image.UID {
				t.Errorf("usage database owned by uid %d, want %d (the image's user)", st.Uid, image.UID)
			}
		})
	}
	if out, err := exec.Command(filepath.Join(root, image.BinaryPath), "-version").Output(); err != nil {
		t.Errorf("toolrouter -version: %v", err)
	} else if v := c.Labels["org.opencontainers.image.version"]; !strings.HasPrefix(string(out), "toolrouter "+v+" ") {
		t.Errorf("toolrouter -version printed %q, want the label's version %q", out, v)
	}
}

// status is the status of GET path at addr, with an Authorization header unless auth is "".
func status(t *testing.T, addr, path, auth string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func parseUser(user string) (uid, gid uint32, err error) {
	u, g, _ := strings.Cut(user, ":")
	uu, err1 := strconv.ParseUint(u, 10, 32)
	gg, err2 := strconv.ParseUint(g, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, fmt.Errorf("image user %q: want UID:GID: %w", user, err)
	}
	return uint32(uu), uint32(gg), nil
}

// start starts cmd, whose output is toolrouter's log, and returns the address from its "serving"
// line, the signal that it accepts connections. The process is stopped with SIGTERM at the end
// of the test and must exit 0.
func start(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", cmd.Path, err)
	}
	exited := make(chan error, 1)
	go func() { err := cmd.Wait(); pw.Close(); exited <- err }()
	listen, logs := waitServing(pr)
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("%s after SIGTERM: %v, want exit 0\n%s", cmd.Args[0], err, logs())
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("%s did not exit within 20 s of SIGTERM", cmd.Args[0])
		}
	})
	select {
	case l := <-listen:
		return l
	case err := <-exited:
		t.Fatalf("%s exited before serving: %v\n%s", cmd.Args[0], err, logs())
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not log \"serving\" within 60 s\n%s", cmd.Args[0], logs())
	}
	return ""
}

// waitServing reads toolrouter's log lines from r, sends the "serving" line's address once, and
// keeps every line for logs.
func waitServing(r io.Reader) (<-chan string, func() string) {
	listen := make(chan string, 1)
	var buf syncBuffer
	go func() {
		sc := bufio.NewScanner(r)
		sent := false
		for sc.Scan() {
			buf.write(sc.Text())
			var line struct{ Msg, Listen string }
			if !sent && json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving" && line.Listen != "" {
				listen <- line.Listen
				sent = true
			}
		}
		_, _ = io.Copy(io.Discard, r)
	}()
	return listen, buf.String
}

// checkHealthz wants 200 {"status":"ok"} from /healthz at addr.
func checkHealthz(t *testing.T, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /healthz: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"ok"`)) {
		t.Errorf("GET /healthz: got %d %s, want 200 {\"status\":\"ok\"}", resp.StatusCode, body)
	}
}
