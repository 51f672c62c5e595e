// Package image assembles toolrouter's OCI image without a container engine: the static
// toolrouter binary and its healthcheck probe, Debian's CA certificates, a non-root user and a
// writable /data, with the configuration operators expect (entrypoint, user, environment, port,
// labels). Every byte of the image depends only on its inputs: file times are the commit's time,
// owners are numbers, entries are in a fixed order, so two builds of one commit have one digest.
//
// It does not build the binaries (scripts/release does) nor run the image (the tests do).
package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Where things are in the image, and whom it runs as.
const (
	BinaryPath      = "/usr/local/bin/toolrouter"
	HealthcheckPath = "/usr/local/bin/toolrouter-healthcheck"
	CACertsPath     = "/etc/ssl/certs/ca-certificates.crt"
	DataDir         = "/data"
	UID             = 65532 // the "nonroot" user of distroless images, so volumes move between them
	Port            = 8090
)

// Env is the image's environment: toolrouter listens on every interface (it then refuses to start
// until callers can authenticate, or auth.allow_anonymous says anyone may) and keeps its SQLite
// usage records in the writable /data.
var Env = []string{
	"PATH=/usr/local/bin",
	"TOOLROUTER_LISTEN=:" + strconv.Itoa(Port),
	"TOOLROUTER_USAGE__PATH=" + DataDir + "/toolrouter-usage.db",
}

// Options name the image's inputs, files on the building machine.
type Options struct {
	Binary      string // toolrouter, built for linux with CGO_ENABLED=0
	Healthcheck string // toolrouter-healthcheck, built the same way
	CACerts     string // Debian's bundle: /etc/ssl/certs/ca-certificates.crt of package ca-certificates
	// CACertsVersion is the ca-certificates package's version, named in the base layer's
	// history; "" leaves it out.
	CACertsVersion string
}

// Build assembles the image: a base layer (users, certificates, /data, /tmp) and a layer with
// the two binaries. Version, revision, time and architecture come from the binary's own build
// information, so the labels say what `toolrouter -version` says.
func Build(o Options) (v1.Image, error) {
	info, err := buildinfo.ReadFile(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("reading the binary's build information: %w", err)
	}
	meta := metadataOf(info)
	if meta.goos != "linux" {
		return nil, fmt.Errorf("%s is built for %s, want linux", o.Binary, meta.goos)
	}
	if meta.cgo {
		return nil, fmt.Errorf("%s is built with cgo: build it with CGO_ENABLED=0 so it runs without a C library", o.Binary)
	}

	certs, err := os.ReadFile(o.CACerts)
	if err != nil {
		return nil, fmt.Errorf("reading the CA certificates: %w", err)
	}
	base := newLayer(meta.created)
	base.dir("/etc", 0, 0o755)
	base.file("/etc/group", 0, 0o644, []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", UID)))
	base.file("/etc/passwd", 0, 0o644, []byte(fmt.Sprintf(
		"root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:%s:/sbin/nologin\n", UID, UID, DataDir)))
	base.dir("/etc/ssl", 0, 0o755)
	base.dir("/etc/ssl/certs", 0, 0o755)
	base.file(CACertsPath, 0, 0o644, certs)
	base.dir(DataDir, UID, 0o750)
	base.dir("/tmp", 0, 0o1777)

	app := newLayer(meta.created)
	app.dir("/usr", 0, 0o755)
	app.dir("/usr/local", 0, 0o755)
	app.dir("/usr/local/bin", 0, 0o755)
	for _, f := range []struct{ from, to string }{{o.Binary, BinaryPath}, {o.Healthcheck, HealthcheckPath}} {
		b, err := os.ReadFile(f.from)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", f.from, err)
		}
		app.file(f.to, 0, 0o555, b)
	}

	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	for _, l := range []struct {
		layer *layer
		by    string
	}{
		{base, strings.TrimSpace("users root and nonroot, /data, /tmp, Debian's CA certificates " + o.CACertsVersion)},
		{app, "toolrouter " + meta.version + " and its healthcheck"},
	} {
		tl, err := l.layer.v1()
		if err != nil {
			return nil, err
		}
		img, err = mutate.Append(img, mutate.Addendum{
			Layer:     tl,
			MediaType: types.OCILayer,
			History:   v1.History{Created: v1.Time{Time: meta.created}, CreatedBy: l.by, Comment: "toolrouter/deploy/image"},
		})
		if err != nil {
			return nil, fmt.Errorf("adding a layer: %w", err)
		}
	}

	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Variant = meta.goarch, "linux", meta.variant
	cf.Created = v1.Time{Time: meta.created}
	cf.Config = Config(meta.version, meta.revision, meta.created)
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("setting the configuration: %w", err)
	}
	return img, nil
}

// Config is the image's configuration: what docker run, podman run and Kubernetes read from it.
// The Dockerfile sets the same (its test compares).
func Config(version, revision string, created time.Time) v1.Config {
	return v1.Config{
		Entrypoint:   []string{BinaryPath},
		Cmd:          []string{"serve"},
		User:         fmt.Sprintf("%d:%d", UID, UID),
		WorkingDir:   DataDir,
		Env:          slices.Clone(Env),
		ExposedPorts: map[string]struct{}{strconv.Itoa(Port) + "/tcp": {}},
		Volumes:      map[string]struct{}{DataDir: {}},
		StopSignal:   "SIGTERM",
		Labels:       Labels(version, revision, created),
		Healthcheck: &v1.HealthConfig{
			Test:     []string{"CMD", HealthcheckPath},
			Interval: 10 * time.Second, Timeout: 3 * time.Second, StartPeriod: 30 * time.Second, Retries: 3,
		},
	}
}

// Labels are the image's org.opencontainers.image.* annotations.
func Labels(version, revision string, created time.Time) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       "toolrouter",
		"org.opencontainers.image.description": "Gives a council of language models the use of MCP tools: an HTTP sidecar next to Ollama",
		"org.opencontainers.image.version":     version,
		"org.opencontainers.image.created":     created.UTC().Format(time.RFC3339),
	}
	if revision != "" {
		l["org.opencontainers.image.revision"] = revision
	}
	return l
}

// Write writes img to file as an archive that `docker load` and `podman load` read, with its tags
// (toolrouter:VERSION, toolrouter:latest): an OCI image layout (oci-layout, index.json, blobs/sha256/) that keeps the
// image's manifest and so its digest, plus the manifest.json older Docker releases read, pointing
// at the same blobs; the layout `docker save` has written since Docker 25. Entries are in a fixed
// order with fixed times, so the same image gives the same file.
func Write(file string, tags []string, img v1.Image) error {
	var refs []name.Tag
	for _, tag := range tags {
		ref, err := name.NewTag(tag)
		if err != nil {
			return fmt.Errorf("tag %q: %w", tag, err)
		}
		refs = append(refs, ref)
	}
	if len(refs) == 0 {
		return errors.New("no tag")
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := writeArchive(f, refs, img); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", file, err)
	}
	return f.Close()
}

func writeArchive(w io.Writer, refs []name.Tag, img v1.Image) error {
	manifest, err := img.RawManifest()
	if err != nil {
		return err
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	desc, err := partial.Descriptor(img)
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	desc.ArtifactType = "" // docker save writes none; the manifest names its config already
	index := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex}
	var repoTags []string
	for _, ref := range refs {
		registry := ref.RegistryStr()
		if registry == name.DefaultRegistry {
			registry = "docker.io" // as containerd names Docker Hub's images
		}
		d := *desc
		d.Annotations = map[string]string{
			"io.containerd.image.name":          registry + "/" + ref.RepositoryStr() + ":" + ref.TagStr(),
			"org.opencontainers.image.ref.name": ref.TagStr(),
		}
		index.Manifests = append(index.Manifests, d)
		repoTags = append(repoTags, ref.String())
	}
	indexJSON, err := json.Marshal(index)
	if err != nil {
		return err
	}
	type dockerManifest struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	dm := dockerManifest{Config: blobPath(config), RepoTags: repoTags}

	tw := tar.NewWriter(w)
	epoch := time.Unix(0, 0)
	put := func(name string, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: epoch}); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	if err := put("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := put("index.json", indexJSON); err != nil {
		return err
	}
	if err := put(blobPath(manifest), manifest); err != nil {
		return err
	}
	if err := put(blobPath(config), config); err != nil {
		return err
	}
	for _, l := range layers {
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return err
		}
		dm.Layers = append(dm.Layers, blobPath(b))
		if err := put(blobPath(b), b); err != nil {
			return err
		}
	}
	dms, err := json.Marshal([]dockerManifest{dm})
	if err != nil {
		return err
	}
	if err := put("manifest.json", dms); err != nil {
		return err
	}
	return tw.Close()
}

// blobPath is where the OCI layout keeps a blob.
func blobPath(b []byte) string {
	return fmt.Sprintf("blobs/sha256/%x", sha256.Sum256(b))
}

// metadata is what the image says about the binary in it.
type metadata struct {
	version, revision     string
	created               time.Time
	goos, goarch, variant string
	cgo                   bool
}

// metadataOf reads the binary's build information. A binary without VCS information (built
// with -buildvcs=false, or outside a checkout) gets the Unix epoch as its time, or
// SOURCE_DATE_EPOCH when set: a time that does not change between two builds.
func metadataOf(info *buildinfo.BuildInfo) metadata {
	m := metadata{version: info.Main.Version, created: sourceDateEpoch()}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			m.revision = s.Value
		case "vcs.time":
			if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
				m.created = t.UTC()
			}
		case "GOOS":
			m.goos = s.Value
		case "GOARCH":
			m.goarch = s.Value
		case "GOARM64":
			m.variant = "v8" // image-spec's only arm64 variant in common use
		case "CGO_ENABLED":
			m.cgo = s.Value == "1"
		}
	}
	if m.version == "" {
		m.version = "(devel)"
	}
	return m
}

// sourceDateEpoch is SOURCE_DATE_EPOCH (reproducible-builds.org) as a time, or the Unix epoch.
func sourceDateEpoch() time.Time {
	if s, err := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64); err == nil {
		return time.Unix(s, 0).UTC()
	}
	return time.Unix(0, 0).UTC()
}

// layer is a tar stream written in the order its entries are added, each with the same time
// and numeric owners only.
type layer struct {
	buf   bytes.Buffer
	tw    *tar.Writer
	mtime time.Time
	err   error
}

func newLayer(mtime time.Time) *layer {
	l := &layer{mtime: mtime}
	l.tw = tar.NewWriter(&l.buf)
	return l
}

func (l *layer) dir(name string, uid int, mode int64) {
	l.add(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(name, "/") + "/", Mode: mode, Uid: uid, Gid: uid}, nil)
}

func (l *layer) file(name string, uid int, mode int64, body []byte) {
	l.add(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(path.Clean(name), "/"), Mode: mode, Uid: uid, Gid: uid, Size: int64(len(body))}, body)
}

func (l *layer) add(h *tar.Header, body []byte) {
	if l.err != nil {
		return
	}
	h.ModTime = l.mtime
	if l.err = l.tw.WriteHeader(h); l.err == nil && body != nil {
		_, l.err = l.tw.Write(body)
	}
}

// v1 closes the tar stream and compresses it (gzip's header carries no time or name, so the
// same tar gives the same bytes).
func (l *layer) v1() (v1.Layer, error) {
	if l.err == nil {
		l.err = l.tw.Close()
	}
	if l.err != nil {
		return nil, fmt.Errorf("writing a layer: %w", l.err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(l.buf.Bytes()); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	compressed := gz.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(compressed)), nil
	}, tarball.WithMediaType(types.OCILayer))
}
