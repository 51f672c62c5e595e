// Command toolrouter-image assembles toolrouter's container image without a container engine
// and writes it as a tarball that `docker load` and `podman load` read. scripts/image runs it on
// the binaries scripts/release builds.
//
//	toolrouter-image -binary dist/toolrouter-linux-amd64 -healthcheck dist/toolrouter-healthcheck-linux-amd64 -o toolrouter-image.tar
//
// It prints the archive, the first tag and the image's digest, which is the same for every build
// of one commit.
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"

	"toolrouter/deploy/image"
)

func main() {
	var o image.Options
	flag.StringVar(&o.Binary, "binary", "", "toolrouter, built for linux with CGO_ENABLED=0 (required)")
	flag.StringVar(&o.Healthcheck, "healthcheck", "", "toolrouter-healthcheck, built the same way (required)")
	flag.StringVar(&o.CACerts, "ca-certs", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle of Debian's ca-certificates package")
	flag.StringVar(&o.CACertsVersion, "ca-certs-version", "", "the ca-certificates package's version, recorded in the image's history")
	out := flag.String("o", "toolrouter-image.tar", "the tarball to write")
	var tags tagList
	flag.Var(&tags, "tag", "a tag for the image, repeatable (default toolrouter:VERSION, VERSION from the binary, and toolrouter:latest)")
	flag.Parse()
	if o.Binary == "" || o.Healthcheck == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(o, *out, tags); err != nil {
		fmt.Fprintln(os.Stderr, "toolrouter-image:", err)
		os.Exit(1)
	}
}

func run(o image.Options, out string, tags []string) error {
	img, err := image.Build(o)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	if len(tags) == 0 {
		tags = []string{"toolrouter:" + tagOf(cf.Config.Labels["org.opencontainers.image.version"]), "toolrouter:latest"}
	}
	if err := image.Write(out, tags, img); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s %s %s\n", out, tags[0], digest)
	return nil
}

// tagList is the repeatable -tag flag.
type tagList []string

func (l *tagList) String() string     { return strings.Join(*l, ",") }
func (l *tagList) Set(s string) error { *l = append(*l, s); return nil }

// tagOf makes a version a valid tag: "+" (of "+dirty") and other characters a tag may not hold
// become "-"; "(devel)" becomes "devel".
func tagOf(version string) string {
	t := regexp.MustCompile(`[^A-Za-z0-9_.-]+`).ReplaceAllString(version, "-")
	t = regexp.MustCompile(`^[-.]+|-+$`).ReplaceAllString(t, "")
	if t == "" {
		return "devel"
	}
	if len(t) > 128 {
		t = t[:128]
	}
	return t
}
